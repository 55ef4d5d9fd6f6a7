import type { BrokerRow, GateReason, PartitionDisposition, RunAnswer } from "../../schemas/answer.ts";
import type { EffectiveConfig } from "../../schemas/config.ts";
import type { Partition, Snapshot } from "../../schemas/snapshot.ts";
import type { GateEntry, PacerState } from "../../schemas/state.ts";
import { CATCH_UP_WATCH_MS, catchUpPacing } from "./catch-up.ts";
import { preferredReplicaOf } from "./eligibility.ts";
import { type GateStep, isOverMaxLagBytes, isOverThreshold, type OverReason, stepGate } from "./gate.ts";
import { roundRobin } from "./round-robin.ts";
import {
  BALANCED,
  type BrokerTally,
  dispositionCode,
  dispositionOf,
  type SnapshotTally,
  tallySnapshot,
} from "./tally.ts";
import { nextDelayAfterRunMs, throttleRemainingMs } from "./throttle.ts";

export interface RunInput {
  snapshot: Snapshot;
  config: EffectiveConfig;
  state: PacerState;
  nowMs: number;
  /** List every imbalanced partition's disposition in the answer. */
  explain?: boolean;
}

/** A broker's standing in this run, before it becomes a row of the answer. */
interface BrokerOutcome {
  tally: BrokerTally | undefined;
  gated: boolean;
  reason: GateReason;
  entry: Omit<GateEntry, "id"> | undefined;
  elected: number;
  skippedByGate: number;
  deferredByThrottle: number;
  deferredInternal: number;
}

/** Kafka's own topics, whose leaders are the group, transaction and share-group coordinators. */
const INTERNAL_TOPICS = new Set(["__consumer_offsets", "__transaction_state", "__share_group_state"]);

/**
 * One run of the preferred-leader balancer: a pure function of the snapshot, the effective config, the
 * state the previous run left and the time. Returns the answer, whose `state` is what the next run gets.
 */
export function evaluate({ snapshot, config, state, nowMs, explain = false }: RunInput): RunAnswer {
  const tally = tallySnapshot(snapshot, explain);
  if (!config["auto.leader.rebalance.enable"]) {
    return holdRun(
      tally,
      snapshot,
      config,
      state,
      "rebalance-disabled",
      config["leader.imbalance.check.interval.seconds"] * 1000,
    );
  }
  const throttleLeftMs = throttleRemainingMs(state, config, nowMs);
  if (throttleLeftMs > 0) return holdRun(tally, snapshot, config, state, "throttle", throttleLeftMs);

  const outcomes = applyGate(tally, config, state, nowMs);
  const candidateBuckets: number[][] = [];
  for (const outcome of outcomes.values()) {
    const eligible = outcome.tally?.eligible ?? [];
    if (outcome.gated) {
      outcome.skippedByGate = eligible.length;
      markAll(tally, eligible, "skipped-gated");
    } else if (eligible.length > 0) {
      const { now, later } = internalLast(eligible, snapshot.partitions, config);
      outcome.deferredInternal = later.length;
      markAll(tally, later, "deferred-internal");
      candidateBuckets.push(inTopicPartitionOrder(now, snapshot.partitions));
    }
  }

  const maxPerRun = config["leader.imbalance.election.max.per.run"];
  const chosen = roundRobin(candidateBuckets, maxPerRun);
  for (const bucket of candidateBuckets) markAll(tally, bucket, "deferred-cap");
  markAll(tally, chosen, "elected");

  const elections = chosen.map((index) => {
    const partition = snapshot.partitions[index] as Partition;
    const leader = preferredReplicaOf(partition);
    (outcomes.get(leader) as BrokerOutcome).elected++;
    return { topic: partition.topic, partition: partition.partition, leader };
  });
  for (const outcome of outcomes.values()) {
    if (!outcome.gated)
      outcome.deferredByThrottle =
        (outcome.tally?.eligible.length ?? 0) - outcome.elected - outcome.deferredInternal;
  }

  // Internal partitions held back go in the next run, paced like a capped one, not a check interval later.
  const heldInternal = [...outcomes.values()].some((o) => o.deferredInternal > 0);
  const moreWorkRemains = elections.length >= maxPerRun || heldInternal;
  const nextState: PacerState = {
    brokers: [...outcomes].flatMap(([id, o]) => (o.entry ? [{ id, ...o.entry }] : [])),
    lastRunAtMs: nowMs,
    lastRunCapped: moreWorkRemains,
  };
  return answerOf(tally, snapshot, config, outcomes, {
    elections,
    moreWorkRemains,
    nextDelayMs: nextDelayAfterRunMs(moreWorkRemains, config),
    deferred: null,
    state: nextState,
  });
}

