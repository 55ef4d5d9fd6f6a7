import { gunzipSync, gzipSync } from "node:zlib";
import type { Context } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { snapshotIdOf } from "../../functions/api/tick.ts";
import { createHttpHandler } from "../../functions/handlers/lambda-http.ts";
import { createTickHandler } from "../../functions/handlers/lambda-tick.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { afterElections, preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { type EventBridgeEndpoint, startEventBridgeEndpoint } from "../support/eventbridge.ts";
import { openStore, type TestStore } from "../support/stores.ts";

/** The Lambda handlers, invoked with the events AWS sends, against DynamoDB Local. */

/** The event shape hono's Lambda adapter takes: API Gateway HTTP API v2, which Function URLs send too. */
type FunctionUrlEvent = Parameters<ReturnType<typeof createHttpHandler>>[0];

function functionUrlEvent(
  method: string,
  path: string,
  body?: unknown,
  query = "",
  headers: Record<string, string> = {},
): FunctionUrlEvent {
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: path,
    rawQueryString: query,
    headers: { "content-type": "application/json", host: "abc123.lambda-url.eu-west-1.on.aws", ...headers },
    requestContext: {
      accountId: "123456789012",
      apiId: "abc123",
      domainName: "abc123.lambda-url.eu-west-1.on.aws",
      domainPrefix: "abc123",
      // A Function URL with AuthType AWS_IAM: the signed caller.
      authentication: null,
      authorizer: {
        iam: {
          accessKey: "AKIAIOSFODNN7EXAMPLE",
          accountId: "123456789012",
          callerId: "AIDACKCEVSQ6C2EXAMPLE",
          cognitoIdentity: null,
          principalOrgId: null,
          userArn: "arn:aws:iam::123456789012:role/kafka-controller",
          userId: "AIDACKCEVSQ6C2EXAMPLE",
        },
      },
      http: { method, path, protocol: "HTTP/1.1", sourceIp: "198.51.100.7", userAgent: "controller/1.0" },
      requestId: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
      routeKey: "$default",
      stage: "$default",
      time: "02/Dec/2026:19:00:00 +0000",
      timeEpoch: 1796238000000,
    },
    body: body === undefined ? null : JSON.stringify(body),
    isBase64Encoded: false,
  } as FunctionUrlEvent;
}
const context = { functionName: "leadership-pacer-api", awsRequestId: "req-1" } as Context;

/** Everything written to stdout while `run` runs: where EMF records and structured logs go. */
async function captureStdout<T>(run: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const original = process.stdout.write.bind(process.stdout);
  const written: string[] = [];
  process.stdout.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    const result = await run();
    return { result, lines: written.join("").split("\n").filter(Boolean) };
  } finally {
    process.stdout.write = original;
  }
}

let backing: TestStore;
let eventBridge: EventBridgeEndpoint;
let env: Record<string, string>;
beforeAll(async () => {
  backing = await openStore("DynamoDB Local");
  eventBridge = await startEventBridgeEndpoint();
  env = {
    PACER_TABLE: backing.tableName,
    DYNAMODB_ENDPOINT: backing.endpoint,
    PACER_EVENT_BUS: "leadership-pacer",
    EVENTBRIDGE_ENDPOINT: eventBridge.url,
    // One pass per tick, except in the tests of follow-ups, which bring a clock that moves.
    PACER_TICK_FOLLOW_SECONDS: "0",
  };
});
afterAll(async () => {
  await backing.close();
  await eventBridge.close();
});

