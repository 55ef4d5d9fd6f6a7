import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { type ConfigOverrides, type EffectiveConfig, effectiveConfig } from "../../schemas/config.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import { type ClusterRecord, nextRunDueAtMs, type PacerStore, type TickOutcome } from "../store/store.ts";
import { inProcess, type ManagedAnswer, managedRun, type RunObserver } from "./managed-run.ts";

/**
 * The scheduled tick: paces every cluster whose ticking is on, from its stored snapshot, without a
 * long-running controller. A cluster runs only when its next run is due and its snapshot is fresh and
 * newer than the one its last run used; a stale snapshot never produces elections.
 *
 * A schedule ticks once a minute at best, while a ramp's runs are `throttle.interval.ms` apart (15 s in
 * the proposal). So a tick given `untilMs` keeps following each cluster mid-ramp (its last run was
 * capped): when the next run is due and the agent has stored a newer snapshot, it runs it, until `untilMs`.
 */

/** Where a decision with elections goes: EventBridge on AWS. */
export interface DecisionPublisher {
  publish(clusterId: string, answer: ManagedAnswer): Promise<void>;
}

export interface TickOptions {
  store: PacerStore;
  clock: () => number;
  /** The schedule's own time for this tick: a retried tick has the same, so it replays, not re-runs. */
  scheduledAtMs: number;
  publisher?: DecisionPublisher;
  observer?: RunObserver;
  decisionTtlMs: number;
  idempotencyTtlMs: number;
  /** Follow clusters mid-ramp until this time; without it, a tick is one pass over the fleet. */
  untilMs?: number;
  sleep?: (ms: number) => Promise<void>;
  /** How often a follow-up looks again for the agent's newer snapshot. */
  snapshotPollMs?: number;
}

/** One cluster's part in a tick: a run, or why there was none. */
type ClusterTick = TickOutcome & {
  elections: number;
  /** Mid-ramp (the last run was capped): when the next run is due, for a follow-up within this tick. */
  followUpAtMs?: number;
};

export interface TickReport {
  /** Every run of the tick, follow-ups included, and every cluster the first pass skipped. */
  clusters: (ClusterTick & { clusterId: string })[];
  /** Clusters whose run failed (the store, most likely): the tick as a whole should be retried. */
  failed: number;
}

function skipReason(
  record: ClusterRecord,
  config: EffectiveConfig,
  nowMs: number,
): TickOutcome["outcome"] | null {
  const last = record.lastDecision;
  if (last && nextRunDueAtMs(last) > nowMs) return "not-due";
  if (!record.snapshot) return "no-snapshot";
  if (nowMs - record.snapshot.receivedAtMs > config["pacer.snapshot.max.age.ms"]) return "stale-snapshot";
  if (last?.snapshotId === record.snapshot.snapshotId) return "snapshot-unchanged";
  return null;
}

/**
 * What a tick's idempotency key stands for: "this cluster's run of this scheduled time", whichever
 * snapshot is stored by the time a retry comes.
 */
const TICK_REQUEST = Buffer.from("scheduled tick");

/** Which run of the tick this is: its idempotency key, and whether a skip is worth recording. */
interface TickRun {
  idempotencyKey: string;
  /** A follow-up that finds nothing new tells nobody: it looks again shortly. */
  recordSkip: boolean;
}

async function tickCluster(
  record: ClusterRecord,
  config: EffectiveConfig,
  options: TickOptions,
  run: TickRun,
): Promise<ClusterTick> {
  const { store, clock } = options;
  const nowMs = clock();
  const { clusterId } = record;
  if (!config["pacer.tick.enabled"]) return { atMs: nowMs, outcome: "not-enabled", elections: 0 };
  const skipped = skipReason(record, config, nowMs);
  const snapshotText =
    skipped === null && record.snapshot ? await store.getSnapshot(clusterId, record.snapshot) : null;
  if (skipped !== null || snapshotText === null || !record.snapshot) {
    const outcome: TickOutcome = {
      atMs: nowMs,
      outcome: skipped ?? "stale-snapshot",
      ...(skipped ? {} : { detail: "snapshot expired" }),
    };
    if (run.recordSkip) await store.recordTick(clusterId, outcome);
    // A ramp that an earlier tick left mid-way goes on at its own pace, not at the next tick's.
    const last = record.lastDecision;
    const midRamp = (skipped === "not-due" || skipped === "snapshot-unchanged") && last?.moreWorkRemains;
    return {
      ...outcome,
      elections: 0,
      ...(midRamp ? { followUpAtMs: nextRunDueAtMs(last) } : {}),
    };
  }
  const snapshot = validateSnapshot(JSON.parse(snapshotText));
  if (!snapshot.ok) throw new Error(`stored snapshot of ${clusterId} no longer validates`);
  const response = await managedRun(
    store,
    clusterId,
    inProcess({ snapshot: snapshot.value, config: {}, state: undefined, nowMs: undefined }),
    TICK_REQUEST,
    {
      clock,
      dryRun: false,
      explain: false,
      idempotencyKey: run.idempotencyKey,
      snapshotId: record.snapshot.snapshotId,
      observer: options.observer,
      decisionTtlMs: options.decisionTtlMs,
      idempotencyTtlMs: options.idempotencyTtlMs,
    },
  );
  if (response.status !== 200) {
    const outcome: TickOutcome = { atMs: nowMs, outcome: "failed", detail: response.body.slice(0, 500) };
    await store.recordTick(clusterId, outcome);
    return { ...outcome, elections: 0 };
  }
  const answer = JSON.parse(response.body) as ManagedAnswer;
  // Published again on a replay: the first attempt may have died before it published. Consumers
  // deduplicate on decisionId.
  if (answer.elections.length > 0) await options.publisher?.publish(clusterId, answer);
  const outcome: TickOutcome = { atMs: nowMs, outcome: "ran", decisionId: answer.decisionId };
  await store.recordTick(clusterId, outcome);
  return {
    ...outcome,
    elections: answer.elections.length,
    ...(answer.moreWorkRemains ? { followUpAtMs: nextRunDueAtMs(answer) } : {}),
  };
}

