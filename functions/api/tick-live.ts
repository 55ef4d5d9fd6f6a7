import type { EffectiveConfig } from "../../schemas/config.ts";
import { type AgentOptions, type ClusterAccess, carryOutAnswer, type RunReport } from "../agent/agent.ts";
import { CatchUpThrottler } from "../agent/catch-up-throttle.ts";
import { readCluster, snapshotOf } from "../agent/snapshot.ts";
import { StoredThrottleRecord } from "../agent/throttle-record.ts";
import {
  BrokerDownError,
  type KafkaAdminClient,
  KafkaConnectError,
  KafkaRequestError,
} from "../kafka/admin.ts";
import type { ClusterClients } from "../kafka/cluster-connections.ts";
import { ConnectionSetupError } from "../kafka/connection-options.ts";
import type { CarriedOut, ClusterRecord, PacerStore, ReachFailure, TickOutcome } from "../store/store.ts";
import type { ManagedAnswer } from "./managed-run.ts";
import { saveTickRun } from "./tick-run.ts";

/**
 * A tick job's run on a cluster with a registered connection: the worker is its agent. It reads the
 * cluster (the agent's own read), runs the managed run, and carries out the batch, in this order:
 *
 * 1. the run is saved with the job's tick key in one conditional write, so that of two deliveries of
 *    a job (or two workers on one cluster) exactly one saves, and only that one goes on;
 * 2. the decision is stored (the decisions feed, the console);
 * 3. the batch is carried out only if the read it was chosen on is still within
 *    `pacer.snapshot.max.age.ms`; a worker that dies after step 1 loses the batch, which elects
 *    nothing: the next run reads the cluster again and chooses again;
 * 4. what Kafka answered is written as the tick's outcome.
 *
 * Whatever fails before step 3 elects nothing. A cluster that cannot be reached is an outcome, not a
 * job failure: the queue does not deliver it again, the next tick tries again.
 */

export interface LiveWorker {
  store: PacerStore;
  clock: () => number;
  clients: ClusterClients;
  decisionTtlMs: number;
  /** The most one cluster's job may take, well inside the function's timeout (default 20 s). */
  budgetMs?: number;
}

export type LiveRun =
  | { status: "done"; outcome: TickOutcome; answer: ManagedAnswer }
  | { status: "unreachable"; outcome: TickOutcome }
  /** Another run saved first: read the record again. */
  | { status: "lost" };

export const DEFAULT_BUDGET_MS = 20_000;
const ERRORS_NOT_AUTHORIZED = new Set([29, 30, 31]);

export class BudgetExceededError extends Error {}

export async function runLive(
  record: ClusterRecord,
  config: EffectiveConfig,
  tick: { key: string },
  worker: LiveWorker,
): Promise<LiveRun> {
  const { store, clock, clients } = worker;
  const { clusterId } = record;
  const budgetMs = worker.budgetMs ?? DEFAULT_BUDGET_MS;
  const startMs = clock();
  const connection = await store.getConnection(clusterId);
  if (!connection) {
    const outcome = reachOutcome(startMs, "setup", "the connection was removed");
    await store.recordTick(clusterId, outcome);
    return { status: "unreachable", outcome };
  }

  let readAtMs = startMs;
  let kafka: KafkaAdminClient;
  let read: Awaited<ReturnType<typeof readCluster>>;
  const withLag = config["leader.imbalance.election.wait.for.sync.max.lag.bytes"] > 0;
  try {
    ({ kafka, read, readAtMs } = await withinBudget(budgetMs, startMs, clock, async () => {
      // A kept client whose sockets died while the function was frozen fails once: one fresh retry.
      for (let attempt = 0; ; attempt++) {
        const { client, kept } = await clients.clientOf(clusterId, connection);
        const readStartMs = clock();
        try {
          return { kafka: client, read: await readCluster(client, withLag), readAtMs: readStartMs };
        } catch (error) {
          await clients.drop(clusterId);
          if (!kept || attempt > 0 || reachFailureOf(error) !== "unreachable") throw error;
        }
      }
    }));
  } catch (error) {
    await clients.drop(clusterId);
    const reach = reachFailureOf(error);
    if (reach === null) throw error;
    const outcome = reachOutcome(clock(), reach, (error as Error).message);
    await store.recordTick(clusterId, outcome);
    return { status: "unreachable", outcome };
  }

  const nowMs = clock();
  const run = await saveTickRun(
    store,
    record,
    { snapshot: snapshotOf(read), config, nowMs, key: tick.key },
    worker.decisionTtlMs,
  );
  if (run === null) return { status: "lost" };
  const { managed } = run;

  const ageMs = clock() - readAtMs;
  const maxAgeMs = config["pacer.snapshot.max.age.ms"];
  let carriedOut: CarriedOut;
  if (managed.elections.length > 0 && ageMs > maxAgeMs) {
    carriedOut = {
      ...tallyOfNothing(managed.elections.length),
      notCarriedOut: `the read it was chosen on was ${ageMs} ms old, over pacer.snapshot.max.age.ms (${maxAgeMs})`,
    };
  } else {
    const report = await withinBudget(budgetMs, startMs, clock, () =>
      carryOutAnswer(
        access(kafka),
        managed,
        false,
        clock(),
        clock,
        throttlerOf(kafka, store, clusterId, clock),
      ),
    ).catch(async (error: Error) => {
      // Out of budget mid-way: what Kafka did is not known, and the next run reads it.
      await clients.drop(clusterId);
      return failedCarryOut(managed, error);
    });
    carriedOut = carriedOutOf(report);
  }
  const outcome: TickOutcome = { ...run.ran, carriedOut };
  // On the run's own summary too, so that it outlives the skips the next ticks record.
  if (run.saved)
    await store.recordCarriedOut(clusterId, record.version + 1, { ...run.saved, carriedOut }, outcome);
  else await store.recordTick(clusterId, outcome);
  return { status: "done", outcome, answer: managed };
}