/** Gate every broker with a group or a state entry; under `immediate` nobody is gated and entries end. */
function applyGate(
  tally: SnapshotTally,
  config: EffectiveConfig,
  state: PacerState,
  nowMs: number,
): Map<number, BrokerOutcome> {
  const entries = new Map(state.brokers.map(({ id, ...entry }) => [id, entry]));
  const waitForSync = config["leader.imbalance.election.algorithm"] === "wait-for-sync";
  const outcomes = new Map<number, BrokerOutcome>();
  for (const id of brokersInScope(tally, state)) {
    const brokerTally = tally.brokers.get(id);
    // Rule 0 asks whether the broker is listed, unfenced and not shutting down; a broker whose
    // leadership came back by other means has no group and is still active.
    const active = tally.activityOf(id) === "active";
    const step: GateStep = waitForSync
      ? stepGate({
          entry: entries.get(id),
          active,
          over: overReasonOf(brokerTally, config),
          nowMs,
          maxWaitMs: config["leader.imbalance.election.wait.for.sync.max.wait.ms"],
        })
      : { gated: false, reason: active ? "algorithm-immediate" : "inactive", entry: undefined };
    outcomes.set(id, {
      tally: brokerTally,
      ...step,
      elected: 0,
      skippedByGate: 0,
      deferredByThrottle: 0,
      deferredInternal: 0,
    });
  }
  return outcomes;
}

/** No run happens (throttled, or rebalancing off): no elections, the state is handed back untouched. */
function holdRun(
  tally: SnapshotTally,
  snapshot: Snapshot,
  config: EffectiveConfig,
  state: PacerState,
  deferred: "throttle" | "rebalance-disabled",
  nextDelayMs: number,
): RunAnswer {
  const entries = new Map(state.brokers.map(({ id, ...entry }) => [id, entry]));
  const outcomes = new Map<number, BrokerOutcome>();
  for (const id of brokersInScope(tally, state)) {
    const brokerTally = tally.brokers.get(id);
    const eligible = brokerTally?.eligible ?? [];
    markAll(tally, eligible, deferred === "throttle" ? "deferred-throttle" : "rebalance-disabled");
    outcomes.set(id, {
      tally: brokerTally,
      gated: false,
      reason: deferred === "throttle" ? "throttle-deferred" : "rebalance-disabled",
      entry: entries.get(id),
      elected: 0,
      skippedByGate: 0,
      deferredByThrottle: deferred === "throttle" ? eligible.length : 0,
      deferredInternal: 0,
    });
  }
  return answerOf(tally, snapshot, config, outcomes, {
    elections: [],
    moreWorkRemains: false,
    nextDelayMs,
    deferred,
    state,
  });
}

/** Brokers in a group or in the state, ascending: one row each, and the round-robin order. */
function brokersInScope(tally: SnapshotTally, state: PacerState): number[] {
  const ids = new Set<number>(state.brokers.map((entry) => entry.id));
  for (const brokerTally of tally.brokers.values()) if (brokerTally.groupSize > 0) ids.add(brokerTally.id);
  return [...ids].sort((a, b) => a - b);
}

/** over(b), and by which rule: the proposal's threshold first, then the extension's bytes to fetch. */
function overReasonOf(brokerTally: BrokerTally | undefined, config: EffectiveConfig): OverReason | null {
  const threshold = config["leader.imbalance.election.wait.for.sync.threshold.percent"];
  if (isOverThreshold(brokerTally?.outOfSync ?? 0, gateTotal(brokerTally, config), threshold))
    return "over-threshold";
  // Only a broker with a group is judged on its lag: one with nothing to take back has nothing to gate.
  const maxLagBytes = config["leader.imbalance.election.wait.for.sync.max.lag.bytes"];
  if (brokerTally && brokerTally.groupSize > 0 && isOverMaxLagBytes(brokerTally.lagBytes, maxLagBytes))
    return "over-max-lag-bytes";
  return null;
}

/** total(b): the group under basis `imbalanced`; every unguarded preferred partition under `preferred`. */
function gateTotal(brokerTally: BrokerTally | undefined, config: EffectiveConfig): number {
  if (brokerTally === undefined) return 0;
  if (config["leader.imbalance.election.wait.for.sync.threshold.basis"] === "imbalanced")
    return brokerTally.groupSize;
  return preferredOf(brokerTally);
}

/** Its unguarded preferred partitions: the snapshot's own count, else those it lists. */
const preferredOf = (brokerTally: BrokerTally | undefined): number =>
  brokerTally === undefined ? 0 : (brokerTally.preferredCount ?? brokerTally.unguardedListed);

/**
 * Extension (internal.topics.last): a broker's internal-topic partitions wait while it has any
 * other eligible partition, so the coordinators it will lead move after the data they serve.
 */
