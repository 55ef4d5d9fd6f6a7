import { gzipSync } from "node:zlib";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countingStore } from "../../devkit/counting-store.ts";
import { inProcess, type ManagedAnswer, managedRun } from "../../functions/api/managed-run.ts";
import { type JobQueue, runTick, snapshotIdOf, type TickJob } from "../../functions/api/tick.ts";
import { type JobResult, runTickJob, type TickWorker } from "../../functions/api/tick-job.ts";
import { dynamoClient } from "../../functions/store/client.ts";
import type { PacerStore } from "../../functions/store/store.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { afterElections, preferredPartitionsOf, snapshotOf } from "../support/cluster.ts";
import { openStore, type TestStore } from "../support/stores.ts";

/**
 * The tick's rules on a virtual clock: the tick and its jobs on a real store (DynamoDB Local), with a
 * queue that delivers each job at its time on that clock, and an agent beside each cluster that
 * carries out each published batch and stores the resulting snapshot some time later.
 */

let backing: TestStore;
beforeAll(async () => {
  backing = await openStore("DynamoDB Local");
});
afterAll(() => backing.close());

const start = 1_800_000_000_000;
const caughtUp = snapshotOf(preferredPartitionsOf(1, 10));
const RAMP: ConfigOverrides = {
  "pacer.tick.enabled": true,
  "leader.imbalance.election.max.per.run": 3,
  "leader.imbalance.election.throttle.interval.ms": 15_000,
};

async function storeSnapshot(store: PacerStore, clusterId: string, snapshot: Snapshot, receivedAtMs: number) {
  const bytes = Buffer.from(JSON.stringify(snapshot));
  await store.putSnapshot(clusterId, gzipSync(bytes), {
    snapshotId: snapshotIdOf(bytes, receivedAtMs),
    receivedAtMs,
    partitionCount: snapshot.partitions.length,
  });
}

/** A fleet on a virtual clock: ticks, a queue that delivers at the clock's times, agents. */
function virtualFleet(store: PacerStore, agentDelayMs: Record<string, number>) {
  let clockMs = start;
  const clock = () => clockMs;
  const waiting: { job: TickJob; atMs: number }[] = [];
  const results: JobResult[] = [];
  const published: { clusterId: string; answer: ManagedAnswer }[] = [];
  const carriedOut = new Map<string, { snapshot: Snapshot; batches: number }>();
  const queue: JobQueue = {
    send: async (jobs) => {
      for (const { job, delayMs } of jobs) waiting.push({ job, atMs: clockMs + delayMs });
    },
  };
  const worker: TickWorker = {
    store,
    queue,
    clock,
    decisionTtlMs: 86_400_000,
    publisher: { publish: async (clusterId, answer) => void published.push({ clusterId, answer }) },
  };
  /** Each agent stores the snapshot after each batch it has carried out by now. */
  const agents = async () => {
    for (const [clusterId, delayMs] of Object.entries(agentDelayMs)) {
      const batches = published.filter((p) => p.clusterId === clusterId).map((p) => p.answer);
      const done = carriedOut.get(clusterId) ?? { snapshot: caughtUp, batches: 0 };
      for (const batch of batches.slice(done.batches)) {
        if (batch.evaluatedAtMs + delayMs > clockMs) break;
        done.snapshot = afterElections(done.snapshot, batch);
        done.batches++;
        await storeSnapshot(store, clusterId, done.snapshot, batch.evaluatedAtMs + delayMs);
      }
      carriedOut.set(clusterId, done);
    }
  };
  return {
    clock,
    results,
    /** Ticks at `atMs` and delivers every job (and follow-up) at its time. */
    async tick(atMs: number) {
      clockMs = atMs;
      await agents();
      await runTick({ store, queue, clock, scheduledAtMs: atMs, untilMs: atMs + 60_000 });
      for (;;) {
        waiting.sort((a, b) => a.atMs - b.atMs);
        const next = waiting.shift();
        if (next === undefined) return;
        clockMs = Math.max(clockMs, next.atMs);
        await agents();
        results.push(await runTickJob(next.job, worker));
      }
    },
    runsOf: (clusterId: string) =>
      results
        .filter((r) => r.clusterId === clusterId)
        .map((r) => [r.atMs - start, r.outcome, r.elections] as const),
  };
}

