import { createHash } from "node:crypto";
import { type EffectiveConfig, effectiveConfig } from "../../schemas/config.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import type { ClusterRecord, PacerStore, TickOutcome } from "../store/store.ts";
import { type ManagedAnswer, managedRun, type RunObserver } from "./managed-run.ts";

/**
 * The scheduled tick: paces every cluster whose ticking is on, from its stored snapshot, without a
 * long-running controller. A cluster runs only when its next run is due and its snapshot is fresh and
 * newer than the one its last run used; a stale snapshot never produces elections.
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
}

export interface TickReport {
  clusters: (TickOutcome & { clusterId: string; elections: number })[];
  /** Clusters whose run failed (the store, most likely): the tick as a whole should be retried. */
  failed: number;
}

function skipReason(
  record: ClusterRecord,
  config: EffectiveConfig,
  nowMs: number,
): TickOutcome["outcome"] | null {
  const last = record.lastDecision;
  if (last && last.evaluatedAtMs + last.nextDelayMs > nowMs) return "not-due";
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

async function tickCluster(record: ClusterRecord, config: EffectiveConfig, options: TickOptions) {
  const { store, clock } = options;
  const nowMs = clock();
  const { clusterId } = record;
  if (!config["pacer.tick.enabled"]) return { atMs: nowMs, outcome: "not-enabled" as const, elections: 0 };
  const skipped = skipReason(record, config, nowMs);
  const snapshotText =
    skipped === null && record.snapshot ? await store.getSnapshot(clusterId, record.snapshot) : null;
  if (skipped !== null || snapshotText === null || !record.snapshot) {
    const outcome: TickOutcome = {
      atMs: nowMs,
      outcome: skipped ?? "stale-snapshot",
      ...(skipped ? {} : { detail: "snapshot expired" }),
    };
    await store.recordTick(clusterId, outcome);
    return { ...outcome, elections: 0 };
  }
  const snapshot = validateSnapshot(JSON.parse(snapshotText));
  if (!snapshot.ok) throw new Error(`stored snapshot of ${clusterId} no longer validates`);
  const response = await managedRun(
    store,
    clusterId,
    { snapshot: snapshot.value, config: {}, state: undefined, nowMs: undefined },
    TICK_REQUEST,
    {
      clock,
      dryRun: false,
      explain: false,
      idempotencyKey: `tick:${options.scheduledAtMs}`,
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
  return { ...outcome, elections: answer.elections.length };
}

export async function runTick(options: TickOptions): Promise<TickReport> {
  const fleetConfig = await options.store.getFleetConfig();
  const report: TickReport = { clusters: [], failed: 0 };
  let cursor: string | undefined;
  do {
    const page = await options.store.listClusters(100, cursor);
    for (const record of page.items) {
      const config = effectiveConfig(fleetConfig, record.config);
      try {
        report.clusters.push({
          clusterId: record.clusterId,
          ...(await tickCluster(record, config, options)),
        });
      } catch (error) {
        report.failed++;
        report.clusters.push({
          clusterId: record.clusterId,
          atMs: options.clock(),
          outcome: "failed",
          detail: (error as Error).message,
          elections: 0,
        });
      }
    }
    cursor = page.cursor;
  } while (cursor);
  return report;
}

/** A stable id for a stored snapshot: its receive time and a digest of its bytes. */
export function snapshotIdOf(bytes: Buffer, receivedAtMs: number): string {
  return `${String(receivedAtMs).padStart(15, "0")}-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}`;
}