function internalLast(
  eligible: number[],
  partitions: readonly Partition[],
  config: EffectiveConfig,
): { now: number[]; later: number[] } {
  if (!config["leader.imbalance.election.internal.topics.last"]) return { now: eligible, later: [] };
  const isInternal = (index: number) => INTERNAL_TOPICS.has((partitions[index] as Partition).topic);
  const others = eligible.filter((index) => !isInternal(index));
  return others.length > 0
    ? { now: others, later: eligible.filter(isInternal) }
    : { now: eligible, later: [] };
}

/** Inside a bucket: by topic (ordinal string order), then partition number. */
function inTopicPartitionOrder(indices: number[], partitions: readonly Partition[]): number[] {
  return [...indices].sort((a, b) => {
    const pa = partitions[a] as Partition;
    const pb = partitions[b] as Partition;
    if (pa.topic !== pb.topic) return pa.topic < pb.topic ? -1 : 1;
    return pa.partition - pb.partition;
  });
}

function markAll(
  tally: SnapshotTally,
  indices: readonly number[],
  disposition: Parameters<typeof dispositionCode>[0],
) {
  const { codes } = tally;
  if (codes === null) return;
  const code = dispositionCode(disposition);
  for (const index of indices) codes[index] = code;
}

function answerOf(
  tally: SnapshotTally,
  snapshot: Snapshot,
  config: EffectiveConfig,
  outcomes: Map<number, BrokerOutcome>,
  run: Pick<RunAnswer, "elections" | "moreWorkRemains" | "nextDelayMs" | "deferred" | "state">,
): RunAnswer {
  const brokers: BrokerRow[] = [];
  // Independent of the elections: a held or deferred run still paces a catch-up.
  const catchUp = catchUpPacing(snapshot, config);
  const outOfSyncPreferredPartitionCount: Record<string, number> = {};
  let electionsSkippedByGate = 0;
  let electionsDeferredByThrottle = 0;
  for (const [id, o] of outcomes) {
    const entry = run.state.brokers.find((e) => e.id === id);
    brokers.push({
      id,
      gated: o.gated,
      reason: o.reason,
      outOfSync: o.tally?.outOfSync ?? 0,
      total: gateTotal(o.tally, config),
      preferred: preferredOf(o.tally),
      imbalanced: o.tally?.groupSize ?? 0,
      activity: tally.activityOf(id),
      ...(o.tally?.lagBytes === undefined ? {} : { lagBytes: o.tally.lagBytes }),
      gatedSinceMs: entry?.gatedSinceMs ?? null,
      clearRuns: entry?.clearRuns ?? null,
      eligible: o.tally?.eligible.length ?? 0,
      elected: o.elected,
      skippedByGate: o.skippedByGate,
      deferredByThrottle: o.deferredByThrottle,
      deferredInternal: o.deferredInternal,
    });
    if (o.tally && o.tally.groupSize > 0) outOfSyncPreferredPartitionCount[id] = o.tally.outOfSync;
    electionsSkippedByGate += o.skippedByGate;
    electionsDeferredByThrottle += o.deferredByThrottle;
  }
  const answer: RunAnswer = {
    elections: run.elections,
    kafkaLeaderElection: { partitions: run.elections.map(({ topic, partition }) => ({ topic, partition })) },
    moreWorkRemains: run.moreWorkRemains,
    nextDelayMs: catchUp.awaited ? Math.min(run.nextDelayMs, CATCH_UP_WATCH_MS) : run.nextDelayMs,
    deferred: run.deferred,
    brokers,
    catchUpThrottles: catchUp.throttles,
    metrics: {
      outOfSyncPreferredPartitionCount,
      electionsSkippedByGate,
      electionsDeferredByThrottle,
      gatedBrokerCount: brokers.filter((row) => row.gated).length,
      maxWaitExpiredBrokerCount: brokers.filter((row) => row.reason === "max-wait-expired").length,
      electionCount: run.elections.length,
      catchUpThrottledBrokerCount: catchUp.throttles.length,
    },
    config,
    state: run.state,
  };
  if (tally.codes) answer.partitions = explainPartitions(tally.codes, snapshot);
  return answer;
}

function explainPartitions(codes: Uint8Array, snapshot: Snapshot): PartitionDisposition[] {
  const rows: PartitionDisposition[] = [];
  codes.forEach((code, index) => {
    if (code === BALANCED) return;
    const partition = snapshot.partitions[index] as Partition;
    rows.push({
      topic: partition.topic,
      partition: partition.partition,
      preferredReplica: preferredReplicaOf(partition),
      disposition: dispositionOf(code),
    });
  });
  return rows;
}
