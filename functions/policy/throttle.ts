import type { EffectiveConfig } from "../../schemas/config.ts";
import type { PacerState } from "../../schemas/state.ts";

/** Kafka's immediate period: how soon the controller reruns a capped run when nothing throttles it. */
export const IMMEDIATE_PERIOD_MS = 10;

/**
 * The throttle: after a capped run, no run until throttle.interval.ms has passed. Returns the time left,
 * 0 when a run may happen now. A clock that went backwards waits at most one interval.
 */
export function throttleRemainingMs(state: PacerState, config: EffectiveConfig, nowMs: number): number {
  const throttleMs = config["leader.imbalance.election.throttle.interval.ms"];
  if (!state.lastRunCapped || throttleMs === 0 || state.lastRunAtMs === null) return 0;
  const sinceLastRunMs = nowMs - state.lastRunAtMs;
  return sinceLastRunMs < throttleMs ? Math.min(throttleMs, throttleMs - sinceLastRunMs) : 0;
}

/** When the controller should ask again after a run that happened. */
export function nextDelayAfterRunMs(moreWorkRemains: boolean, config: EffectiveConfig): number {
  if (!moreWorkRemains) return config["leader.imbalance.check.interval.seconds"] * 1000;
  const throttleMs = config["leader.imbalance.election.throttle.interval.ms"];
  return throttleMs > 0 ? throttleMs : IMMEDIATE_PERIOD_MS;
}