describe("the HTTP handler", () => {
  it("serves a managed run from a Function URL event and emits its metrics as EMF", async () => {
    const handler = createHttpHandler(env);
    const snapshot = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
    const { result, lines } = await captureStdout(() =>
      handler(
        functionUrlEvent("POST", "/v1/clusters/lambda-1/evaluate", { snapshot, config: WAIT_FOR_SYNC }),
        context,
      ),
    );
    expect(result.statusCode).toBe(200);
    const answer = JSON.parse(result.body as string);
    expect(answer).toMatchObject({ stateVersion: 1, elections: [] });

    const emf = lines.map((line) => JSON.parse(line)).find((record) => record._aws);
    expect(emf._aws.CloudWatchMetrics[0].Namespace).toBe("LeadershipPacer");
    expect(emf._aws.CloudWatchMetrics[0].Dimensions[0]).toEqual(expect.arrayContaining(["ClusterId"]));
    expect(emf._aws.CloudWatchMetrics[0].Dimensions.flat()).not.toContain("broker");
    expect(emf).toMatchObject({
      ClusterId: "lambda-1",
      Runs: 1,
      Elections: 0,
      ElectionsSkippedByGate: 5,
      GatedBrokerCount: 1,
      MaxWaitExpiredBrokerCount: 0,
      OutOfSyncPreferredPartitionCount: 5,
      decisionId: answer.decisionId,
    });
    const fleet = lines
      .map((line) => JSON.parse(line))
      .find((record) => "FleetMaxWaitExpiredBrokerCount" in record);
    expect(fleet._aws.CloudWatchMetrics[0].Dimensions).toEqual([["service"]]);
    expect(fleet).toMatchObject({ service: "leadership-pacer", FleetMaxWaitExpiredBrokerCount: 0 });
    const log = lines.map((line) => JSON.parse(line)).find((record) => record.message === "run completed");
    expect(log).toMatchObject({
      level: "INFO",
      clusterId: "lambda-1",
      decisionId: answer.decisionId,
      service: "leadership-pacer",
    });
  });

  it("answers bad input with a problem, not a 500, and health through the same app", async () => {
    const handler = createHttpHandler(env);
    const bad = await handler(
      functionUrlEvent("POST", "/v1/clusters/lambda-1/evaluate", { snapshot: {} }),
      context,
    );
    expect(bad.statusCode).toBe(400);
    expect(bad.headers?.["content-type"]).toBe("application/problem+json");
    const health = await handler(functionUrlEvent("GET", "/healthz"), context);
    expect(health.statusCode).toBe(200);
  });

  it("sends a large answer gzip'd and base64-encoded to a caller that accepts gzip", async () => {
    const handler = createHttpHandler(env);
    const snapshot = snapshotOf(preferredPartitionsOf(1, 3_000, { outOfSync: 100 }));
    const event = functionUrlEvent("POST", "/v1/evaluate", { snapshot, now: 1 }, "explain=partitions", {
      "accept-encoding": "gzip",
    });
    const result = await handler(event, context);
    expect(result.statusCode).toBe(200);
    expect(result.headers?.["content-encoding"]).toBe("gzip");
    expect(result.isBase64Encoded).toBe(true);
    const body = gunzipSync(Buffer.from(result.body as string, "base64")).toString("utf8");
    expect(JSON.parse(body).partitions).toHaveLength(3_000);
    expect((result.body as string).length).toBeLessThan(body.length / 4);
  });
});