/** Runs `body` unless the job's budget runs out first; then throws, and the client is dropped by the caller. */
async function withinBudget<T>(
  budgetMs: number,
  startMs: number,
  clock: () => number,
  body: () => Promise<T>,
) {
  const leftMs = budgetMs - (clock() - startMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new BudgetExceededError(`no answer within the worker's budget of ${budgetMs} ms per cluster`)),
      Math.max(0, leftMs),
    );
  });
  try {
    return await Promise.race([body(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function access(kafka: KafkaAdminClient): ClusterAccess {
  return { read: () => readCluster(kafka), electPreferred: (partitions) => kafka.electPreferred(partitions) };
}

/** The catch-up throttle as the agent carries it out, its record read and written on the store directly. */
function throttlerOf(
  kafka: KafkaAdminClient,
  store: PacerStore,
  clusterId: string,
  clock: () => number,
): AgentOptions["catchUp"] {
  const record = new StoredThrottleRecord({
    getThrottleRecord: () => store.getThrottleRecord(clusterId),
    putThrottleRecord: async (body, version) => {
      const written = await store.putThrottleRecord(clusterId, body, version, clock());
      if (written === null)
        throw new Error(
          "the catch-up throttle record changed since it was read: another agent paces this cluster",
        );
      return written;
    },
  });
  return new CatchUpThrottler(kafka, record, clock);
}

const tallyOfNothing = (asked: number): CarriedOut => ({ asked, done: 0, notNeeded: 0, failed: {} });

function failedCarryOut(managed: ManagedAnswer, error: Error): RunReport {
  return {
    atMs: 0,
    durationMs: 0,
    decisionId: managed.decisionId,
    elections: { ...tallyOfNothing(managed.elections.length), requestError: error.message },
    shares: {},
    heldBack: [],
    nextDelayMs: managed.nextDelayMs,
    deferred: managed.deferred,
    dryRun: false,
  };
}

function carriedOutOf(report: RunReport): CarriedOut {
  const { asked, done, notNeeded, failed, requestError } = report.elections;
  return {
    asked,
    done,
    notNeeded,
    failed: { ...failed },
    ...(requestError ? { requestError } : {}),
    ...(report.catchUp?.throttled.length
      ? { throttledBrokers: report.catchUp.throttled.map((t) => t.broker) }
      : {}),
    ...(report.catchUp?.errors.length ? { throttleErrors: report.catchUp.errors } : {}),
  };
}

function reachOutcome(atMs: number, reach: ReachFailure, detail: string): TickOutcome {
  return { atMs, outcome: "unreachable", reach, detail: detail.slice(0, 500) };
}

/** Why a cluster could not be read, or null for a failure that is not about reaching it. */
export function reachFailureOf(error: unknown): ReachFailure | null {
  if (error instanceof ConnectionSetupError) return "setup";
  if (error instanceof KafkaConnectError) return error.kind;
  if (error instanceof BudgetExceededError || error instanceof BrokerDownError) return "unreachable";
  if (error instanceof KafkaRequestError && ERRORS_NOT_AUTHORIZED.has(error.errorCode))
    return "authorization";
  // The client library's answer with errors in it (a topic the principal may not describe): each
  // error carries its Kafka code.
  const inner = (error as { errors?: { apiCode?: number }[] }).errors;
  if (Array.isArray(inner) && inner.some((e) => ERRORS_NOT_AUTHORIZED.has(e.apiCode ?? -1)))
    return "authorization";
  // The connection dropped mid-read (a broker killed, a timeout): as good as unreachable this run.
  if (
    error instanceof Error &&
    /Connection closed|ECONNRESET|ETIMEDOUT|timed out|Timeout/i.test(error.message)
  )
    return "unreachable";
  return null;
}
