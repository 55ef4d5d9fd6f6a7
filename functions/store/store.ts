import type { ConfigOverrides } from "../../schemas/config.ts";
import type { ClusterConnection } from "../../schemas/connection.ts";
import type { PacerState } from "../../schemas/state.ts";
import type { ThrottleRecord, VersionedThrottleRecord } from "../../schemas/throttle-record.ts";

/** What the service keeps per cluster, and the operations it needs of a store. */

export const RECOVERY_PHASES = [
  "offline",
  "fenced",
  "shutting down",
  "gated",
  "waiting for a clear run",
  "ramping",
  "rebalancing off",
  "leads all",
] as const;
export type RecoveryPhase = (typeof RECOVERY_PHASES)[number];

/** How far along a recovering broker is after a run (see recoveryOf). */
export interface BrokerRecovery {
  id: number;
  preferred: number;
  inSync: number;
  /** After this run's elections. */
  leading: number;
  phase: RecoveryPhase;
  /** At this run's pace; null while gated or while nothing moves. */
  timeLeftMs: number | null;
}

/** The last decision of a cluster in brief, for the cluster view and the fleet listing. */
export interface DecisionSummary {
  decisionId: string;
  evaluatedAtMs: number;
  electionCount: number;
  moreWorkRemains: boolean;
  nextDelayMs: number;
  deferred: "throttle" | "rebalance-disabled" | null;
  gatedBrokers: number[];
  maxWaitExpiredBrokers: number[];
  /** Its recovering brokers; absent in decisions stored before it was kept. */
  recovering?: BrokerRecovery[];
  /** The stored snapshot a tick ran on, so that the next tick waits for a newer one. */
  snapshotId?: string;
  /** The tick job that ran it (see `tickKeyOf`), so that a redelivered job can publish it again. */
  tickKey?: string;
  /** A cluster the worker reaches itself: what became of this run's batch. */
  carriedOut?: CarriedOut;
}

/** When the run after a decision is due: its time plus the delay it asked for. */
export const nextRunDueAtMs = (decision: Pick<DecisionSummary, "evaluatedAtMs" | "nextDelayMs">) =>
  decision.evaluatedAtMs + decision.nextDelayMs;

/** Where a cluster's latest stored snapshot is, and how fresh. */
export interface SnapshotMeta {
  snapshotId: string;
  receivedAtMs: number;
  partitionCount: number;
  /** Bytes of gzip'd JSON, split across `chunks` items. */
  compressedBytes: number;
  chunks: number;
}

/** Why the worker could not reach a cluster it reads itself, in the words an operator acts on. */
export const REACH_FAILURES = ["unreachable", "tls", "authentication", "authorization", "setup"] as const;
export type ReachFailure = (typeof REACH_FAILURES)[number];

/** What the worker carried out of a run's batch on a cluster it reaches itself. */
export interface CarriedOut {
  asked: number;
  done: number;
  notNeeded: number;
  /** Per Kafka error code. */
  failed: Record<string, number>;
  /** The ElectLeaders request failed as a whole: nothing more was elected. */
  requestError?: string;
  /** Why nothing was asked of Kafka although the run chose a batch (its read was too old by then). */
  notCarriedOut?: string;
  /** Brokers whose catch-up is throttled after the run. */
  throttledBrokers?: number[];
  /** What the catch-up throttle could not do this run. */
  throttleErrors?: string[];
}

/** What the last tick did for a cluster, and why when it did not run it. */
export interface TickOutcome {
  atMs: number;
  outcome:
    | "ran"
    | "not-enabled"
    | "not-due"
    | "no-snapshot"
    | "stale-snapshot"
    | "snapshot-unchanged"
    | "unreachable"
    | "failed";
  detail?: string;
  decisionId?: string;
  /** With "unreachable": why. */
  reach?: ReachFailure;
  /** A cluster the worker reaches itself: what became of the batch. */
  carriedOut?: CarriedOut;
}