describe("a tick's jobs on a virtual clock", () => {
  it("runs a capped cluster again at its throttle interval once the agent stored the result", async () => {
    await backing.store.putConfig("ramp", RAMP, start);
    await storeSnapshot(backing.store, "ramp", caughtUp, start - 1_000);
    const fleet = virtualFleet(backing.store, { ramp: 1_000 });
    await fleet.tick(start);
    expect(fleet.runsOf("ramp")).toEqual([
      [0, "ran", 3],
      [15_000, "ran", 3],
      [30_000, "ran", 3],
      [45_000, "ran", 1],
    ]);
    expect((await backing.store.getCluster("ramp"))?.lastDecision).toMatchObject({ moreWorkRemains: false });
  });

  it("waits for a slow agent's snapshot, looking again every 2 s, and stops at the tick's window", async () => {
    await backing.store.putConfig("slow-agent", RAMP, start);
    await storeSnapshot(backing.store, "slow-agent", caughtUp, start - 1_000);
    const fleet = virtualFleet(backing.store, { "slow-agent": 20_000 });
    await fleet.tick(start);
    // Due 15 s after each run; the snapshot comes 20 s after it; it is seen at the next 2 s look.
    expect(fleet.runsOf("slow-agent").filter(([, outcome]) => outcome === "ran")).toEqual([
      [0, "ran", 3],
      [21_000, "ran", 3],
      [42_000, "ran", 3],
    ]);
    // Nothing is looked at, let alone run, at or after the window's end.
    expect(Math.max(...fleet.runsOf("slow-agent").map(([atMs]) => atMs))).toBeLessThan(60_000);

    // The next tick finds the ramp mid-way and follows it on as soon as the last batch is stored.
    await fleet.tick(start + 60_000);
    expect(
      fleet.runsOf("slow-agent").filter(([atMs, outcome]) => atMs >= 60_000 && outcome === "ran"),
    ).toEqual([[62_000, "ran", 1]]);
  });

  it("never runs the same snapshot twice while it waits for an agent that never answers", async () => {
    await backing.store.putConfig("stalled", RAMP, start);
    await storeSnapshot(backing.store, "stalled", caughtUp, start - 1_000);
    const fleet = virtualFleet(backing.store, { stalled: Number.POSITIVE_INFINITY });
    await fleet.tick(start);
    expect(fleet.runsOf("stalled").filter(([, outcome]) => outcome === "ran")).toEqual([[0, "ran", 3]]);
    expect((await backing.store.getCluster("stalled"))?.version).toBe(1);
  });

  it("skips a cluster that is not due, whose snapshot is stale or unchanged, and writes a skip once", async () => {
    const config = { "pacer.tick.enabled": true, "pacer.snapshot.max.age.ms": 600_000 };
    await backing.store.putConfig("skip", config, start);
    await storeSnapshot(backing.store, "skip", caughtUp, start - 10_000);
    const fleet = virtualFleet(backing.store, {});
    const tickAt = async (ms: number) => {
      const queue: JobQueue = { send: async () => undefined };
      const report = await runTick({
        store: backing.store,
        queue,
        clock: () => ms,
        scheduledAtMs: ms,
        untilMs: ms + 60_000,
      });
      return report.clusters.find((c) => c.clusterId === "skip")?.outcome;
    };
    await fleet.tick(start);
    expect(fleet.runsOf("skip")).toEqual([[0, "ran", 10]]);
    // Not capped: the next run is due after the check interval (300 s).
    expect(await tickAt(start + 60_000)).toBe("not-due");
    const notDue = (await backing.store.getCluster("skip"))?.lastTick;
    expect(notDue).toEqual({ atMs: start + 60_000, outcome: "not-due" });
    expect(await tickAt(start + 120_000)).toBe("not-due");
    // The same skip again is not written: the record says since when.
    expect((await backing.store.getCluster("skip"))?.lastTick).toEqual(notDue);
    // Due, but the snapshot is the one the last run used: its elections may not have been carried out.
    expect(await tickAt(start + 300_000)).toBe("snapshot-unchanged");
    expect(await tickAt(start + 10 * 60_000)).toBe("stale-snapshot");
    expect((await backing.store.getCluster("skip"))?.lastTick).toMatchObject({ outcome: "stale-snapshot" });
  });
});

