import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer, STORE_KINDS } from "../support/stores.ts";

const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
const caughtUp = snapshotOf(preferredPartitionsOf(1, 10));

describe.each(STORE_KINDS)("the managed endpoint on %s", (kind) => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer(kind);
  });
  afterAll(() => server.close());

  const evaluate = (clusterId: string, body: unknown, query = "", headers: Record<string, string> = {}) =>
    call(`${server.url}/v1/clusters/${clusterId}/evaluate${query}`, { body, headers });

  it("keeps the gate state between runs: the hysteresis sequence", async () => {
    const config = WAIT_FOR_SYNC;
    const answers = [];
    for (const snapshot of [behind, caughtUp, caughtUp])
      answers.push(await evaluate("hysteresis", { snapshot, config }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.json.brokers[0].reason)).toEqual([
      "over-threshold",
      "hysteresis",
      "released",
    ]);
    expect(answers.map((a) => a.json.elections.length)).toEqual([0, 0, 10]);
    expect(answers.map((a) => a.json.stateVersion)).toEqual([1, 2, 3]);
    expect(answers[0]!.json.decisionId).toMatch(/^\d{15}-[0-9a-f]{8}$/);
    expect(answers[0]!.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("saves nothing on a dry run and reports the stored version", async () => {
    await evaluate("dry", { snapshot: behind, config: WAIT_FOR_SYNC });
    const dry = await evaluate("dry", { snapshot: caughtUp, config: WAIT_FOR_SYNC }, "?dryRun=true");
    expect(dry.json.brokers[0].reason).toBe("hysteresis");
    expect(dry.json.stateVersion).toBe(1);
    const view = await call(`${server.url}/v1/clusters/dry`);
    expect(view.json).toMatchObject({ stateVersion: 1, gate: [{ id: 1, clearRuns: 0 }] });
  });

  it("replays an Idempotency-Key with the first answer, byte for byte, advancing nothing", async () => {
    const body = { snapshot: behind, config: WAIT_FOR_SYNC };
    const first = await evaluate("idem", body, "", { "idempotency-key": "tick-1" });
    const again = await evaluate("idem", body, "", { "idempotency-key": "tick-1" });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await call(`${server.url}/v1/clusters/idem`)).json.stateVersion).toBe(1);
    const other = await evaluate("idem", { snapshot: caughtUp, config: WAIT_FOR_SYNC }, "", {
      "idempotency-key": "tick-1",
    });
    expect(other.status).toBe(422);
    expect(other.json.type).toBe("/problems/idempotency-key-reused");
  });

  it("loses no update under 32 concurrent runs of one cluster", async () => {
    const replies = await Promise.all(
      Array.from({ length: 32 }, () =>
        evaluate("race", { snapshot: caughtUp, config: { ...WAIT_FOR_SYNC } }),
      ),
    );
    const succeeded = replies.filter((r) => r.status === 200);
    expect(replies.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect(succeeded.length).toBeGreaterThan(1);
    const versions = succeeded.map((r) => r.json.stateVersion).sort((a, b) => a - b);
    expect(new Set(versions).size).toBe(succeeded.length);
    const view = await call(`${server.url}/v1/clusters/race`);
    expect(view.json.stateVersion).toBe(succeeded.length);
  });

  it("uses the stored config under the request's own", async () => {
    const put = await call(`${server.url}/v1/clusters/configured/config`, {
      method: "PUT",
      body: {
        "leader.imbalance.election.max.per.run": "3",
        "leader.imbalance.election.throttle.interval.ms": 5000,
      },
    });
    expect(put.status).toBe(200);
    expect(put.json.effectiveConfig["leader.imbalance.election.max.per.run"]).toBe(3);
    const run = await evaluate("configured", { snapshot: caughtUp });
    expect(run.json.elections).toHaveLength(3);
    expect(run.json.nextDelayMs).toBe(5000);
    expect(run.json.config["leader.imbalance.election.max.per.run"]).toBe(3);
    const overridden = await evaluate("configured", {
      snapshot: caughtUp,
      config: { "leader.imbalance.election.throttle.interval.ms": 0 },
    });
    expect(overridden.json.elections).toHaveLength(3);
  });

  it("lists the fleet with each cluster's gated brokers and last run", async () => {
    await evaluate("fleet-a", { snapshot: behind, config: WAIT_FOR_SYNC });
    await evaluate("fleet-b", { snapshot: caughtUp });
    const fleet = await call(`${server.url}/v1/clusters?limit=1000`);
    const rows = Object.fromEntries(fleet.json.clusters.map((r: { clusterId: string }) => [r.clusterId, r]));
    expect(rows["fleet-a"]).toMatchObject({ gatedBrokers: [1], lastElectionCount: 0, stateVersion: 1 });
    expect(rows["fleet-b"]).toMatchObject({
      gatedBrokers: [],
      lastElectionCount: 10,
      moreWorkRemains: false,
    });
    expect(rows["fleet-b"].lastRunAtMs).toBeGreaterThan(0);
    expect(rows["fleet-b"].nextRunDueAtMs).toBe(rows["fleet-b"].lastRunAtMs + 300_000);
  });

  it("lists decisions newest first, and forgets the gate state on DELETE like a failover", async () => {
    await evaluate("history", { snapshot: behind, config: WAIT_FOR_SYNC });
    await evaluate("history", { snapshot: caughtUp, config: WAIT_FOR_SYNC });
    const decisions = await call(`${server.url}/v1/clusters/history/decisions?limit=5`);
    expect(decisions.json.decisions.map((d: { stateVersion: number }) => d.stateVersion)).toEqual([2, 1]);
    const newer = await call(
      `${server.url}/v1/clusters/history/decisions?after=${decisions.json.decisions[1].decisionId}`,
    );
    expect(newer.json.decisions).toHaveLength(1);

    expect((await call(`${server.url}/v1/clusters/history/state`, { method: "DELETE" })).status).toBe(204);
    const view = await call(`${server.url}/v1/clusters/history`);
    expect(view.json).toMatchObject({ gate: [], lastRunAtMs: null, stateVersion: 3 });
    const fresh = await evaluate("history", { snapshot: caughtUp, config: WAIT_FOR_SYNC });
    expect(fresh.json.brokers[0].reason).toBe("under-threshold");
    expect((await call(`${server.url}/v1/clusters/unknown/state`, { method: "DELETE" })).status).toBe(404);
  });

  it("removes a cluster from the fleet on DELETE; a later run under its id starts afresh", async () => {
    await call(`${server.url}/v1/clusters/leaving/config`, { method: "PUT", body: WAIT_FOR_SYNC });
    await evaluate("leaving", { snapshot: behind });
    const ids = async () =>
      (await call(`${server.url}/v1/clusters?limit=100`)).json.clusters.map(
        (c: { clusterId: string }) => c.clusterId,
      );
    expect(await ids()).toContain("leaving");

    expect((await call(`${server.url}/v1/clusters/leaving`, { method: "DELETE" })).status).toBe(204);
    expect(await ids()).not.toContain("leaving");
    expect((await call(`${server.url}/v1/clusters/leaving`)).status).toBe(404);
    expect((await call(`${server.url}/v1/clusters/leaving`, { method: "DELETE" })).status).toBe(404);
    // Its decisions stay readable until they expire.
    expect((await call(`${server.url}/v1/clusters/leaving/decisions`)).json.decisions).toHaveLength(1);

    // Config and gate state went with it: a new run is a new cluster under the defaults.
    const again = await evaluate("leaving", { snapshot: behind });
    expect(again.json.stateVersion).toBe(1);
    expect(again.json.config["leader.imbalance.election.algorithm"]).toBe("immediate");
    // Under the defaults, nothing gates: every partition whose preferred replica is in sync is elected.
    expect(again.json.elections).toHaveLength(5);
  });

  it("adds every imbalanced partition's disposition with ?explain=partitions", async () => {
    const run = await evaluate(
      "explained",
      { snapshot: behind, config: WAIT_FOR_SYNC },
      "?explain=partitions",
    );
    expect(run.json.partitions).toHaveLength(10);
    const decisions = await call(`${server.url}/v1/clusters/explained/decisions`);
    expect(decisions.json.decisions[0].partitions).toBeUndefined();
  });
  it("answers gzip'd when the answer is large and the client takes gzip, and plain when it is small", async () => {
    const large = snapshotOf(preferredPartitionsOf(1, 3_000, { outOfSync: 100 }));
    const url = `${server.url}/v1/evaluate?explain=partitions`;
    const big = await call(url, {
      body: { snapshot: large, now: 1 },
      headers: { "accept-encoding": "gzip" },
    });
    expect(big.status).toBe(200);
    expect(big.headers.get("content-encoding")).toBe("gzip");
    expect(big.headers.get("vary")).toMatch(/accept-encoding/i);
    expect(big.json.partitions).toHaveLength(3_000);
    const small = await call(`${server.url}/v1/evaluate`, {
      body: { snapshot: behind, now: 1 },
      headers: { "accept-encoding": "gzip" },
    });
    expect(small.headers.get("content-encoding")).toBeNull();
    const plain = await call(url, {
      body: { snapshot: large, now: 1 },
      headers: { "accept-encoding": "identity" },
    });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.text).toBe(big.text);
  });
});
