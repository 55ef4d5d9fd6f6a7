import { createHash, randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import type { RunAnswer } from "../../schemas/answer.ts";
import { problem } from "../../schemas/problems.ts";
import type { ValidEvaluateRequest } from "../../schemas/request.ts";
import { INITIAL_STATE, type PacerState } from "../../schemas/state.ts";
import { evaluateRequest, type RequestContext } from "../policy/request.ts";
import type { DecisionSummary, IdempotencyClaim, IdempotencyRecord, PacerStore } from "../store/store.ts";
import { recoveryOf } from "./recovery.ts";

/** A managed run: load the cluster's state, run the pure core, save under optimistic concurrency. */

export interface ManagedRunOptions {
  clock: () => number;
  dryRun: boolean;
  explain: boolean;
  idempotencyKey?: string;
  /** Told of every run that happened (not replays, not dry runs): metrics and logs. */
  observer?: RunObserver;
  decisionTtlMs: number;
  idempotencyTtlMs: number;
  /** Attempts before a run that keeps losing the race answers 409. */
  maxAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface ManagedAnswer extends RunAnswer {
  decisionId: string;
  evaluatedAtMs: number;
  stateVersion: number;
}

export interface RunObserver {
  runCompleted(clusterId: string, answer: ManagedAnswer): void;
}

export interface ManagedResponse {
  status: number;
  /** The body exactly as sent, so that an idempotent replay returns the same bytes. */
  body: string;
  answer?: ManagedAnswer;
  replayed: boolean;
}

const IDEMPOTENCY_LEASE_MS = 30_000;

/**
 * A validated request, ready to run on whatever state the store holds at each attempt: in this
 * process, or (a large body, on the local server) in a worker thread that parses it there.
 */
export interface RunnableRequest {
  run(state: PacerState, nowMs: number, context: RequestContext): Promise<RunAnswer> | RunAnswer;
}

export function inProcess(request: ValidEvaluateRequest): RunnableRequest {
  return { run: (state, nowMs, context) => evaluateRequest({ ...request, state, nowMs }, context) };
}

/** Decision ids sort by time, so that "newest first" and `?after=` are key order. */
export function newDecisionId(nowMs: number): string {
  return `${String(nowMs).padStart(15, "0")}-${randomBytes(4).toString("hex")}`;
}

/**
 * A run's answer as it is sent and stored: with a new decision id, its time, and the version the
 * store holds after it (one more when the run saves its state).
 */
export function managedAnswerOf(
  answer: RunAnswer,
  nowMs: number,
  version: number,
  saves: boolean,
): ManagedAnswer {
  return {
    ...answer,
    decisionId: newDecisionId(nowMs),
    evaluatedAtMs: nowMs,
    stateVersion: saves ? version + 1 : version,
  };
}

/** A run's summary; a tick's run also names its stored snapshot and its tick key. */
export function summaryOf(
  answer: ManagedAnswer,
  tick?: { snapshotId?: string; tickKey: string },
): DecisionSummary {
  return {
    ...tick,
    decisionId: answer.decisionId,
    evaluatedAtMs: answer.evaluatedAtMs,
    electionCount: answer.elections.length,
    moreWorkRemains: answer.moreWorkRemains,
    nextDelayMs: answer.nextDelayMs,
    deferred: answer.deferred,
    gatedBrokers: answer.brokers.filter((b) => b.gated).map((b) => b.id),
    maxWaitExpiredBrokers: answer.brokers.filter((b) => b.reason === "max-wait-expired").map((b) => b.id),
    recovering: recoveryOf(answer),
  };
}

/**
 * A cluster with a registered connection is read and paced by the service's own worker: a run or a
 * snapshot from an agent beside it is refused, so that two actors never carry out its batches.
 */
export function connectedConflict(clusterId: string): ManagedResponse {
  const detail = `Cluster "${clusterId}" has a connection registered: the service reads and paces it itself. Stop this agent, or DELETE /v1/clusters/${clusterId}/connection to pace it with an agent`;
  return { status: 409, body: JSON.stringify(problem("cluster-connected", detail)), replayed: false };
}

const jittered = (attempt: number) => Math.random() * Math.min(200, 10 * 2 ** attempt);

export async function managedRun(
  store: PacerStore,
  clusterId: string,
  request: RunnableRequest,
  requestBytes: Buffer,
  options: ManagedRunOptions,
): Promise<ManagedResponse> {
  const key = options.dryRun ? undefined : options.idempotencyKey;
  if (key === undefined) return runUntilSaved(store, clusterId, request, options);

  const requestHash = createHash("sha256")
    .update(requestBytes)
    .update(options.explain ? "explain" : "")
    .digest("hex");
  const holder = await store.claimIdempotency(clusterId, key, requestHash, lease(options));
  if (holder !== null) {
    const settled = await settleHeldKey(store, clusterId, key, requestHash, holder, options);
    if (settled !== null) return settled;
  }

  let stagedDecisionId: string | undefined;
  try {
    const response = await runUntilSaved(store, clusterId, request, {
      ...options,
      // Staged before the save, so that a retry after a crash between the two can tell.
      stage: async (answer, body) => {
        const record = { requestHash, decisionId: answer.decisionId, status: 200, body };
        const expiresAtMs = options.clock() + options.idempotencyTtlMs;
        const ownClaim = await store.stageIdempotency(clusterId, key, record, lease(options), expiresAtMs);
        if (ownClaim) stagedDecisionId = answer.decisionId;
        return ownClaim;
      },
    });
    if (response.answer) await store.commitIdempotency(clusterId, key, response.answer.decisionId);
    else await store.releaseIdempotency(clusterId, key, stagedDecisionId);
    return response;
  } catch (error) {
    // Whether a staged answer's run was saved is unknown here: it stays, and its lease decides.
    if (stagedDecisionId === undefined) await store.releaseIdempotency(clusterId, key).catch(() => undefined);
    throw error;
  }
}

const lease = (options: ManagedRunOptions) => ({ nowMs: options.clock(), leaseMs: IDEMPOTENCY_LEASE_MS });

/**
 * Another request holds the key: its answer (a replay), 422 for another body, 409 while it runs. A
 * holder that died with its answer staged is settled: replayed if its run was saved, else the key is
 * taken over and null says to run.
 */
async function settleHeldKey(
  store: PacerStore,
  clusterId: string,
  key: string,
  requestHash: string,
  holder: IdempotencyClaim,
  options: ManagedRunOptions,
): Promise<ManagedResponse | null> {
  const heldHash = holder.done ? holder.record.requestHash : holder.requestHash;
  if (heldHash !== requestHash) {
    const reused = problem(
      "idempotency-key-reused",
      `Idempotency-Key "${key}" was first used with another request`,
    );
    return { status: 422, body: JSON.stringify(reused), replayed: false };
  }
  if (holder.done) return replay(holder.record);
  const { staged } = holder;
  if (staged === null || holder.leaseUntilMs > options.clock()) return stillRunning(key);
  if (await wasSaved(store, clusterId, staged.decisionId)) {
    await finishSaved(store, clusterId, key, staged, options);
    return replay(staged);
  }
  const tookOver = await store.takeOverIdempotency(
    clusterId,
    key,
    staged.decisionId,
    requestHash,
    lease(options),
  );
  return tookOver ? null : stillRunning(key);
}

const replay = (record: IdempotencyRecord): ManagedResponse => ({
  status: record.status,
  body: record.body,
  replayed: true,
});

function stillRunning(key: string): ManagedResponse {
  const running = problem(
    "conflict",
    `A request with Idempotency-Key "${key}" is still running; retry shortly`,
  );
  return { status: 409, body: JSON.stringify(running), replayed: false };
}

/** A run is saved when it is the cluster's last, or, if others followed, when its decision was stored. */
async function wasSaved(store: PacerStore, clusterId: string, decisionId: string): Promise<boolean> {
  const cluster = await store.getCluster(clusterId);
  if (cluster?.lastDecision?.decisionId === decisionId) return true;
  return (await store.getDecision(clusterId, decisionId)) !== null;
}

/** Does what the holder that died after saving did not: store the decision, commit the answer. */
async function finishSaved(
  store: PacerStore,
  clusterId: string,
  key: string,
  staged: IdempotencyRecord,
  options: ManagedRunOptions,
) {
  await storeDecision(store, clusterId, JSON.parse(staged.body) as ManagedAnswer, options.decisionTtlMs);
  await store.commitIdempotency(clusterId, key, staged.decisionId);
}

/** A saved run's decision, for the decisions feed: the answer without its per-partition explanation. */
export function storeDecision(store: PacerStore, clusterId: string, answer: ManagedAnswer, ttlMs: number) {
  const { partitions: _explained, ...decision } = answer;
  return store.putDecision(
    clusterId,
    {
      decisionId: decision.decisionId,
      evaluatedAtMs: decision.evaluatedAtMs,
      body: JSON.stringify(decision),
    },
    decision.evaluatedAtMs + ttlMs,
  );
}

interface RunOptions extends ManagedRunOptions {
  /** Called with each attempt's answer before it is saved; false stops the run (the key was lost). */
  stage?: (answer: ManagedAnswer, body: string) => Promise<boolean>;
}

async function runUntilSaved(
  store: PacerStore,
  clusterId: string,
  request: RunnableRequest,
  options: RunOptions,
): Promise<ManagedResponse> {
  const sleep = options.sleep ?? delay;
  const maxAttempts = options.maxAttempts ?? 8;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    // One round trip for both: a run without a key costs this read, the save and the decision.
    const { cluster, fleetConfig } = await store.getClusterAndFleet(clusterId);
    if (cluster?.connected && !options.dryRun) return connectedConflict(clusterId);
    const version = cluster?.version ?? 0;
    const nowMs = options.clock();
    const answer = await request.run(cluster?.state ?? INITIAL_STATE, nowMs, {
      clockMs: nowMs,
      storedConfig: [fleetConfig, cluster?.config ?? {}],
      explain: options.explain,
    });
    // A deferred run changes nothing, and a dry run saves nothing: both report the stored version.
    const saves = answer.deferred === null && !options.dryRun;
    const managed = managedAnswerOf(answer, nowMs, version, saves);
    const body = JSON.stringify(managed);
    if (options.stage && !(await options.stage(managed, body))) {
      const detail = "A retry with the same Idempotency-Key took over this request's claim";
      return { status: 409, body: JSON.stringify(problem("conflict", detail)), replayed: false };
    }
    if (saves) {
      const lastDecision = summaryOf(managed);
      const saved = await store.saveRun(clusterId, version, { state: answer.state, lastDecision, nowMs });
      if (!saved) {
        await sleep(jittered(attempt));
        continue;
      }
      await storeDecision(store, clusterId, managed, options.decisionTtlMs);
    }
    if (answer.deferred !== null && !options.dryRun)
      await store.recordDeferred(clusterId, { atMs: nowMs, reason: answer.deferred });
    if (!options.dryRun) options.observer?.runCompleted(clusterId, managed);
    return { status: 200, body, answer: managed, replayed: false };
  }
  const detail = `${maxAttempts} attempts lost the race to save this cluster's state; retry`;
  return { status: 409, body: JSON.stringify(problem("conflict", detail)), replayed: false };
}
