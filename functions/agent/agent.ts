import type { ConfigOverrides } from "../../schemas/config.ts";
import type { ManagedAnswer } from "../api/managed-run.ts";
import type { ElectionResult, TopicPartition } from "../kafka/admin.ts";
import { type CatchUpThrottler, emptyThrottleReport, type ThrottleReport } from "./catch-up-throttle.ts";
import type { PacerClient } from "./pacer-client.ts";
import { PacerError } from "./pacer-error.ts";
import { type ClusterRead, snapshotOf } from "./snapshot.ts";

/**
 * `pacer agent`: each run reads the cluster, asks the pacer for a decision and carries out exactly the
 * returned preferred-leader elections, then sleeps the answer's `nextDelayMs`. Whatever fails (the
 * read, the pacer, its store) elects nothing: leadership stays where it is, and the run is retried
 * with backoff. Stopping ends the agent between runs, never with an election request unanswered.
 */

export interface ClusterAccess {
  read(): Promise<ClusterRead>;
  electPreferred(partitions: TopicPartition[]): Promise<ElectionResult[]>;
}

export const ERROR_NONE = 0;
export const ERROR_UNKNOWN_TOPIC_OR_PARTITION = 3;
export const ERROR_PREFERRED_LEADER_NOT_AVAILABLE = 80;
export const ERROR_ELECTION_NOT_NEEDED = 84;

export interface ElectionTally {
  asked: number;
  done: number;
  notNeeded: number;
  /** Per Kafka error code: 80 and 3 are expected now and then; anything else is worth a look. */
  failed: Record<number, number>;
  /** The whole request failed: nothing more was elected this run. */
  requestError?: string;
}

export interface RunReport {
  atMs: number;
  durationMs: number;
  decisionId?: string;
  elections: ElectionTally;
  /** Per broker with imbalanced preferred partitions: gated or not, how many were eligible and elected. */
  shares: Record<number, { gated: boolean; eligible: number; elected: number }>;
  /** The gated brokers, each with when its gating episode began (the max-wait clock's start). */
  heldBack: {
    id: number;
    reason: string;
    outOfSync: number;
    total: number;
    lagBytes?: number;
    gatedSinceMs: number | null;
  }[];
  nextDelayMs: number;
  deferred: ManagedAnswer["deferred"];
  dryRun: boolean;
  /** A dry run's batch, in selection order: what would have been elected. */
  batch?: { topic: string; partition: number; leader: number }[];
  /** Why nothing was asked of Kafka: the read or the pacer failed. */
  error?: string;
  /** Which of the two failed, when the run knows. */
  failedStep?: FailedStep;
  /** The first run through after failed ones: how long nothing was elected, and why the last one failed. */
  resumed?: { afterMs: number; failedRuns: number; lastFailedStep?: FailedStep };
  /** Catch-up pacing: what is throttled after this run, what was lifted, what could not be done. */
  catchUp?: ThrottleReport;
  /** The agent stops after this run: the service reads and paces the cluster itself. */
  stops?: true;
}

export function tallyOf(asked: number, results: ElectionResult[]): ElectionTally {
  const tally: ElectionTally = { asked, done: 0, notNeeded: 0, failed: {} };
  for (const result of results) {
    if (result.errorCode === ERROR_NONE) tally.done++;
    else if (result.errorCode === ERROR_ELECTION_NOT_NEEDED) tally.notNeeded++;
    else tally.failed[result.errorCode] = (tally.failed[result.errorCode] ?? 0) + 1;
  }
  return tally;
}

/** Carries out a batch; a request-level error is a result too, so the run still reports and sleeps. */
async function carryOut(
  cluster: ClusterAccess,
  elections: TopicPartition[],
  dryRun: boolean,
): Promise<ElectionTally> {
  if (dryRun || elections.length === 0) return tallyOf(elections.length, []);
  try {
    return tallyOf(elections.length, await cluster.electPreferred(elections));
  } catch (error) {
    return { ...tallyOf(elections.length, []), requestError: (error as Error).message };
  }
}

function sharesOf(answer: ManagedAnswer): RunReport["shares"] {
  return Object.fromEntries(
    answer.brokers.map((b) => [b.id, { gated: b.gated, eligible: b.eligible, elected: b.elected }]),
  );
}

function heldBackOf(answer: ManagedAnswer): RunReport["heldBack"] {
  return answer.brokers
    .filter((b) => b.gated)
    .map(({ id, reason, outOfSync, total, lagBytes, gatedSinceMs }) => ({
      id,
      reason,
      outOfSync,
      total,
      lagBytes,
      gatedSinceMs,
    }));
}

export interface AgentObserver {
  run(report: RunReport): void;
}

export interface AgentOptions {
  cluster: ClusterAccess;
  pacer: PacerClient;
  config: ConfigOverrides;
  dryRun: boolean;
  once: boolean;
  observer: AgentObserver;
  /** Sets and lifts the answers' catch-up throttles; without it they are not carried out. */
  catchUp?: Pick<CatchUpThrottler, "apply">;
  /** Aborted by SIGTERM/SIGINT: the agent finishes the run it is in and returns. */
  signal: AbortSignal;
  clock?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  backoff?: { initialMs: number; maxMs: number };
}

