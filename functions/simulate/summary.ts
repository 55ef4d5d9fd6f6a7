import type { Scenario } from "../../schemas/scenario.ts";
import type { Simulation } from "./simulate.ts";

/** The figures an operator compares configs by. Times are relative to the broker's unfencing. */
export interface BrokerSummary {
  label: string;
  broker: number;
  /** Unfenced → the first election for it (leadership starts to return). */
  timeToReleaseMs: number | null;
  /** First election → it leads ≥ 99% of its preferred partitions. */
  rampWindowMs: number | null;
  /** Unfenced → it leads ≥ 99% of its preferred partitions. */
  totalRecoveryMs: number | null;
  /** Unfenced → it leads every preferred partition it is in sync on (stragglers aside, recovered). */
  caughtUpLedMs: number | null;
  /** Share of its preferred partitions it leads when the simulation ends. */
  finalLeadershipShare: number;
  largestBatch: number;
  largestIn15s: number;
  largestIn60s: number;
  runs: number;
}

export const RECOVERED_SHARE = 0.99;

/** The most elections in any window of `windowMs` starting at a run. */
export function largestInWindow(simulation: Simulation, windowMs: number): number {
  const { runs } = simulation;
  let best = 0;
  let sum = 0;
  let start = 0;
  for (let end = 0; end < runs.length; end++) {
    sum += runs[end]?.electionCount ?? 0;
    while ((runs[end]?.atMs ?? 0) - (runs[start]?.atMs ?? 0) >= windowMs)
      sum -= runs[start++]?.electionCount ?? 0;
    best = Math.max(best, sum);
  }
  return best;
}

export function summarize(scenario: Scenario, simulation: Simulation): BrokerSummary[] {
  const { runs } = simulation;
  const largestBatch = Math.max(0, ...runs.map((r) => r.electionCount));
  const largestIn15s = largestInWindow(simulation, 15_000);
  const largestIn60s = largestInWindow(simulation, 60_000);
  return scenario.restarts.map(({ broker, upAtMs }) => {
    const rows = runs.map((run) => ({ atMs: run.atMs, row: run.brokers.find((b) => b.id === broker) }));
    const released = rows.find(({ atMs, row }) => atMs >= upAtMs && (row?.elected ?? 0) > 0)?.atMs;
    const recovered = rows.find(
      ({ atMs, row }) => atMs >= upAtMs && row && row.leading >= RECOVERED_SHARE * row.preferred,
    )?.atMs;
    const caughtUpLed = rows.find(
      ({ atMs, row }) =>
        atMs >= upAtMs &&
        row &&
        row.outOfSync < row.preferred &&
        row.leading >= row.preferred - row.outOfSync,
    )?.atMs;
    const last = rows.at(-1)?.row;
    return {
      label: simulation.label,
      broker,
      timeToReleaseMs: released === undefined ? null : released - upAtMs,
      rampWindowMs: released === undefined || recovered === undefined ? null : recovered - released,
      totalRecoveryMs: recovered === undefined ? null : recovered - upAtMs,
      caughtUpLedMs: caughtUpLed === undefined ? null : caughtUpLed - upAtMs,
      finalLeadershipShare: last ? last.leading / last.preferred : 0,
      largestBatch,
      largestIn15s,
      largestIn60s,
      runs: runs.length,
    };
  });
}
