import * as z from "zod";
import { type InputProblem, pointer, type Validated, validateWith } from "./problems.ts";

/**
 * What one run hands to the next (SPEC §4): per broker inside a gating episode its gate entry, and
 * whether the last run was capped, for the throttle.
 */

export const GateEntry = z
  .object({
    id: z.number().int().min(0).max(2_147_483_647),
    gatedSinceMs: z.number().int().min(0).describe("When this gating episode started"),
    clearRuns: z
      .number()
      .int()
      .min(0)
      .max(1)
      .describe("Consecutive runs under the threshold; the entry ends when this reaches 2"),
  })
  .meta({ id: "GateEntry" });
export type GateEntry = z.infer<typeof GateEntry>;

export const PacerState = z
  .object({
    brokers: z.array(GateEntry).describe("Brokers inside a gating episode, in ascending id"),
    lastRunAtMs: z.number().int().min(0).nullable().describe("When the last (not deferred) run happened"),
    lastRunCapped: z.boolean().describe("Whether the last run filled max.per.run"),
  })
  .meta({ id: "PacerState" });
export type PacerState = z.infer<typeof PacerState>;

export const INITIAL_STATE: PacerState = { brokers: [], lastRunAtMs: null, lastRunCapped: false };

export function validateState(input: unknown, base = ""): Validated<PacerState> {
  const shaped = validateWith(PacerState, input, base);
  if (!shaped.ok) return shaped;
  const problems: InputProblem[] = [];
  const seen = new Set<number>();
  shaped.value.brokers.forEach((entry, i) => {
    if (seen.has(entry.id))
      problems.push({ pointer: pointer(base, "brokers", i, "id"), detail: "duplicate broker id" });
    seen.add(entry.id);
  });
  return problems.length === 0 ? shaped : { ok: false, problems };
}
