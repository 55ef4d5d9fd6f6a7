/**
 * How each Lambda is bundled: one ESM file per handler, minified, with the AWS SDK inside (a pinned,
 * tree-shaken version rather than the runtime's). The stack and the size benchmark both use this.
 */
export const BUNDLE = {
  format: "esm" as const,
  target: "node20",
  minify: true,
  sourcemap: true,
  mainFields: ["module", "main"],
  /** Some dependencies still call require(); an ESM bundle needs it defined. */
  banner:
    "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
};

export const LAMBDA_HANDLERS = {
  Api: "lambda-http.ts",
  Tick: "lambda-tick.ts",
  Worker: "lambda-worker.ts",
} as const;
