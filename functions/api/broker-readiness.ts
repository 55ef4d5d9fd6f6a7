import type { BrokerRow } from "../../schemas/answer.ts";
import type { EffectiveConfig } from "../../schemas/config.ts";
import { formatSpan } from "../format/text.ts";
import type { BrokerRecovery } from "../store/store.ts";
import { recoveryOf } from "./recovery.ts";

/**
 * Whether a managed cluster's broker is back, from its last run: what `pacer wait` asks of Kafka,
 * asked of the service, for a rolling restart driven from outside the cluster's network.
 */

/** The leading share that counts as back: the proposal's recovery ends at 99 %. */
const LEADING_PERCENT = 99;

export interface LastRun {
  decisionId: string;
  evaluatedAtMs: number;
  nextDelayMs: number;
  brokers: BrokerRow[];
}

export function brokerReadiness(
  clusterId: string,
  broker: number,
  run: LastRun | null,
  config: EffectiveConfig,
  nowMs: number,
) {
  const base = { clusterId, broker };
  if (run === null)
    return {
      ...base,
      ready: false,
      reasons: ["no run of this cluster yet: nothing is known of its brokers"],
      recovery: null,
      lastRun: null,
    };
  const ageMs = nowMs - run.evaluatedAtMs;
  const lastRun = { decisionId: run.decisionId, evaluatedAtMs: run.evaluatedAtMs, ageMs };
  const maxAgeMs = config["pacer.snapshot.max.age.ms"];
  const found = run.brokers.find((b) => b.id === broker);
  // A run stored before rows said how far along their broker is says nothing of it.
  const row = typeof found?.preferred === "number" ? found : undefined;
  const recovery: BrokerRecovery | null = row
    ? (recoveryOf({ brokers: [row], nextDelayMs: run.nextDelayMs })[0] ?? null)
    : null;
  const reasons: string[] = [];
  if (found && !row) reasons.push("the last run was stored by an earlier version: the next run will tell");
  if (ageMs > maxAgeMs)
    reasons.push(
      `the last run is ${formatSpan(ageMs)} old, more than pacer.snapshot.max.age.ms (${formatSpan(maxAgeMs)}): it says nothing of now`,
    );
  if (recovery) {
    if (recovery.phase === "offline" || recovery.phase === "fenced" || recovery.phase === "shutting down")
      reasons.push(`${recovery.phase} in the last run`);
    else if (recovery.phase === "gated" || recovery.phase === "waiting for a clear run")
      reasons.push(
        `${recovery.phase}: in sync on ${recovery.inSync} of its ${recovery.preferred} preferred partitions`,
      );
    if (recovery.inSync < recovery.preferred && recovery.phase !== "gated")
      reasons.push(`out of the ISR of ${recovery.preferred - recovery.inSync} of its preferred partitions`);
    const needed = Math.ceil((LEADING_PERCENT * recovery.preferred) / 100);
    if (recovery.leading < needed)
      reasons.push(
        `leads ${recovery.leading} of its ${recovery.preferred} preferred partitions, needs ${needed}`,
      );
  }
  return { ...base, ready: reasons.length === 0, reasons, recovery, lastRun };
}
