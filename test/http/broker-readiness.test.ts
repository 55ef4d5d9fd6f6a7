import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenAuth } from "../../functions/api/auth.ts";
import { createApp } from "../../functions/app.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { afterElections, preferredPartitionsOf, snapshotOf } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer, openStore } from "../support/stores.ts";

/**
 * GET /v1/clusters/{id}/brokers/{b}: whether a broker is back after a restart, from the cluster's
 * last run, for a rolling restart driven through the service.
 */
const PACED: ConfigOverrides = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
  "leader.imbalance.election.max.per.run": 50,
};
const behind = (outOfSync: number) => snapshotOf(preferredPartitionsOf(1, 100, { outOfSync }));

describe("a broker's readiness over HTTP", () => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer("dynalite", { auth: new TokenAuth({ ops: ["*"], other: ["other-*"] }) });
  });
  afterAll(() => server.close());

  it("is not ready while gated, nor while ramping, and ready once it leads 99 % of its partitions", async () => {
    const get = (broker: string, token = "ops") =>
      call(`${server.url}/v1/clusters/roll/brokers/${broker}`, {
        headers: { authorization: `Bearer ${token}` },
      });
    expect((await get("1")).status).toBe(404);
    const put = await call(`${server.url}/v1/clusters/roll/config`, {
      method: "PUT",
      body: PACED,
      headers: { authorization: "Bearer ops" },
    });
    expect(put.status).toBe(200);
    const runAs = async (snapshot: ReturnType<typeof behind>) => {
      const reply = await call(`${server.url}/v1/clusters/roll/evaluate`, {
        body: { snapshot },
        headers: { authorization: "Bearer ops" },
      });
      expect(reply.status).toBe(200);
      return afterElections(snapshot, reply.json);
    };
    await runAs(behind(40));
    const gated = await get("1");
    expect(gated.status).toBe(200);
    expect(gated.json).toMatchObject({
      clusterId: "roll",
      broker: 1,
      ready: false,
      reasons: [
        "gated: in sync on 60 of its 100 preferred partitions",
        "leads 0 of its 100 preferred partitions, needs 99",
      ],
      recovery: { phase: "gated", inSync: 60, leading: 0, preferred: 100 },
    });
    expect(gated.json.lastRun.ageMs).toBeGreaterThanOrEqual(0);
    // Caught up: a clear run, then 50 a run.
    let snapshot = await runAs(behind(0));
    snapshot = await runAs(snapshot);
    const ramping = await get("1");
    expect(ramping.json).toMatchObject({
      ready: false,
      reasons: ["leads 50 of its 100 preferred partitions, needs 99"],
      recovery: { phase: "ramping", leading: 50 },
    });
    await runAs(snapshot);
    const back = await get("1");
    expect(back.json).toMatchObject({ ready: true, reasons: [] });
    // Another broker of the cluster, with nothing to take back: ready too.
    expect((await get("101")).json).toMatchObject({ ready: true, recovery: null });
    // Auth and input like every cluster route.
    expect((await get("1", "other")).status).toBe(403);
    const bad = await get("one");
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0].pointer).toBe("/path/brokerId");
  });

  it("is not ready when the last run is older than pacer.snapshot.max.age.ms", async () => {
    const { store, close } = await openStore("dynalite");
    let now = 1_000_000;
    const app = createApp({ store, clock: () => now });
    const post = await app.request("/v1/clusters/old/evaluate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ snapshot: behind(0) }),
    });
    expect(post.status).toBe(200);
    now += 121_000;
    const stale = await (await app.request("/v1/clusters/old/brokers/101")).json();
    expect(stale).toMatchObject({
      ready: false,
      reasons: [
        expect.stringMatching(/^the last run is 2m 01s old, more than pacer.snapshot.max.age.ms \(2m 00s\)/),
      ],
    });
    await close();
  });
});
