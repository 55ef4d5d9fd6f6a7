import { describe, expect, it } from "vitest";
import { type RunReport, runAgent } from "../../functions/agent/agent.ts";
import type { FeedDecision, PacerClient } from "../../functions/agent/pacer-client.ts";
import { PacerError } from "../../functions/agent/pacer-error.ts";
import { runScheduledAgent } from "../../functions/agent/scheduled.ts";

/**
 * The scheduled agent's bookkeeping, with the feed and the cluster played by plain objects (the real
 * service and Kafka are in test/kafka/agent.test.ts): every decision is carried out once, in order.
 */
const decision = (id: string, atMs: number, partition: number) =>
  ({
    decisionId: id,
    evaluatedAtMs: atMs,
    elections: [{ topic: "t", partition, leader: 1 }],
    brokers: [],
    nextDelayMs: 1000,
    deferred: null,
  }) as unknown as FeedDecision;

describe("the scheduled agent", () => {
  it("carries out each new decision once, skips history and stale ones, and stores a snapshot after", async () => {
    const now = 1_000_000;
    const feed = [
      [decision("0001", now - 500_000, 0)], // history: the newest before the agent started
      [decision("0002", now - 100, 1), decision("0003", now - 90_000, 2)],
      [decision("0002", now - 100, 1), decision("0004", now - 50, 3)], // 0002 listed again
      [],
    ];
    const calls: string[] = [];
    const elected: number[] = [];
    const stop = new AbortController();
    const pacer = {
      async decisionsAfter(after: string | undefined) {
        calls.push(`decisions after ${after}`);
        const next = feed.shift() ?? [];
        if (feed.length === 0) stop.abort();
        return [...next].sort((a, b) => (a.decisionId < b.decisionId ? -1 : 1));
      },
      async putSnapshot() {
        calls.push("snapshot");
        return { snapshotId: "s" };
      },
      async putConfig() {
        calls.push("config");
      },
    } as unknown as PacerClient;
    const runs: RunReport[] = [];
    await runScheduledAgent({
      cluster: {
        read: async () => ({ brokers: [], partitions: [], reassigning: [] }),
        electPreferred: async (partitions) => {
          elected.push(...partitions.map((p) => p.partition));
          return partitions.map((p) => ({ ...p, errorCode: 0, errorMessage: null }));
        },
      },
      pacer,
      config: {},
      storeConfig: true,
      dryRun: false,
      observer: { run: (report) => runs.push(report), skipped: () => calls.push("skipped stale") },
      signal: stop.signal,
      snapshotIntervalMs: 1,
      maxDecisionAgeMs: 60_000,
      clock: () => now,
      sleep: async () => {},
    });
    expect(elected).toEqual([1, 3]);
    expect(runs.map((r) => r.decisionId)).toEqual(["0002", "0004"]);
    expect(calls).toEqual([
      "config",
      "decisions after undefined",
      "snapshot",
      "decisions after 0001",
      "skipped stale",
      "snapshot",
      "decisions after 0003",
      "snapshot",
      "decisions after 0004",
      "snapshot",
    ]);
  });
});

describe("an agent beside a cluster the service reads itself", () => {
  const connected = () =>
    new PacerError(409, 'Cluster "c" has a connection registered', "/problems/cluster-connected");
  const cluster = {
    read: async () => ({ brokers: [], partitions: [], reassigning: [] }),
    electPreferred: async () => {
      throw new Error("nothing is elected");
    },
  };
  const options = (pacer: Partial<PacerClient>, runs: RunReport[]) => ({
    cluster,
    pacer: pacer as PacerClient,
    config: {},
    dryRun: false,
    observer: { run: (report: RunReport) => runs.push(report) },
    signal: new AbortController().signal,
    sleep: async () => {},
  });

  it("stops, scheduled, at its first snapshot: before carrying out any decision of the service's", async () => {
    const runs: RunReport[] = [];
    const decisionsAfter = async () => [decision("0001", Date.now(), 0)];
    const stopped = await runScheduledAgent({
      ...options({ putSnapshot: () => Promise.reject(connected()), decisionsAfter }, runs),
      storeConfig: false,
      snapshotIntervalMs: 1,
      maxDecisionAgeMs: 60_000,
    });
    expect(stopped).toBe(false);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ stops: true, error: expect.stringContaining("connection registered") });
  });

  it("stops, managed, at the first run the service refuses; another failure is retried", async () => {
    const runs: RunReport[] = [];
    let answers = 0;
    const evaluate = () =>
      ++answers === 1
        ? Promise.reject(new PacerError(503, "store unavailable"))
        : Promise.reject(connected());
    expect(await runAgent({ ...options({ evaluate }, runs), once: false })).toBe(false);
    expect(runs.map((r) => r.stops ?? false)).toEqual([false, true]);
  });
});
