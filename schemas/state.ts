import * as z from "zod";
import { BROKER_ID_RULE, isBrokerId, isInt, isObject, MAX_BROKER_ID, problemList } from "./checks.ts";
import { MAX_LISTED_PROBLEMS, pointer, type Validated } from "./problems.ts";
import { MAX_BROKERS } from "./snapshot.ts";

/**
 * What one run hands to the next (SPEC §4): per broker inside a gating episode its gate entry, and
 * whether the last run was capped, for the throttle.
 */

export const GateEntry = z
  .object({
    id: z.number().int().min(0).max(MAX_BROKER_ID),
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
    brokers: z.array(GateEntry).max(MAX_BROKERS).describe("Brokers inside a gating episode, in ascending id"),
    lastRunAtMs: z.number().int().min(0).nullable().describe("When the last (not deferred) run happened"),
    lastRunCapped: z.boolean().describe("Whether the last run filled max.per.run"),
  })
  .meta({ id: "PacerState" });
export type PacerState = z.infer<typeof PacerState>;

export const INITIAL_STATE: PacerState = { brokers: [], lastRunAtMs: null, lastRunCapped: false };

/**
 * A state a client hands back (POST /v1/evaluate), checked in one loop with no recursion and at most
 * MAX_LISTED_PROBLEMS problems. The value is a fresh copy holding only the known fields, so nothing
 * else a client sent reaches the next state.
 */
export function validateState(input: unknown, base = ""): Validated<PacerState> {
  const { problems, report } = problemList();
  if (!isObject(input)) {
    report(base, "expected an object { brokers, lastRunAtMs, lastRunCapped }");
    return { ok: false, problems };
  }
  const { brokers, lastRunAtMs, lastRunCapped } = input;
  if (!(lastRunAtMs === null || isInt(lastRunAtMs, 0, Number.MAX_SAFE_INTEGER)))
    report(pointer(base, "lastRunAtMs"), "expected null or epoch ms");
  if (typeof lastRunCapped !== "boolean") report(pointer(base, "lastRunCapped"), "expected a boolean");
  const entries: GateEntry[] = [];
  if (!Array.isArray(brokers)) report(pointer(base, "brokers"), "expected an array of gate entries");
  else if (brokers.length > MAX_BROKERS) report(pointer(base, "brokers"), `at most ${MAX_BROKERS} entries`);
  else {
    const seen = new Set<number>();
    for (let i = 0; i < brokers.length && problems.length < MAX_LISTED_PROBLEMS; i++) {
      const entry = brokers[i];
      const at = pointer(base, "brokers", i);
      if (!isObject(entry)) {
        report(at, "expected a gate entry { id, gatedSinceMs, clearRuns }");
        continue;
      }
      const { id, gatedSinceMs, clearRuns } = entry;
      const checks: [boolean, string, string][] = [
        [isBrokerId(id), "id", `expected a broker id, ${BROKER_ID_RULE}`],
        [isInt(gatedSinceMs, 0, Number.MAX_SAFE_INTEGER), "gatedSinceMs", "expected epoch ms"],
        [isInt(clearRuns, 0, 1), "clearRuns", "expected 0 or 1"],
      ];
      let ok = true;
      for (const [valid, field, detail] of checks) {
        if (!valid) {
          ok = false;
          if (!report(`${at}/${field}`, detail)) break;
        }
      }
      if (!ok) continue;
      if (seen.has(id as number)) report(`${at}/id`, "duplicate broker id");
      seen.add(id as number);
      entries.push({
        id: id as number,
        gatedSinceMs: gatedSinceMs as number,
        clearRuns: clearRuns as number,
      });
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      brokers: entries,
      lastRunAtMs: lastRunAtMs as number | null,
      lastRunCapped: lastRunCapped as boolean,
    },
  };
}
