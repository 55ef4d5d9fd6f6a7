import type { ConfigOverrides } from "../../schemas/config.ts";
import {
  type AgentObserver,
  type AgentOptions,
  backoffMs,
  carryOutAnswer,
  failedRun,
  sleepUnlessAborted,
} from "./agent.ts";
import type { FeedDecision } from "./pacer-client.ts";
import { snapshotOf } from "./snapshot.ts";

/**
 * `pacer agent --scheduled`: the service's tick decides, the agent only reports and carries out. Every
 * `snapshotIntervalMs` it carries out each decision newer than the last one it saw (`GET
 * …/decisions?after=`), each exactly once (decision ids sort by time, so one listed twice, or older
 * than the last carried out, is skipped), and then stores a fresh snapshot (`PUT …/snapshot`). In that order, the snapshot the
 * next tick decides on already shows the batch just carried out, so no batch is asked for twice. A decision older than `maxDecisionAgeMs`
 * was made on a cluster that has since moved on and is skipped. Decisions made before the agent
 * started are history, not work. A cluster with a connection registered is paced by the service's
 * own worker: its snapshot is refused (409 cluster-connected), and the agent stops rather than carry
 * out the worker's batches a second time.
 */

export interface ScheduledOptions extends Omit<AgentOptions, "once"> {
  /** Stored as the cluster's config, with ticking on, before anything else (retried like the rest). */
  storeConfig: boolean;
  snapshotIntervalMs: number;
  maxDecisionAgeMs: number;
  /** Told of each decision carried out (or skipped as stale). */
  observer: AgentObserver & { skipped?(decision: FeedDecision, ageMs: number): void };
}

/** Runs until stopped; resolves false if it stopped because the service paces the cluster itself. */
export async function runScheduledAgent(options: ScheduledOptions): Promise<boolean> {
  const clock = options.clock ?? Date.now;
  const sleep = options.sleep ?? sleepUnlessAborted;
  let cursor: string | undefined;
  let started = false;
  let failures = 0;
  while (!options.signal.aborted) {
    try {
      if (!started) {
        if (options.storeConfig)
          await options.pacer.putConfig({ ...options.config, "pacer.tick.enabled": true } as ConfigOverrides);
        const history = await options.pacer.decisionsAfter(undefined, 1);
        // A snapshot before anything is carried out: a cluster the service reads itself refuses it. After
        // the history is marked, so that a decision made on it is work, not history.
        await options.pacer.putSnapshot(snapshotOf(await options.cluster.read()));
        cursor = history.at(-1)?.decisionId;
        started = true;
      }
      for (const decision of await options.pacer.decisionsAfter(cursor)) {
        // Decision ids sort by time: one already passed is never carried out again.
        if (cursor !== undefined && decision.decisionId <= cursor) continue;
        cursor = decision.decisionId;
        const ageMs = clock() - decision.evaluatedAtMs;
        if (ageMs > options.maxDecisionAgeMs) {
          options.observer.skipped?.(decision, ageMs);
          continue;
        }
        options.observer.run(
          await carryOutAnswer(options.cluster, decision, options.dryRun, clock(), clock, options.catchUp),
        );
      }
      await options.pacer.putSnapshot(snapshotOf(await options.cluster.read()));
      failures = 0;
      await sleep(options.snapshotIntervalMs, options.signal);
    } catch (error) {
      const report = failedRun(clock(), 0, options.dryRun, error);
      options.observer.run(report);
      if (report.stops) return false;
      await sleep(backoffMs(failures++, options.backoff), options.signal);
    }
  }
  return true;
}
