import { createHash } from "node:crypto";
import pLimit from "p-limit";
import { type ConfigOverrides, type EffectiveConfig, effectiveConfig } from "../../schemas/config.ts";
import { type ClusterRecord, nextRunDueAtMs, type PacerStore, type TickOutcome } from "../store/store.ts";

/**
 * The scheduled tick paces every cluster whose ticking is on, from its stored snapshot, without a
 * long-running controller. It is split in two, like any fan-out:
 *
 * - the tick itself (this module) reads the fleet config once, lists the clusters, and hands each one
 *   that is due, or mid-ramp and due within the tick's window, to a queue as a {@link TickJob};
 * - a worker runs each job (tick-job.ts): one cluster's run, at most once per job key however often
 *   the queue delivers it, and a delayed job for the ramp's next run while the window lasts.
 *
 * On AWS the queue is SQS and the worker a Lambda function; locally both live in one process.
 */

/** One cluster's run within a tick, as queued. Delivered at least once; run at most once. */
export interface TickJob {
  clusterId: string;
  /** The tick's scheduled time: a retried tick queues the same jobs, which then do not run again. */
  scheduledAtMs: number;
  /** 1 for the tick's own run; 2, 3, … for the ramp's next runs within the tick's window. */
  run: number;
  /** The tick's window ends here: no job is queued for this time or later (the next tick takes over). */
  untilMs: number;
  /** The fleet-wide config as the tick read it, once for all its jobs. */
  fleetConfig: ConfigOverrides;
}

/** Where jobs go: SQS on AWS, timers and a bounded pool locally. */
export interface JobQueue {
  /** Queues each job to be delivered `delayMs` from now (0: at once). */
  send(jobs: { job: TickJob; delayMs: number }[]): Promise<void>;
}

/**
 * Orders a cluster's tick runs: by the tick's scheduled time, then by the run within it. Stored with a
 * run's state, it stops a job delivered twice, and a ramp that a newer tick has overtaken.
 */
export function tickKeyOf(job: Pick<TickJob, "scheduledAtMs" | "run">): string {
  return `${String(job.scheduledAtMs).padStart(15, "0")}#${String(job.run).padStart(4, "0")}`;
}

export type SkipOutcome = Exclude<TickOutcome["outcome"], "ran" | "failed">;

/** Why a cluster does not run now, or null when it should. */
export function skipReason(
  record: ClusterRecord,
  config: EffectiveConfig,
  nowMs: number,
): SkipOutcome | null {
  if (!config["pacer.tick.enabled"]) return "not-enabled";
  const last = record.lastDecision;
  if (last && nextRunDueAtMs(last) > nowMs) return "not-due";
  // The worker reads a cluster with a connection itself: there is no stored snapshot to wait for.
  if (record.connected) return null;
  if (!record.snapshot) return "no-snapshot";
  if (nowMs - record.snapshot.receivedAtMs > config["pacer.snapshot.max.age.ms"]) return "stale-snapshot";
  if (last?.snapshotId === record.snapshot.snapshotId) return "snapshot-unchanged";
  return null;
}

/** A ramp that a run left mid-way (its last run was capped) goes on at its own pace, not the tick's. */
export function midRampDueAtMs(record: ClusterRecord, skipped: SkipOutcome): number | null {
  const last = record.lastDecision;
  const waiting = skipped === "not-due" || skipped === "snapshot-unchanged";
  return waiting && last?.moreWorkRemains ? nextRunDueAtMs(last) : null;
}

/** A skip is written only when the outcome changes: an idle fleet costs no writes, tick after tick. */
export const skipChanged = (record: ClusterRecord, outcome: SkipOutcome) =>
  record.lastTick?.outcome !== outcome;

export interface TickOptions {
  store: PacerStore;
  queue: JobQueue;
  clock: () => number;
  /** The schedule's own time for this tick: a retried tick has the same, so its jobs do not run twice. */
  scheduledAtMs: number;
  /** The end of the tick's window: usually the next tick's scheduled time. */
  untilMs: number;
  /** How many skips are written at once. */
  concurrency?: number;
}

export interface TickReport {
  /** What the tick did with each cluster: queued it (after `delayMs`), or skipped it and why. */
  clusters: { clusterId: string; outcome: SkipOutcome | "queued"; delayMs?: number }[];
  queued: number;
  /** Skips that could not be written (the store): the tick as a whole should be retried. */
  failed: number;
}

const PAGE_SIZE = 100;

export async function runTick(options: TickOptions): Promise<TickReport> {
  const { store, queue, clock, scheduledAtMs, untilMs } = options;
  const fleetConfig = await store.getFleetConfig();
  const report: TickReport = { clusters: [], queued: 0, failed: 0 };
  const writeSkip = pLimit(options.concurrency ?? 16);
  const skipWrites: Promise<void>[] = [];

  let cursor: string | undefined;
  do {
    const page = await store.listClusters(PAGE_SIZE, cursor);
    const jobs: { job: TickJob; delayMs: number }[] = [];
    for (const record of page.items) {
      const { clusterId } = record;
      const nowMs = clock();
      const skipped = skipReason(record, effectiveConfig(fleetConfig, record.config), nowMs);
      const dueAtMs = skipped === null ? nowMs : midRampDueAtMs(record, skipped);
      if (skipped === null || (dueAtMs !== null && dueAtMs < untilMs)) {
        const delayMs = Math.max(0, (dueAtMs ?? nowMs) - nowMs);
        jobs.push({ job: { clusterId, scheduledAtMs, run: 1, untilMs, fleetConfig }, delayMs });
        report.clusters.push({ clusterId, outcome: "queued", delayMs });
        continue;
      }
      const outcome = skipped ?? "not-due";
      report.clusters.push({ clusterId, outcome });
      if (skipChanged(record, outcome))
        skipWrites.push(
          writeSkip(() => store.recordTick(clusterId, { atMs: nowMs, outcome })).catch(() => {
            report.failed++;
          }),
        );
    }
    // Queued page by page: the first clusters run while the tick still lists the rest.
    await queue.send(jobs);
    report.queued += jobs.length;
    cursor = page.cursor;
  } while (cursor);

  await Promise.all(skipWrites);
  return report;
}

/** A stable id for a stored snapshot: its receive time and a digest of its bytes. */
export function snapshotIdOf(bytes: Buffer, receivedAtMs: number): string {
  return `${String(receivedAtMs).padStart(15, "0")}-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}`;
}
