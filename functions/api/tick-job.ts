import { effectiveConfig } from "../../schemas/config.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import type { ClusterClients } from "../kafka/cluster-connections.ts";
import { type ClusterRecord, nextRunDueAtMs, type PacerStore, type TickOutcome } from "../store/store.ts";
import type { ManagedAnswer, RunObserver } from "./managed-run.ts";
import {
  type JobQueue,
  midRampDueAtMs,
  type SkipOutcome,
  skipChanged,
  skipReason,
  type TickJob,
  tickKeyOf,
} from "./tick.ts";
import { runLive } from "./tick-live.ts";
import { saveTickRun } from "./tick-run.ts";

/**
 * The worker's part of a tick: one cluster's run. A queue delivers a job at least once, so the run
 * is saved only if no run of its tick key (or a later one) was saved before: the key goes into the
 * same conditional write as the state. A ticked cluster costs four store calls: read the cluster,
 * read its snapshot, save the run, store the decision. A cluster with a connection is read from Kafka
 * instead of its stored snapshot, and its batch carried out by the worker itself (tick-live.ts).
 */

/** Where a decision with elections goes: EventBridge on AWS, the log locally. */
export interface DecisionPublisher {
  publish(clusterId: string, answer: ManagedAnswer): Promise<void>;
}

export interface TickWorker {
  store: PacerStore;
  /** Kafka clients for the clusters with a connection; without them such a cluster's job fails. */
  clients?: ClusterClients;
  /** The most one connected cluster's job may take (default 20 s). */
  budgetMs?: number;
  queue: JobQueue;
  clock: () => number;
  publisher?: DecisionPublisher;
  observer?: RunObserver;
  decisionTtlMs: number;
  /** How long a ramp's next run waits before it looks again for the agent's newer snapshot. */
  snapshotPollMs?: number;
}

export interface JobResult extends TickOutcome {
  clusterId: string;
  run: number;
  elections: number;
  /**
   * "replayed": a run of this key was saved before (a job delivered again); "gone": the cluster was
   * deleted; "unreachable": the worker could not read a cluster it reaches itself (the outcome says why).
   */
  status: "done" | "replayed" | "gone" | "unreachable";
}

const resultOf = (
  job: TickJob,
  outcome: TickOutcome,
  status: JobResult["status"],
  elections: number,
): JobResult => ({ clusterId: job.clusterId, run: job.run, ...outcome, elections, status });

const DEFAULT_SNAPSHOT_POLL_MS = 2_000;
/** Runs that lose the race to save to another run (a managed run, say) before the job gives up. */
const MAX_ATTEMPTS = 5;

/**
 * Runs one job; throws when it fails, so that the queue delivers it again. A job that fails before
 * its run is saved records the failure as the cluster's last tick (when the store still answers),
 * so that the fleet listing and the console show the cluster as failing.
 */
export async function runTickJob(job: TickJob, worker: TickWorker): Promise<JobResult> {
  const saved = { run: false };
  try {
    return await runOnce(job, worker, saved);
  } catch (error) {
    if (!saved.run) {
      const failed: TickOutcome = {
        atMs: worker.clock(),
        outcome: "failed",
        detail: (error as Error).message.slice(0, 500),
      };
      await worker.store.recordTick(job.clusterId, failed).catch(() => undefined);
    }
    throw error;
  }
}

