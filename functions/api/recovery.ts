import type { BrokerRow } from "../../schemas/answer.ts";
import type { BrokerRecovery, RecoveryPhase } from "../store/store.ts";

/**
 * How far along each recovering broker is after a run, for the cluster and fleet views: in sync and
 * leading out of its preferred partitions, what holds it, and the time left at the run's own pace.
 */

/** Brokers kept per decision summary: the fleet shows the first few; the cluster page reads the runs. */
const MAX_SHOWN = 8;

function phaseOf(row: BrokerRow, leading: number): RecoveryPhase {
  if (row.activity === "unregistered") return "offline";
  if (row.activity === "fenced") return "fenced";
  if (row.activity === "in-controlled-shutdown") return "shutting down";
  if (row.reason === "hysteresis") return "waiting for a clear run";
  if (row.gated) return "gated";
  if (leading >= row.preferred) return "leads all";
  if (row.reason === "rebalance-disabled") return "rebalancing off";
  return "ramping";
}

/**
 * At the pace of this run: as many runs as the rest takes at this run's moves, each after the delay
 * this run asked for. Unknown while nothing moves.
 */
function timeLeftMs(remaining: number, row: BrokerRow, nextDelayMs: number): number | null {
  if (remaining === 0) return 0;
  if (row.elected === 0) return null;
  return Math.ceil(remaining / row.elected) * nextDelayMs;
}

/** A broker is recovering while it does not lead all its preferred partitions, or is held or down. */
const isRecovering = (row: BrokerRow) =>
  row.imbalanced > 0 || row.outOfSync > 0 || row.gated || row.activity !== "active";

export function recoveryOf(answer: { brokers: BrokerRow[]; nextDelayMs: number }): BrokerRecovery[] {
  return answer.brokers
    .filter(isRecovering)
    .slice(0, MAX_SHOWN)
    .map((row) => {
      const remaining = Math.max(0, row.imbalanced - row.elected);
      const leading = row.preferred - remaining;
      return {
        id: row.id,
        preferred: row.preferred,
        inSync: row.preferred - row.outOfSync,
        leading,
        phase: phaseOf(row, leading),
        timeLeftMs: row.gated ? null : timeLeftMs(remaining, row, answer.nextDelayMs),
      };
    });
}
