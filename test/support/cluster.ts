import { evaluate } from "../../functions/policy/run.ts";
import type { RunAnswer } from "../../schemas/answer.ts";
import { type ConfigOverrides, effectiveConfig } from "../../schemas/config.ts";
import type { Broker, Partition, Snapshot } from "../../schemas/snapshot.ts";
import { INITIAL_STATE, type PacerState } from "../../schemas/state.ts";

/** Small builders so that a test reads as the cluster it describes. */

export function partition(
  topic: string,
  index: number,
  replicas: number[],
  options: Partial<Omit<Partition, "topic" | "partition" | "replicas">> = {},
): Partition {
  return { topic, partition: index, replicas, isr: replicas, leader: replicas[0] as number, ...options };
}

/** `count` partitions whose preferred replica is `id`, led elsewhere; the first `outOfSync` lack `id` in ISR. */
export function preferredPartitionsOf(
  id: number,
  count: number,
  options: { outOfSync?: number; topic?: string; followers?: [number, number] } = {},
): Partition[] {
  const [second, third] = options.followers ?? [id + 100, id + 200];
  const outOfSync = options.outOfSync ?? 0;
  return Array.from({ length: count }, (_, i) =>
    partition(options.topic ?? `broker-${id}-topic`, i, [id, second, third], {
      leader: second,
      isr: i < outOfSync ? [second, third] : [second, third, id],
    }),
  );
}

export function brokersOf(partitions: Partition[], overrides: Broker[] = []): Broker[] {
  const ids = new Set(partitions.flatMap((p) => p.replicas));
  const byId = new Map(overrides.map((b) => [b.id, b]));
  for (const id of ids) if (!byId.has(id)) byId.set(id, { id });
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

export function snapshotOf(partitions: Partition[], overrides: Broker[] = []): Snapshot {
  return { brokers: brokersOf(partitions, overrides), partitions };
}

export const WAIT_FOR_SYNC: ConfigOverrides = { "leader.imbalance.election.algorithm": "wait-for-sync" };

export function run(
  snapshot: Snapshot,
  overrides: ConfigOverrides = {},
  state: PacerState = INITIAL_STATE,
  nowMs = 1_000_000,
  explain = true,
): RunAnswer {
  return evaluate({ snapshot, config: effectiveConfig(overrides), state, nowMs, explain });
}

/** Runs one snapshot per step, threading the state, as a controller would. */
export function runSeries(
  steps: { snapshot: Snapshot; nowMs: number; config?: ConfigOverrides }[],
  baseConfig: ConfigOverrides = {},
): RunAnswer[] {
  let state = INITIAL_STATE;
  return steps.map((step) => {
    const answer = run(step.snapshot, { ...baseConfig, ...step.config }, state, step.nowMs);
    state = answer.state;
    return answer;
  });
}

export const rowOf = (answer: RunAnswer, id: number) => answer.brokers.find((row) => row.id === id);

/** The snapshot after a controller carried out the answer's elections. */
export function afterElections(snapshot: Snapshot, answer: Pick<RunAnswer, "elections">): Snapshot {
  const elected = new Set(answer.elections.map((e) => `${e.topic}\u0000${e.partition}`));
  return {
    brokers: snapshot.brokers,
    partitions: snapshot.partitions.map((p) =>
      elected.has(`${p.topic}\u0000${p.partition}`) ? { ...p, leader: p.replicas[0] as number } : p,
    ),
  };
}
