/**
 * What a Kafka test measured, left in its report (vitest's JSON reporter keeps `meta`): the
 * compatibility matrix's figures, from which `npm run compat:table` writes the README's table.
 */
declare module "vitest" {
  interface TaskMeta {
    figures?: Record<string, string | number>;
  }
}

export {};