/** A tick job's run, saved with its state: the key orders a cluster's tick runs (see `tickKeyOf`). */
export interface TickRun {
  key: string;
  outcome: TickOutcome;
}

/** A run that moved nothing because the throttle's interval had not passed, or rebalancing is off. */
export interface DeferredRun {
  atMs: number;
  reason: "throttle" | "rebalance-disabled";
}

export interface ClusterRecord {
  clusterId: string;
  /** Goes up by one per saved run (and per state reset); 0 before the first. */
  version: number;
  state: PacerState | null;
  config: ConfigOverrides;
  lastDecision: DecisionSummary | null;
  snapshot: SnapshotMeta | null;
  lastTick: TickOutcome | null;
  /** The key of the last tick run saved; a job with this key or an earlier one does not run again. */
  lastTickKey: string | null;
  /** A connection is registered: the worker reads the cluster and carries out its batch itself. */
  connected: boolean;
  /** Runs deferred (by the throttle, or with rebalancing off): they save no state and no decision. */
  deferredRuns: number;
  lastDeferred: DeferredRun | null;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface StoredDecision {
  decisionId: string;
  evaluatedAtMs: number;
  /** The answer exactly as it was sent. */
  body: string;
}

export interface IdempotencyRecord {
  requestHash: string;
  decisionId: string;
  /** The first answer exactly as it was sent, with its status. */
  status: number;
  body: string;
}

/**
 * What holds a key: a finished answer, or a run in progress. A run stages its answer before it saves,
 * so that when its holder dies (the lease runs out) a retry can tell whether that answer was saved.
 */
export type IdempotencyClaim =
  | { done: true; record: IdempotencyRecord }
  | { done: false; requestHash: string; leaseUntilMs: number; staged: IdempotencyRecord | null };

/** How long a claim holds its key: from `nowMs`, for `leaseMs`. */
export interface Lease {
  nowMs: number;
  leaseMs: number;
}

export interface Page<T> {
  items: T[];
  /** Pass back to get the next page; absent on the last page. */
  cursor?: string;
}

export interface PacerStore {
  /** Reads a cluster strongly consistently; null if it was never configured or run. */
  getCluster(clusterId: string): Promise<ClusterRecord | null>;
  /** A cluster and the fleet's config, read together (one round trip), strongly consistently. */
  getClusterAndFleet(
    clusterId: string,
  ): Promise<{ cluster: ClusterRecord | null; fleetConfig: ConfigOverrides }>;
  /**
   * Saves a run's state if the stored version is still `expectedVersion`; false if another run won.
   * A tick's run also carries its tick key and outcome: it saves only if no run of that key, or of a
   * later one, was saved before, so that a job delivered twice runs once.
   */
  saveRun(
    clusterId: string,
    expectedVersion: number,
    run: { state: PacerState; lastDecision: DecisionSummary; nowMs: number; tick?: TickRun },
  ): Promise<boolean>;
  putConfig(clusterId: string, config: ConfigOverrides, nowMs: number): Promise<void>;
  /** Removes the cluster (config, state, snapshot pointer); false if it is unknown. */
  deleteCluster(clusterId: string): Promise<boolean>;
  /** Forgets the gate state (like a controller failover); false if the cluster is unknown. */
  resetState(clusterId: string, nowMs: number): Promise<boolean>;
  listClusters(limit: number, cursor?: string): Promise<Page<ClusterRecord>>;

  putDecision(clusterId: string, decision: StoredDecision, expiresAtMs: number): Promise<void>;
  /** Newest first; `after`: only decisions newer than this one. */
  listDecisions(
    clusterId: string,
    options: { limit: number; after?: string; nowMs: number },
  ): Promise<StoredDecision[]>;

