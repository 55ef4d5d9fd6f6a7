import type { GateReason } from "../../schemas/answer.ts";
import type { GateEntry } from "../../schemas/state.ts";

/** The wait-for-sync gate: one broker's step through a gating episode per run (SPEC §4, rules 0–4). */

/** Hysteresis: a broker leaves the gate after this many consecutive runs under the threshold. */
export const CLEAR_RUNS_TO_RELEASE = 2;

/** over(b): more than threshold% of the broker's partitions are out of sync; never over with none. */
export function isOverThreshold(outOfSync: number, total: number, thresholdPercent: number): boolean {
  return total > 0 && outOfSync * 100 > thresholdPercent * total;
}

/**
 * Extension (max.lag.bytes > 0): the broker's replicas still have more than that many bytes to fetch.
 * A broker whose lag the snapshot does not give has not shown that it caught up: over.
 */
export function isOverMaxLagBytes(lagBytes: number | undefined, maxLagBytes: number): boolean {
  return maxLagBytes > 0 && (lagBytes === undefined || lagBytes > maxLagBytes);
}

/** Why a broker is over: the proposal's threshold, or the extension's bytes still to fetch. */
export type OverReason = Extract<GateReason, "over-threshold" | "over-max-lag-bytes">;

export interface GateInput {
  entry: Omit<GateEntry, "id"> | undefined;
  active: boolean;
  /** null: under both. */
  over: OverReason | null;
  nowMs: number;
  /** 0 = no escape hatch. */
  maxWaitMs: number;
}

export interface GateStep {
  gated: boolean;
  reason: GateReason;
  /** The broker's entry after this run; undefined when it is outside a gating episode. */
  entry: Omit<GateEntry, "id"> | undefined;
}

export function stepGate({ entry, active, over, nowMs, maxWaitMs }: GateInput): GateStep {
  // Rule 0: an inactive broker is outside the gate, so its max-wait clock restarts when it is back.
  if (!active) return { gated: false, reason: "inactive", entry: undefined };

  // Rule 1: a gating episode starts when a broker goes over the threshold.
  if (entry === undefined) {
    return over
      ? { gated: true, reason: over, entry: { gatedSinceMs: nowMs, clearRuns: 0 } }
      : { gated: false, reason: "under-threshold", entry: undefined };
  }

  // Rule 2: max-wait, the escape hatch. The episode still needs two clear runs to end.
  if (maxWaitMs > 0 && nowMs - entry.gatedSinceMs >= maxWaitMs) {
    const clearRuns = over ? 0 : entry.clearRuns + 1;
    return {
      gated: false,
      reason: "max-wait-expired",
      entry: clearRuns >= CLEAR_RUNS_TO_RELEASE ? undefined : { gatedSinceMs: entry.gatedSinceMs, clearRuns },
    };
  }

  // Rule 3: still over the threshold.
  if (over)
    return {
      gated: true,
      reason: over,
      entry: { gatedSinceMs: entry.gatedSinceMs, clearRuns: 0 },
    };

  // Rule 4: hysteresis; released on the second consecutive clear run, which already elects.
  const clearRuns = entry.clearRuns + 1;
  return clearRuns >= CLEAR_RUNS_TO_RELEASE
    ? { gated: false, reason: "released", entry: undefined }
    : { gated: true, reason: "hysteresis", entry: { gatedSinceMs: entry.gatedSinceMs, clearRuns } };
}
