import { gzipSync } from "node:zlib";
import { ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { snapshotIdOf, tickKeyOf } from "../../functions/api/tick.ts";
import { createTickHandler } from "../../functions/handlers/lambda-tick.ts";
import { createWorkerHandler } from "../../functions/handlers/lambda-worker.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { afterElections, preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { type EventBridgeEndpoint, startEventBridgeEndpoint } from "../support/eventbridge.ts";
import { createQueues, deliverAll, queueDepth, receive, sqsEvent, type TestQueues } from "../support/sqs.ts";
import { openStore, type TestStore } from "../support/stores.ts";

/**
 * The tick fanned out as on AWS: the tick handler queues jobs on a real SQS-protocol server
 * (ElasticMQ), the worker handler takes them as Lambda's event source mapping hands them over, with
 * redelivery after the visibility timeout and a dead-letter queue; DynamoDB Local holds the state.
 */

let backing: TestStore;
let eventBridge: EventBridgeEndpoint;
let queues: TestQueues;
let env: Record<string, string>;
const writeStdout = process.stdout.write;
beforeAll(async () => {
  eventBridge = await startEventBridgeEndpoint();
  // The handlers' structured logs and EMF records: checked in test/lambda, silenced here.
  process.stdout.write = (() => true) as typeof process.stdout.write;
});
// Each test has a table and queues of its own, so that it sees only its own clusters and jobs.
beforeEach(async () => {
  backing = await openStore("DynamoDB Local");
  queues = await createQueues(inject("sqsEndpoint"), { visibilitySeconds: 1, maxReceiveCount: 3 });
  env = {
    PACER_TABLE: backing.tableName,
    DYNAMODB_ENDPOINT: backing.endpoint,
    PACER_EVENT_BUS: "leadership-pacer",
    EVENTBRIDGE_ENDPOINT: eventBridge.url,
    PACER_TICK_QUEUE_URL: queues.queueUrl,
    SQS_ENDPOINT: inject("sqsEndpoint"),
  };
});
afterAll(async () => {
  process.stdout.write = writeStdout;
  await eventBridge.close();
});
afterEach(async () => {
  eventBridge.entries.length = 0;
  eventBridge.failNext = 0;
  // Every job was delivered and settled: none left behind in the queue.
  expect(await queueDepth(queues.client, queues.queueUrl)).toBe(0);
  queues.client.destroy();
  await backing.close();
});

const now = Date.now();
const at = (ms: number) => new Date(ms).toISOString();
const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
const caughtUp = snapshotOf(preferredPartitionsOf(1, 10));

async function storeSnapshot(clusterId: string, snapshot: Snapshot, receivedAtMs: number) {
  const bytes = Buffer.from(JSON.stringify(snapshot));
  await backing.store.putSnapshot(clusterId, gzipSync(bytes), {
    snapshotId: snapshotIdOf(bytes, receivedAtMs),
    receivedAtMs,
    partitionCount: snapshot.partitions.length,
  });
}

/** Runs the tick of `scheduledAtMs` and delivers every job it queued (and their follow-ups) to the worker. */
async function tickAndDeliver(scheduledAtMs: number, clock: () => number = Date.now, environment = env) {
  const tick = await createTickHandler(environment, clock)({ scheduledAt: at(scheduledAtMs) });
  const worker = createWorkerHandler(environment, clock);
  const results: Record<string, unknown>[] = [];
  await deliverAll(queues, async (event) => {
    const response = await worker(event);
    results.push(...event.Records.map((r) => JSON.parse(r.body)));
    return response;
  });
  return { tick, jobs: results };
}

const detailsOf = (clusterId: string) =>
  eventBridge.entries.map((entry) => JSON.parse(entry.Detail)).filter((d) => d.clusterId === clusterId);

describe("the tick fanned out through SQS", () => {
  it("queues the due clusters, and the worker runs each with its own config and publishes its batch", async () => {
    await backing.store.putConfig(
      "tick-a",
      { "pacer.tick.enabled": true, "leader.imbalance.election.max.per.run": 3 },
      now,
    );
    await backing.store.putConfig("tick-b", { "pacer.tick.enabled": "true" as never, ...WAIT_FOR_SYNC }, now);
    await backing.store.putConfig("tick-off", {}, now);
    await backing.store.putConfig("tick-empty", { "pacer.tick.enabled": true }, now);
    await storeSnapshot("tick-a", caughtUp, now - 10_000);
    await storeSnapshot("tick-b", behind, now - 10_000);
    await storeSnapshot("tick-off", caughtUp, now - 10_000);

    // A window too short for tick-a's next run (due after 15 s): the next tick would take it on.
    const { tick } = await tickAndDeliver(now, Date.now, { ...env, PACER_TICK_WINDOW_SECONDS: "5" });
    const planned = Object.fromEntries(tick.clusters.map((c) => [c.clusterId, c.outcome]));
    expect(planned).toMatchObject({
      "tick-a": "queued",
      "tick-b": "queued",
      "tick-off": "not-enabled",
      "tick-empty": "no-snapshot",
    });

    const [batch, ...others] = detailsOf("tick-a");
    expect(others).toEqual([]);
    expect(batch).toMatchObject({ part: 1, parts: 1 });
    expect(batch.kafkaLeaderElection.partitions).toHaveLength(3);
    expect(detailsOf("tick-b")).toEqual([]);

    const a = await backing.store.getCluster("tick-a");
    expect(a?.lastTick).toMatchObject({ outcome: "ran", decisionId: batch.decisionId });
    expect(a?.lastTickKey).toBe(tickKeyOf({ scheduledAtMs: now, run: 1 }));
    const b = await backing.store.getCluster("tick-b");
    expect(b?.state?.brokers).toEqual([{ id: 1, gatedSinceMs: expect.any(Number), clearRuns: 0 }]);
    expect((await backing.store.getCluster("tick-off"))?.lastTick).toMatchObject({ outcome: "not-enabled" });
  });

  it("runs a job delivered twice, and a retried tick's jobs, once: hysteresis advances by one run", async () => {
    const config = {
      "pacer.tick.enabled": true,
      ...WAIT_FOR_SYNC,
      "leader.imbalance.check.interval.seconds": 1,
    };
    await backing.store.putConfig("twice", config, now);
    await storeSnapshot("twice", behind, now - 1_000);
    const scheduledAtMs = now + 3_600_000;
    await createTickHandler(env)({ scheduledAt: at(scheduledAtMs) });
    const messages = await receive(queues.client, queues.queueUrl);
    const job = messages.find((m) => JSON.parse(m.Body ?? "").clusterId === "twice");
    expect(job).toBeDefined();
    // At-least-once: the same message twice at once, then again later, and the schedule retrying the
    // tick after a new snapshot arrived and the cluster came due again.
    const worker = createWorkerHandler(env);
    const copies = await Promise.all([worker(sqsEvent([job!])), worker(sqsEvent([job!]))]);
    expect(copies.flatMap((c) => c.batchItemFailures)).toEqual([]);
    await storeSnapshot("twice", behind, Date.now());
    await worker(sqsEvent([job!]));
    await tickAndDeliver(scheduledAtMs);
    // The messages received by hand come back after their visibility timeout: delivered once more.
    await deliverAll(queues, worker);

    const stored = await backing.store.getCluster("twice");
    expect(stored?.version).toBe(1);
    expect(stored?.state?.brokers).toEqual([{ id: 1, gatedSinceMs: expect.any(Number), clearRuns: 0 }]);
    const decisions = await backing.store.listDecisions("twice", { limit: 10, nowMs: Date.now() });
    expect(decisions).toHaveLength(1);

    // The next scheduled tick runs it again.
    await storeSnapshot("twice", behind, Date.now());
    await tickAndDeliver(scheduledAtMs + 60_000);
    expect((await backing.store.getCluster("twice"))?.version).toBe(2);
  });

  it("delivers again a job whose publish failed: the saved run is not run again, its batch is published", async () => {
    await backing.store.putConfig("publish", { "pacer.tick.enabled": true }, now);
    await storeSnapshot("publish", caughtUp, now - 1_000);
    eventBridge.failNext = 10; // the EventBridge client retries: every attempt of the first delivery fails
    const scheduledAtMs = now + 7_200_000;
    await createTickHandler(env)({ scheduledAt: at(scheduledAtMs) });
    const worker = createWorkerHandler(env);
    const [first] = await receive(queues.client, queues.queueUrl);
    const failed = await worker(sqsEvent([first!]));
    expect(failed.batchItemFailures).toEqual([{ itemIdentifier: first?.MessageId }]);
    expect(eventBridge.entries).toEqual([]);
    // The run was saved before the publish failed: it is not a failed tick, and it is not run again.
    expect((await backing.store.getCluster("publish"))?.lastTick).toMatchObject({ outcome: "ran" });
    eventBridge.failNext = 0;

    await deliverAll(queues, worker);
    const stored = await backing.store.getCluster("publish");
    expect(stored?.version).toBe(1);
    const [batch, ...more] = detailsOf("publish");
    expect(more).toEqual([]);
    expect(batch).toMatchObject({ decisionId: stored?.lastDecision?.decisionId });
    expect(batch.elections).toHaveLength(10);
  });

  it("sends a job that keeps failing to the dead-letter queue, and the other clusters still run", async () => {
    await backing.store.putConfig("healthy", { "pacer.tick.enabled": true }, now);
    await storeSnapshot("healthy", caughtUp, now - 1_000);
    await queues.client.send(
      new SendMessageCommand({
        QueueUrl: queues.queueUrl,
        MessageBody: JSON.stringify({ clusterId: "poison" }),
      }),
    );
    await tickAndDeliver(now + 10_800_000);

    expect((await backing.store.getCluster("healthy"))?.lastTick).toMatchObject({ outcome: "ran" });
    const { Messages = [] } = await queues.client.send(
      new ReceiveMessageCommand({ QueueUrl: queues.deadLetterUrl, WaitTimeSeconds: 1 }),
    );
    expect(Messages.map((m) => JSON.parse(m.Body ?? ""))).toEqual([{ clusterId: "poison" }]);
  });

  it("follows a ramp with delayed messages at its throttle interval, and stops at the tick's window", async () => {
    const RAMP = {
      "pacer.tick.enabled": true,
      "leader.imbalance.election.max.per.run": 3,
      "leader.imbalance.election.throttle.interval.ms": 2_000,
    };
    await backing.store.putConfig("ramp", RAMP, now);
    await backing.store.putConfig("stalled", RAMP, now);
    await storeSnapshot("ramp", caughtUp, Date.now() - 1_000);
    await storeSnapshot("stalled", caughtUp, Date.now() - 1_000);
    // The agent beside the "ramp" cluster carries out each batch as it is published and stores the
    // resulting snapshot; the one beside "stalled" never does.
    let current = caughtUp;
    let carriedOut = 0;
    const agent = setInterval(() => {
      const batches = detailsOf("ramp");
      for (const batch of batches.slice(carriedOut)) {
        current = afterElections(current, batch);
        carriedOut++;
        void storeSnapshot("ramp", current, Date.now());
      }
    }, 100);
    const startMs = Date.now();
    try {
      await tickAndDeliver(startMs, Date.now, { ...env, PACER_TICK_WINDOW_SECONDS: "9" });
    } finally {
      clearInterval(agent);
    }
    const runs = detailsOf("ramp").map((d) => [d.evaluatedAtMs - startMs, d.elections.length]);
    expect(runs.map(([, elections]) => elections)).toEqual([3, 3, 3, 1]);
    // Each run at least the throttle interval after the one before (a delay is whole seconds, rounded up).
    for (let i = 1; i < runs.length; i++)
      expect(runs[i]![0]! - runs[i - 1]![0]!).toBeGreaterThanOrEqual(2_000);
    expect((await backing.store.getCluster("ramp"))?.lastDecision).toMatchObject({ moreWorkRemains: false });

    // The stalled cluster ran once; its follow-ups looked for a newer snapshot until the window closed.
    expect(detailsOf("stalled")).toHaveLength(1);
    expect((await backing.store.getCluster("stalled"))?.version).toBe(1);
    expect(Date.now() - startMs).toBeLessThan(9_000 + 5_000);
  });
});