  /**
   * Claims an Idempotency-Key before the run, so that two requests with one key never both run. A claim
   * whose holder died before staging an answer lapses with its lease. Returns null when claimed, else
   * what holds the key.
   */
  claimIdempotency(
    clusterId: string,
    key: string,
    requestHash: string,
    lease: Lease,
  ): Promise<IdempotencyClaim | null>;
  /** Stages a run's answer under its claim, before the run is saved; false if the claim was lost. */
  stageIdempotency(
    clusterId: string,
    key: string,
    record: IdempotencyRecord,
    lease: Lease,
    expiresAtMs: number,
  ): Promise<boolean>;
  /** Makes the staged answer the key's answer, once its run is saved. */
  commitIdempotency(clusterId: string, key: string, decisionId: string): Promise<void>;
  /** Claims a key whose holder died with an unsaved answer staged; false if another retry did first. */
  takeOverIdempotency(
    clusterId: string,
    key: string,
    unsavedDecisionId: string,
    requestHash: string,
    lease: Lease,
  ): Promise<boolean>;
  /** Gives up a claim whose run was not saved (with the staged answer of `unsavedDecisionId`, if any). */
  releaseIdempotency(clusterId: string, key: string, unsavedDecisionId?: string): Promise<void>;
  /** A stored decision, or null if it was never stored (or has expired from the table). */
  getDecision(clusterId: string, decisionId: string): Promise<StoredDecision | null>;

  getFleetConfig(): Promise<ConfigOverrides>;
  putFleetConfig(config: ConfigOverrides, nowMs: number): Promise<void>;

  /** Stores a cluster's latest snapshot (gzip'd JSON), then points the cluster at it. */
  putSnapshot(
    clusterId: string,
    gzipped: Buffer,
    meta: Omit<SnapshotMeta, "chunks" | "compressedBytes">,
  ): Promise<SnapshotMeta>;
  /** The snapshot's JSON text, or null if its chunks have expired. */
  getSnapshot(clusterId: string, meta: SnapshotMeta): Promise<string | null>;
  recordTick(clusterId: string, outcome: TickOutcome): Promise<void>;
  /**
   * What the worker carried out of the run saved at `version`, on that run's decision summary and as
   * the last tick; false (and nothing written) if a later run was saved since.
   */
  recordCarriedOut(
    clusterId: string,
    version: number,
    lastDecision: DecisionSummary,
    outcome: TickOutcome,
  ): Promise<boolean>;
  /** Counts a deferred run of a known cluster; nothing for an unknown one. */
  recordDeferred(clusterId: string, deferred: DeferredRun): Promise<void>;

  /** The cluster's catch-up throttle record; version 0 and empty if none was written. */
  getThrottleRecord(clusterId: string): Promise<VersionedThrottleRecord>;
  /** Replaces it if its version is still `expectedVersion`: the new version, or null if it changed. */
  putThrottleRecord(
    clusterId: string,
    record: ThrottleRecord,
    expectedVersion: number,
    nowMs: number,
  ): Promise<number | null>;

  /** How the worker reaches the cluster itself; null if it was never registered. */
  getConnection(clusterId: string): Promise<ClusterConnection | null>;
  putConnection(clusterId: string, connection: ClusterConnection, nowMs: number): Promise<void>;
  /** False if the cluster had none. */
  deleteConnection(clusterId: string): Promise<boolean>;

  /** Throws if the store cannot be reached. */
  ping(): Promise<void>;
}

/**
 * The store refused a write as invalid (DynamoDB's ValidationException: an item over 400 KB, say).
 * Retrying cannot help, so it is not an outage: the service answers 507 naming the cause, elects
 * nothing, and a client that retries gets the same answer rather than a 503 forever.
 */
export class StoreRejectedError extends Error {
  constructor(cause: unknown) {
    super(`the state store refused the write: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = "StoreRejectedError";
  }
}

/** The store could not be read or written: the service answers 503 and elects nothing. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`state store unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = "StoreUnavailableError";
  }
}
