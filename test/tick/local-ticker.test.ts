import { setTimeout as delay } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { snapshotIdOf, type TickJob } from "../../functions/api/tick.ts";
import type { JobResult } from "../../functions/api/tick-job.ts";
import { LocalJobQueue } from "../../functions/queue/local-queue.ts";
import { LocalTicker } from "../../functions/queue/local-ticker.ts";
import { preferredPartitionsOf, snapshotOf } from "../support/cluster.ts";
import { openStore, type TestStore } from "../support/stores.ts";

/** The tick inside one process: a bounded pool, and timers that never pass the tick's window. */

const job = (clusterId: string): TickJob => ({
  clusterId,
  scheduledAtMs: 0,
  run: 1,
  untilMs: Number.MAX_SAFE_INTEGER,
  fleetConfig: {},
});

describe("the local job queue", () => {
  it("runs at most `concurrency` jobs at once, every job once, a delayed one no sooner than asked", async () => {
    let running = 0;
    let most = 0;
    const ran: { clusterId: string; atMs: number }[] = [];
    const queue = new LocalJobQueue(
      async ({ clusterId }) => {
        running++;
        most = Math.max(most, running);
        await delay(20);
        ran.push({ clusterId, atMs: Date.now() });
        running--;
      },
      4,
      () => undefined,
    );
    const sentAtMs = Date.now();
    await queue.send(Array.from({ length: 20 }, (_, i) => ({ job: job(`c${i}`), delayMs: 0 })));
    await queue.send([{ job: job("later"), delayMs: 150 }]);
    await queue.drained();
    expect(most).toBe(4);
    expect(ran).toHaveLength(21);
    expect(ran.find((r) => r.clusterId === "later")!.atMs - sentAtMs).toBeGreaterThanOrEqual(150);
  });

  it("reports a job that throws and goes on; closing drops the jobs that wait for their time", async () => {
    const failed: string[] = [];
    const ran: string[] = [];
    const queue = new LocalJobQueue(
      async ({ clusterId }) => {
        if (clusterId === "bad") throw new Error("store unavailable");
        ran.push(clusterId);
      },
      2,
      ({ clusterId }, error) => failed.push(`${clusterId}: ${error.message}`),
    );
    await queue.send([
      { job: job("bad"), delayMs: 0 },
      { job: job("good"), delayMs: 0 },
      { job: job("never"), delayMs: 60_000 },
    ]);
    await delay(50);
    expect(queue.pending).toBe(1);
    await queue.close();
    expect({ ran, failed, pending: queue.pending }).toEqual({
      ran: ["good"],
      failed: ["bad: store unavailable"],
      pending: 0,
    });
  });
});

describe("the local ticker", () => {
  let backing: TestStore;
  beforeAll(async () => {
    backing = await openStore("dynalite");
  });
  afterAll(() => backing.close());

  it("follows a ramp with timers until the tick's window ends, and never past it", async () => {
    const clusterId = "stalled";
    await backing.store.putConfig(
      clusterId,
      {
        "pacer.tick.enabled": true,
        "leader.imbalance.election.max.per.run": 3,
        "leader.imbalance.election.throttle.interval.ms": 200,
      },
      Date.now(),
    );
    const snapshot = snapshotOf(preferredPartitionsOf(1, 10));
    const bytes = Buffer.from(JSON.stringify(snapshot));
    const receivedAtMs = Date.now();
    await backing.store.putSnapshot(clusterId, gzipSync(bytes), {
      snapshotId: snapshotIdOf(bytes, receivedAtMs),
      receivedAtMs,
      partitionCount: 10,
    });
    const results: JobResult[] = [];
    const ticker = new LocalTicker({
      store: backing.store,
      tickMs: 1_500,
      concurrency: 4,
      decisionTtlMs: 60_000,
      snapshotPollMs: 200,
      onJob: (result) => results.push(result),
    });
    const scheduledAtMs = Date.now();
    await ticker.tick(scheduledAtMs);
    await ticker.queue.drained();
    // No agent stores a newer snapshot: one run, then a look every 200 ms until the window closes.
    expect(results.map((r) => r.outcome)[0]).toBe("ran");
    expect(results.slice(1).every((r) => r.outcome === "snapshot-unchanged")).toBe(true);
    expect(results.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...results.map((r) => r.atMs))).toBeLessThan(scheduledAtMs + 1_500);
    expect((await backing.store.getCluster(clusterId))?.version).toBe(1);
    await ticker.stop();
  });
});