/** A failed cluster is reported, and the rest of the tick goes on. */
async function tickSafely(
  load: () => Promise<ClusterRecord | null>,
  fleetConfig: ConfigOverrides,
  options: TickOptions,
  run: TickRun,
): Promise<ClusterTick | null> {
  try {
    const record = await load();
    if (record === null) return null;
    return await tickCluster(record, effectiveConfig(fleetConfig, record.config), options, run);
  } catch (error) {
    return { atMs: options.clock(), outcome: "failed", detail: (error as Error).message, elections: 0 };
  }
}

export async function runTick(options: TickOptions): Promise<TickReport> {
  const { store, scheduledAtMs } = options;
  const fleetConfig = await store.getFleetConfig();
  const report: TickReport = { clusters: [], failed: 0 };
  const followUps: FollowUp[] = [];
  const record = (clusterId: string, tick: ClusterTick) => {
    report.clusters.push({ clusterId, ...tick });
    if (tick.outcome === "failed") report.failed++;
  };

  let cursor: string | undefined;
  do {
    const page = await store.listClusters(100, cursor);
    for (const cluster of page.items) {
      const run = { idempotencyKey: `tick:${scheduledAtMs}`, recordSkip: true };
      const tick = await tickSafely(async () => cluster, fleetConfig, options, run);
      if (tick === null) continue;
      record(cluster.clusterId, tick);
      if (tick.followUpAtMs !== undefined)
        followUps.push({ clusterId: cluster.clusterId, atMs: tick.followUpAtMs, run: 2 });
    }
    cursor = page.cursor;
  } while (cursor);

  await followRamps(followUps, fleetConfig, options, record);
  return report;
}

/** A cluster to run again within this tick: its `run`-th run of the tick, due at `atMs`. */
interface FollowUp {
  clusterId: string;
  atMs: number;
  run: number;
}

const DEFAULT_SNAPSHOT_POLL_MS = 2_000;

/**
 * Runs each cluster mid-ramp again when its next run is due, as long as the tick lasts. The run waits
 * for a snapshot newer than the last run's (the agent has carried out the batch), looking again every
 * `snapshotPollMs`. Each follow-up has its own idempotency key, `tick:<scheduled time>#<run>`.
 */
async function followRamps(
  followUps: FollowUp[],
  fleetConfig: ConfigOverrides,
  options: TickOptions,
  record: (clusterId: string, tick: ClusterTick) => void,
) {
  const { untilMs, clock, store } = options;
  if (untilMs === undefined) return;
  const sleep = options.sleep ?? delay;
  const pollMs = options.snapshotPollMs ?? DEFAULT_SNAPSHOT_POLL_MS;
  for (;;) {
    followUps.sort((a, b) => a.atMs - b.atMs);
    const next = followUps.shift();
    if (next === undefined || next.atMs >= untilMs) return;
    await sleep(Math.max(0, next.atMs - clock()));
    const run = { idempotencyKey: `tick:${options.scheduledAtMs}#${next.run}`, recordSkip: false };
    const tick = await tickSafely(() => store.getCluster(next.clusterId), fleetConfig, options, run);
    if (tick === null) continue;
    if (tick.outcome === "snapshot-unchanged") {
      followUps.push({ ...next, atMs: clock() + pollMs });
      continue;
    }
    if (tick.outcome === "ran" || tick.outcome === "failed") record(next.clusterId, tick);
    if (tick.followUpAtMs !== undefined) {
      // Not due yet (a timer that fired early) keeps its place: the run it stands for has not happened.
      const ordinal = tick.outcome === "ran" ? next.run + 1 : next.run;
      followUps.push({ clusterId: next.clusterId, atMs: tick.followUpAtMs, run: ordinal });
    }
  }
}

/** A stable id for a stored snapshot: its receive time and a digest of its bytes. */
export function snapshotIdOf(bytes: Buffer, receivedAtMs: number): string {
  return `${String(receivedAtMs).padStart(15, "0")}-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}`;
}