export const DEFAULT_BACKOFF = { initialMs: 1_000, maxMs: 30_000 };

/** An abortable sleep that resolves early (never rejects) when the signal fires. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Exponential backoff with full jitter: attempt 0 waits up to `initialMs`. */
export function backoffMs(attempt: number, backoff = DEFAULT_BACKOFF, random = Math.random): number {
  return Math.round(random() * Math.min(backoff.maxMs, backoff.initialMs * 2 ** attempt));
}

export type FailedStep = "reading the cluster" | "asking the pacer";

/** An error's message and, for a network error, what lies under it (`fetch failed` alone says little). */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error.cause as (Error & { code?: string }) | undefined) : undefined;
  if (!cause || !(cause instanceof Error) || message.includes(cause.message)) return message;
  return `${message} (${cause.code ?? cause.message})`;
}

/** The report of a run that elected nothing: the read, the pacer or its store failed. */
export function failedRun(
  atMs: number,
  durationMs: number,
  dryRun: boolean,
  error: unknown,
  failedStep?: FailedStep,
): RunReport {
  const base = { atMs, durationMs, dryRun, heldBack: [], shares: {}, deferred: null, nextDelayMs: 0 };
  return {
    ...base,
    elections: tallyOf(0, []),
    error: describeFailure(error),
    ...(failedStep ? { failedStep } : {}),
    ...(error instanceof PacerError && error.clusterConnected ? { stops: true as const } : {}),
  };
}

/** Counts failed runs since the last one through, so that the run after an outage says how long it was. */
export class OutageTracker {
  private since: number | undefined;
  private failedRuns = 0;
  private lastFailedStep: FailedStep | undefined;

  /** Notes a run's outcome; adds `resumed` to the first run through after failed ones. */
  note(report: RunReport): RunReport {
    if (report.error !== undefined) {
      this.since ??= report.atMs;
      this.failedRuns++;
      this.lastFailedStep = report.failedStep;
      return report;
    }
    if (this.since === undefined) return report;
    const resumed = {
      afterMs: report.atMs - this.since,
      failedRuns: this.failedRuns,
      ...(this.lastFailedStep ? { lastFailedStep: this.lastFailedStep } : {}),
    };
    this.since = undefined;
    this.failedRuns = 0;
    this.lastFailedStep = undefined;
    return { ...report, resumed };
  }
}

/**
 * Carries out an answer (from a run, or from the decisions feed) and reports it: the elections, then
 * the catch-up throttles, two actuators side by side that know nothing of each other.
 */
export async function carryOutAnswer(
  cluster: ClusterAccess,
  answer: ManagedAnswer,
  dryRun: boolean,
  atMs: number,
  clock: () => number,
  catchUp?: AgentOptions["catchUp"],
): Promise<RunReport> {
  const elections = await carryOut(cluster, answer.elections, dryRun);
  // A service that predates catch-up pacing answers none: nothing of ours is wanted.
  const throttles = catchUp
    ? await catchUp.apply(answer.catchUpThrottles ?? [], dryRun).catch((error: Error) => ({
        ...emptyThrottleReport(),
        errors: [error.message],
      }))
    : undefined;
  return {
    atMs,
    durationMs: clock() - atMs,
    decisionId: answer.decisionId,
    elections,
    shares: sharesOf(answer),
    heldBack: heldBackOf(answer),
    nextDelayMs: answer.nextDelayMs,
    deferred: answer.deferred,
    dryRun,
    ...(dryRun ? { batch: answer.elections } : {}),
    ...(throttles ? { catchUp: throttles } : {}),
  };
}

/** One run: read, decide, elect. Never throws; a failure before the elections is the report's `error`. */
export async function runOnce(options: AgentOptions): Promise<RunReport> {
  const clock = options.clock ?? Date.now;
  const atMs = clock();
  let answer: ManagedAnswer;
  let step: FailedStep = "reading the cluster";
  try {
    const snapshot = snapshotOf(await options.cluster.read());
    step = "asking the pacer";
    // A dry run must not advance the gate's hysteresis or the throttle either.
    answer = await options.pacer.evaluate(snapshot, options.config, options.dryRun);
  } catch (error) {
    return failedRun(atMs, clock() - atMs, options.dryRun, error, step);
  }
  return carryOutAnswer(options.cluster, answer, options.dryRun, atMs, clock, options.catchUp);
}

/** Runs until stopped (or once). Resolves with false if the last run failed, for `--once`'s exit code. */
export async function runAgent(options: AgentOptions): Promise<boolean> {
  const sleep = options.sleep ?? sleepUnlessAborted;
  let failures = 0;
  const outage = new OutageTracker();
  while (!options.signal.aborted) {
    const report = outage.note(await runOnce(options));
    options.observer.run(report);
    if (options.once || report.stops) return report.error === undefined;
    if (report.error !== undefined) {
      await sleep(backoffMs(failures++, options.backoff), options.signal);
      continue;
    }
    failures = 0;
    await sleep(report.nextDelayMs, options.signal);
  }
  return true;
}
