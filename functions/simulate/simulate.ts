import type { GateReason } from "../../schemas/answer.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { validateEvaluateRequest } from "../../schemas/request.ts";
import type { Scenario } from "../../schemas/scenario.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { evaluateRequest } from "../policy/request.ts";
import { ClusterModel } from "./cluster-model.ts";

/** One controller run as the simulation saw it. */
export interface SimulatedRun {
  atMs: number;
  electionCount: number;
  moreWorkRemains: boolean;
  deferred: "throttle" | "rebalance-disabled" | null;
  nextDelayMs: number;
  /** Per restarted broker, after this run's elections. */
  brokers: {
    id: number;
    leading: number;
    preferred: number;
    outOfSync: number;
    /** The gate's denominator in this run (as the answer reports it). */
    gateTotal: number;
    elected: number;
    gated: boolean;
    reason: GateReason | null;
  }[];
}

export interface Simulation {
  label: string;
  config: ConfigOverrides;
  runs: SimulatedRun[];
}

/**
 * Drives a controller through a recovery on a virtual clock: each run sends the snapshot through the same
 * validate-and-evaluate path as the API, carries out the returned elections, threads the state, and sleeps
 * `nextDelayMs`. Deterministic for a scenario (and its seed).
 */
export function simulate(
  scenario: Scenario,
  config: ConfigOverrides = scenario.config,
  label = scenario.label,
): Simulation {
  const cluster = new ClusterModel(scenario);
  const restarted = scenario.restarts.map((r) => r.broker);
  const runs: SimulatedRun[] = [];
  let state = INITIAL_STATE;
  for (let atMs = 0; atMs <= scenario.durationMs; ) {
    cluster.advanceTo(atMs);
    const request = validateEvaluateRequest({ snapshot: cluster.snapshotAt(atMs), config, state, now: atMs });
    if (!request.ok)
      throw new Error(`the simulated controller sent a bad request: ${JSON.stringify(request.problems)}`);
    const answer = evaluateRequest(request.value, { clockMs: atMs });
    cluster.elect(answer.elections);
    runs.push({
      atMs,
      electionCount: answer.elections.length,
      moreWorkRemains: answer.moreWorkRemains,
      deferred: answer.deferred,
      nextDelayMs: answer.nextDelayMs,
      brokers: restarted.map((id) => {
        const row = answer.brokers.find((b) => b.id === id);
        return {
          id,
          ...cluster.standingOf(id, atMs),
          preferred: cluster.preferredPerBroker,
          gateTotal: row?.total ?? 0,
          elected: row?.elected ?? 0,
          gated: row?.gated ?? false,
          reason: row?.reason ?? null,
        };
      }),
    });
    state = answer.state;
    atMs += answer.nextDelayMs;
  }
  return { label, config, runs };
}

/** The scenario's config, and its comparison if it has one or one is given. */
export function simulateScenario(
  scenario: Scenario,
  compare?: { label: string; config: ConfigOverrides },
): Simulation[] {
  const other = compare ?? scenario.compare;
  const simulations = [simulate(scenario)];
  if (other) simulations.push(simulate(scenario, { ...scenario.config, ...other.config }, other.label));
  return simulations;
}