describe("the tick handler", () => {
  const now = 1_796_238_000_000;
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
  afterEach(() => {
    eventBridge.entries.length = 0;
  });

  it("runs two clusters with different configs in one invocation and publishes their batches", async () => {
    await backing.store.putConfig(
      "tick-a",
      { "pacer.tick.enabled": true, "leader.imbalance.election.max.per.run": 3 },
      now,
    );
    await backing.store.putConfig("tick-b", { "pacer.tick.enabled": "true" as never, ...WAIT_FOR_SYNC }, now);
    await backing.store.putConfig("tick-off", {}, now);
    await storeSnapshot("tick-a", caughtUp, now - 10_000);
    await storeSnapshot("tick-b", behind, now - 10_000);
    await storeSnapshot("tick-off", caughtUp, now - 10_000);

    const tick = createTickHandler(env, () => now);
    const { result: report } = await captureStdout(() => tick({ scheduledAt: at(now) }));
    const byCluster = Object.fromEntries(report.clusters.map((c) => [c.clusterId, c]));
    expect(byCluster["tick-a"]).toMatchObject({ outcome: "ran", elections: 3 });
    expect(byCluster["tick-b"]).toMatchObject({ outcome: "ran", elections: 0 });
    expect(byCluster["tick-off"]).toMatchObject({ outcome: "not-enabled" });

    expect(eventBridge.entries).toHaveLength(1);
    const [entry] = eventBridge.entries;
    expect(entry).toMatchObject({
      Source: "leadership-pacer",
      DetailType: "Preferred Leader Election Batch",
      EventBusName: "leadership-pacer",
    });
    const detail = JSON.parse(entry!.Detail);
    expect(detail).toMatchObject({
      clusterId: "tick-a",
      decisionId: byCluster["tick-a"]?.decisionId,
      part: 1,
      parts: 1,
    });
    expect(detail.kafkaLeaderElection.partitions).toHaveLength(3);

    const stored = await backing.store.getCluster("tick-b");
    expect(stored?.lastTick).toMatchObject({ outcome: "ran" });
    expect(stored?.state?.brokers).toEqual([{ id: 1, gatedSinceMs: now, clearRuns: 0 }]);
  });

  it("replays a retried tick instead of advancing hysteresis twice", async () => {
    const config = {
      "pacer.tick.enabled": true,
      ...WAIT_FOR_SYNC,
      "leader.imbalance.check.interval.seconds": 1,
    };
    await backing.store.putConfig("retry", config, now);
    await storeSnapshot("retry", behind, now - 1_000);
    const first = await captureStdout(() => createTickHandler(env, () => now)({ scheduledAt: at(now) }));
    // Between the attempt and its retry a new snapshot arrived and the run came due again: only the
    // idempotency key (from the scheduled time) stops the retry from running the cluster a second time.
    await storeSnapshot("retry", behind, now + 5_000);
    const retry = await captureStdout(() =>
      createTickHandler(env, () => now + 20_000)({ scheduledAt: at(now) }),
    );
    const [a, b] = [first.result, retry.result].map((r) => r.clusters.find((c) => c.clusterId === "retry"));
    expect(a?.outcome).toBe("ran");
    expect(b).toMatchObject({ outcome: "ran", decisionId: a?.decisionId });
    expect((await backing.store.getCluster("retry"))?.version).toBe(1);
    // The next scheduled tick runs it again.
    const next = await captureStdout(() =>
      createTickHandler(env, () => now + 60_000)({ scheduledAt: at(now + 60_000) }),
    );
    expect(next.result.clusters.find((c) => c.clusterId === "retry")?.decisionId).not.toBe(a?.decisionId);
    expect((await backing.store.getCluster("retry"))?.state?.brokers[0]).toMatchObject({
      clearRuns: 0,
      gatedSinceMs: now,
    });
  });

  it("skips a cluster that is not due, whose snapshot is stale, or unchanged since its last run, and says why", async () => {
    await backing.store.putConfig(
      "skip",
      { "pacer.tick.enabled": true, "pacer.snapshot.max.age.ms": 600_000 },
      now,
    );
    await storeSnapshot("skip", caughtUp, now - 10_000);
    const tickAt = async (ms: number) => {
      const { result } = await captureStdout(() => createTickHandler(env, () => ms)({ scheduledAt: at(ms) }));
      return result.clusters.find((c) => c.clusterId === "skip");
    };
    expect(await tickAt(now)).toMatchObject({ outcome: "ran", elections: 10 });
    // Not capped: the next run is due after the check interval (300 s).
    expect(await tickAt(now + 60_000)).toMatchObject({ outcome: "not-due" });
    // Due, but the snapshot is the one the last run used: its elections may not have been carried out yet.
    expect(await tickAt(now + 300_000)).toMatchObject({ outcome: "snapshot-unchanged", elections: 0 });
    expect(await tickAt(now + 10 * 60_000)).toMatchObject({ outcome: "stale-snapshot", elections: 0 });
    expect((await backing.store.getCluster("skip"))?.lastTick).toMatchObject({ outcome: "stale-snapshot" });
    await storeSnapshot("skip", behind, now + 10 * 60_000);
    expect(await tickAt(now + 10 * 60_000 + 1_000)).toMatchObject({ outcome: "ran" });
  });

  describe("following a ramp within one tick", () => {
    const start = now + 86_400_000;
    const RAMP = {
      "pacer.tick.enabled": true,
      "leader.imbalance.election.max.per.run": 3,
      "leader.imbalance.election.throttle.interval.ms": 15_000,
    };

    /**
     * A virtual clock, and an agent beside the cluster that has carried out each published batch and
     * stored the resulting snapshot `agentDelayMs` after the run (never, when it is Infinity).
     */
    function agentAndClock(clusterId: string, first: Snapshot, agentDelayMs: number) {
      let clockMs = start;
      let current = first;
      let carriedOut = 0;
      const sleep = async (ms: number) => {
        clockMs += ms;
        const batches = eventBridge.entries
          .map((entry) => JSON.parse(entry.Detail))
          .filter((detail) => detail.clusterId === clusterId);
        for (const batch of batches.slice(carriedOut)) {
          const doneAtMs = batch.evaluatedAtMs + agentDelayMs;
          if (doneAtMs > clockMs) break;
          current = afterElections(current, batch);
          await storeSnapshot(clusterId, current, doneAtMs);
          carriedOut++;
        }
      };
      return { clock: () => clockMs, sleep };
    }
    const following = () => ({ ...env, PACER_TICK_FOLLOW_SECONDS: "50" });

    it("runs a capped cluster again at its throttle interval once the agent stored the result", async () => {
      await backing.store.putConfig("ramp", RAMP, start);
      await storeSnapshot("ramp", caughtUp, start - 1_000);
      const { clock, sleep } = agentAndClock("ramp", caughtUp, 1_000);
      const tick = createTickHandler(following(), clock, sleep);

      const { result } = await captureStdout(() => tick({ scheduledAt: at(start) }));
      const runs = result.clusters.filter((c) => c.clusterId === "ramp");
      expect(runs.map((r) => [r.atMs - start, r.outcome, r.elections])).toEqual([
        [0, "ran", 3],
        [15_000, "ran", 3],
        [30_000, "ran", 3],
        [45_000, "ran", 1],
      ]);
      const stored = await backing.store.getCluster("ramp");
      expect(stored?.version).toBe(4);
      expect(stored?.lastDecision).toMatchObject({ electionCount: 1, moreWorkRemains: false });

      // A retry of the same tick finds the ramp done and the next run 300 s away: nothing runs again.
      const retry = await captureStdout(() => tick({ scheduledAt: at(start) }));
      expect(retry.result.clusters.find((c) => c.clusterId === "ramp")).toMatchObject({ outcome: "not-due" });
      expect((await backing.store.getCluster("ramp"))?.version).toBe(4);
    });

    it("waits for a slow agent's snapshot, looking again every 2 s, and runs it as soon as it is there", async () => {
      await backing.store.putConfig("slow-agent", RAMP, start);
      await storeSnapshot("slow-agent", caughtUp, start - 1_000);
      const { clock, sleep } = agentAndClock("slow-agent", caughtUp, 20_000);
      const tick = createTickHandler(following(), clock, sleep);

      const { result } = await captureStdout(() => tick({ scheduledAt: at(start) }));
      // Due 15 s after each run; the snapshot comes 20 s after it; it is seen at the next 2 s look.
      expect(
        result.clusters.filter((c) => c.clusterId === "slow-agent").map((r) => [r.atMs - start, r.elections]),
      ).toEqual([
        [0, 3],
        [21_000, 3],
        [42_000, 3],
      ]);
      expect((await backing.store.getCluster("slow-agent"))?.version).toBe(3);

      // The next tick finds the ramp mid-way, the last batch not yet stored, and follows it on.
      await sleep(start + 60_000 - clock());
      const next = await captureStdout(() => tick({ scheduledAt: at(start + 60_000) }));
      expect(
        next.result.clusters
          .filter((c) => c.clusterId === "slow-agent")
          .map((r) => [r.atMs - start, r.outcome, r.elections]),
      ).toEqual([
        [60_000, "snapshot-unchanged", 0],
        [62_000, "ran", 1],
      ]);
    });

    it("never runs the same snapshot twice while it waits for the agent, and ends by its deadline", async () => {
      await backing.store.putConfig("stalled", RAMP, start);
      await storeSnapshot("stalled", caughtUp, start - 1_000);
      const { clock, sleep } = agentAndClock("stalled", caughtUp, Number.POSITIVE_INFINITY);
      const tick = createTickHandler(following(), clock, sleep);

      const { result } = await captureStdout(() => tick({ scheduledAt: at(start) }));
      expect(result.clusters.filter((c) => c.clusterId === "stalled")).toMatchObject([
        { outcome: "ran", elections: 3 },
      ]);
      expect(clock() - start).toBeLessThanOrEqual(50_000 + 2_000);
      expect((await backing.store.getCluster("stalled"))?.version).toBe(1);
    });
  });

  it("never ticks a cluster with no snapshot", async () => {
    await backing.store.putConfig("empty", { "pacer.tick.enabled": true }, now);
    const { result } = await captureStdout(() => createTickHandler(env, () => now)({ scheduledAt: at(now) }));
    expect(result.clusters.find((c) => c.clusterId === "empty")).toMatchObject({ outcome: "no-snapshot" });
  });
});