async function runOnce(job: TickJob, worker: TickWorker, saved: { run: boolean }): Promise<JobResult> {
  const { store, clock } = worker;
  const key = tickKeyOf(job);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const record = await store.getCluster(job.clusterId);
    const nowMs = clock();
    const result = (outcome: TickOutcome, status: JobResult["status"] = "done", elections = 0) =>
      resultOf(job, outcome, status, elections);
    if (record === null) return result({ atMs: nowMs, outcome: "no-snapshot" }, "gone");
    if (record.lastTickKey !== null && record.lastTickKey >= key) {
      await publishAgain(record, key, worker);
      return result({ atMs: nowMs, outcome: "ran", decisionId: record.lastDecision?.decisionId }, "replayed");
    }

    const config = effectiveConfig(job.fleetConfig, record.config);
    const skipped = skipReason(record, config, nowMs);
    if (skipped !== null) return result(await skip(job, record, skipped, worker));
    if (record.connected) {
      if (!worker.clients)
        throw new Error(`${job.clusterId} has a connection, and this worker reaches no cluster`);
      const live = await runLive(record, config, { key }, { ...worker, clients: worker.clients });
      if (live.status === "lost") continue; // another run saved first, or this job's key did
      if (live.status === "unreachable") return result(live.outcome, "unreachable");
      saved.run = true;
      worker.observer?.runCompleted(job.clusterId, live.answer);
      // The worker reads the cluster itself, so a recovery under way (a ramp, a broker held back, a
      // catch-up throttled) is looked at again at its own pace within the window, not the tick's.
      if (recoveryUnderWay(live.answer))
        await followUp({ ...job, run: job.run + 1 }, nextRunDueAtMs(live.answer), worker);
      return result(live.outcome, "done", live.answer.elections.length);
    }
    const snapshot = record.snapshot;
    const text = snapshot && (await store.getSnapshot(job.clusterId, snapshot));
    if (!snapshot || !text) {
      const expired: TickOutcome = { atMs: nowMs, outcome: "stale-snapshot", detail: "snapshot expired" };
      await store.recordTick(job.clusterId, expired);
      return result(expired);
    }
    const parsed = validateSnapshot(JSON.parse(text));
    if (!parsed.ok) throw new Error(`the stored snapshot of ${job.clusterId} no longer validates`);

    const run = await saveTickRun(
      store,
      record,
      { snapshot: parsed.value, config, nowMs, key, snapshotId: snapshot.snapshotId },
      worker.decisionTtlMs,
    );
    if (run === null) continue; // another run saved first, or this job's key did: read again and see which
    saved.run = run.saved !== null;
    const { managed, ran } = run;
    worker.observer?.runCompleted(job.clusterId, managed);
    if (managed.elections.length > 0) await worker.publisher?.publish(job.clusterId, managed);
    if (managed.moreWorkRemains)
      await followUp({ ...job, run: job.run + 1 }, nextRunDueAtMs(managed), worker);
    return result(ran, "done", managed.elections.length);
  }
  throw new Error(`${job.clusterId}: ${MAX_ATTEMPTS} attempts lost the race to save the tick's run`);
}

/**
 * Nothing to run now. A ramp mid-way is looked at again within the window: when its next run is due,
 * or, when the agent has not stored a newer snapshot yet, shortly.
 */
async function skip(job: TickJob, record: ClusterRecord, skipped: SkipOutcome, worker: TickWorker) {
  const nowMs = worker.clock();
  const outcome: TickOutcome = { atMs: nowMs, outcome: skipped };
  const dueAtMs = midRampDueAtMs(record, skipped);
  if (dueAtMs !== null) {
    const pollMs = worker.snapshotPollMs ?? DEFAULT_SNAPSHOT_POLL_MS;
    await followUp(job, skipped === "not-due" ? dueAtMs : nowMs + pollMs, worker);
  }
  // A follow-up that finds nothing new tells nobody: only the tick's own run records its skip.
  if (job.run === 1 && skipChanged(record, skipped)) await worker.store.recordTick(job.clusterId, outcome);
  return outcome;
}

const recoveryUnderWay = (answer: ManagedAnswer) =>
  answer.moreWorkRemains || answer.brokers.some((b) => b.gated) || (answer.catchUpThrottles?.length ?? 0) > 0;

/** Queues the job for `atMs`, unless that is past the tick's window: the next tick takes over then. */
async function followUp(job: TickJob, atMs: number, worker: TickWorker) {
  if (atMs >= job.untilMs) return;
  await worker.queue.send([{ job, delayMs: Math.max(0, atMs - worker.clock()) }]);
}

/**
 * A job delivered again after its run was saved: the first delivery may have died before it
 * published, so the stored decision is published again (consumers deduplicate on decisionId). If it
 * died before the decision was stored, its batch is lost: nothing is elected, which is safe, and the
 * next run chooses again.
 */
async function publishAgain(record: ClusterRecord, key: string, worker: TickWorker) {
  const last = record.lastDecision;
  if (!worker.publisher || last?.tickKey !== key || last.electionCount === 0) return;
  const stored = await worker.store.getDecision(record.clusterId, last.decisionId);
  if (stored) await worker.publisher.publish(record.clusterId, JSON.parse(stored.body) as ManagedAnswer);
}