describe("a job that fails", () => {
  it("records the failure as the cluster's last tick, and throws so that the queue delivers it again", async () => {
    await backing.store.putConfig("corrupt", { "pacer.tick.enabled": true }, start);
    await storeSnapshot(backing.store, "corrupt", caughtUp, start - 1_000);
    const meta = (await backing.store.getCluster("corrupt"))?.snapshot;
    // The stored snapshot's bytes damaged in the table: a fault only a raw write can cause.
    const client = dynamoClient({ endpoint: backing.endpoint });
    await client.send(
      new PutItemCommand({
        TableName: backing.tableName,
        Item: {
          pk: { S: "cluster#corrupt" },
          sk: { S: `snapshot#${meta?.snapshotId}#000` },
          body: { B: Buffer.from("not gzip") },
          expiresAt: { N: String(Math.ceil(start / 1000) + 86_400) },
        },
      }),
    );
    client.destroy();
    const worker: TickWorker = {
      store: backing.store,
      queue: { send: async () => undefined },
      clock: () => start,
      decisionTtlMs: 60_000,
    };
    const job: TickJob = {
      clusterId: "corrupt",
      scheduledAtMs: start,
      run: 1,
      untilMs: start + 60_000,
      fleetConfig: {},
    };
    await expect(runTickJob(job, worker)).rejects.toThrow();
    const stored = await backing.store.getCluster("corrupt");
    expect(stored?.lastTick).toMatchObject({
      atMs: start,
      outcome: "failed",
      detail: expect.stringMatching(/header|gzip|check/i),
    });
    expect(stored?.version).toBe(0);
  });
});

describe("store calls", () => {
  const partitions = 2_000;
  const snapshot = snapshotOf(preferredPartitionsOf(1, partitions, { outOfSync: 0 }));

  it("a ticked cluster costs at most 4, a managed run without a key at most 3", async () => {
    const counting = countingStore(backing.endpoint, backing.tableName);
    try {
      for (const clusterId of ["calls-a", "calls-b", "calls-c"]) {
        await counting.store.putConfig(clusterId, { "pacer.tick.enabled": true }, start);
        await storeSnapshot(counting.store, clusterId, snapshot, start - 1_000);
      }
      const sent: TickJob[] = [];
      counting.reset();
      await runTick({
        store: counting.store,
        queue: { send: async (jobs) => void sent.push(...jobs.map(({ job }) => job)) },
        clock: () => start,
        scheduledAtMs: start,
        untilMs: start + 60_000,
      });
      // The fleet config once, the listing once per 100 clusters.
      expect(Object.fromEntries(counting.calls)).toMatchObject({ GetItemCommand: 1, QueryCommand: 1 });
      const ticked = sent.filter((job) => job.clusterId.startsWith("calls-"));
      expect(ticked).toHaveLength(3);
      for (const job of ticked) {
        counting.reset();
        const worker = {
          store: counting.store,
          queue: { send: async () => undefined },
          clock: () => start,
          decisionTtlMs: 60_000,
        };
        expect(await runTickJob(job, worker)).toMatchObject({ outcome: "ran", status: "done" });
        expect(Object.fromEntries(counting.calls)).toEqual({
          GetItemCommand: 1, // the cluster
          QueryCommand: 1, // its snapshot
          UpdateItemCommand: 1, // the run, with its tick key
          PutItemCommand: 1, // the decision
        });
      }

      counting.reset();
      const request = { snapshot, config: {}, state: undefined, nowMs: undefined };
      const options = {
        clock: () => start,
        dryRun: false,
        explain: false,
        decisionTtlMs: 60_000,
        idempotencyTtlMs: 60_000,
      };
      const response = await managedRun(
        counting.store,
        "managed",
        inProcess(request),
        Buffer.from(""),
        options,
      );
      expect(response.status).toBe(200);
      expect(Object.fromEntries(counting.calls)).toEqual({
        BatchGetItemCommand: 1, // the cluster and the fleet config
        UpdateItemCommand: 1, // the run
        PutItemCommand: 1, // the decision
      });
    } finally {
      counting.close();
    }
  });
});
