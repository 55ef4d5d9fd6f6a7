import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenAuth } from "../../functions/api/auth.ts";
import { createApp } from "../../functions/app.ts";
import { startLocalServer } from "../../functions/handlers/local.ts";
import { startEmbeddedStore } from "../../functions/store/embedded.ts";
import { afterElections, preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer } from "../support/stores.ts";

const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
const caughtUp = snapshotOf(preferredPartitionsOf(1, 10));
const localOptions = {
  port: 0,
  host: "127.0.0.1",
  tableName: "leadership-pacer",
  maxBodyBytes: 8 << 20,
  tickSeconds: 0,
};

describe("the local server", () => {
  it("keeps each cluster's state across a restart on the embedded store", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "pacer-data-"));
    const first = await startLocalServer({ ...localOptions, dataDir });
    const run = await call(`${first.url}/v1/clusters/persist/evaluate`, {
      body: { snapshot: behind, config: WAIT_FOR_SYNC },
    });
    expect(run.json.brokers[0].reason).toBe("over-threshold");
    await first.close();

    const second = await startLocalServer({ ...localOptions, dataDir });
    try {
      const next = await call(`${second.url}/v1/clusters/persist/evaluate`, {
        body: { snapshot: caughtUp, config: WAIT_FOR_SYNC },
      });
      expect(next.json.brokers[0]).toMatchObject({
        reason: "hysteresis",
        gatedSinceMs: run.json.evaluatedAtMs,
      });
      expect(next.json.stateVersion).toBe(2);
    } finally {
      await second.close();
    }
  });

  it("fails safe while the store is down, 503 and no elections, and recovers when it is back", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "pacer-store-"));
    let store = await startEmbeddedStore({ dataDir });
    const port = Number(new URL(store.endpoint).port);
    const server = await startLocalServer({ ...localOptions, dataDir: "", dynamoEndpoint: store.endpoint });
    try {
      const url = `${server.url}/v1/clusters/outage/evaluate`;
      expect((await call(url, { body: { snapshot: caughtUp } })).status).toBe(200);

      await store.close();
      const down = await call(url, { body: { snapshot: caughtUp } });
      expect(down.status).toBe(503);
      expect(down.headers.get("retry-after")).toBe("5");
      expect(down.json.type).toBe("/problems/store-unavailable");
      expect(down.json.elections).toBeUndefined();
      expect((await call(`${server.url}/healthz`)).status).toBe(503);
      expect((await call(`${server.url}/v1/clusters/outage`)).status).toBe(503);

      store = await startEmbeddedStore({ dataDir, port });
      const back = await call(url, { body: { snapshot: caughtUp } });
      expect(back.status).toBe(200);
      expect(back.json.stateVersion).toBe(2);
      expect((await call(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
      await store.close();
    }
  });
});

describe("the local tick", () => {
  it("runs a ticking cluster on its stored snapshot on the PACER_TICK_SECONDS timer", async () => {
    const server = await startLocalServer({
      ...localOptions,
      tickSeconds: 1,
      dataDir: mkdtempSync(join(tmpdir(), "pacer-tick-")),
    });
    try {
      await call(`${server.url}/v1/clusters/ticked/config`, {
        method: "PUT",
        body: { "pacer.tick.enabled": true },
      });
      await call(`${server.url}/v1/clusters/ticked/snapshot`, { method: "PUT", body: caughtUp });
      // The run's outcome is saved with its state; its decision record is written just after, so
      // wait for the record: once it is listed, the outcome that names it is saved too.
      let decisions = await call(`${server.url}/v1/clusters/ticked/decisions`);
      for (let i = 0; i < 40 && decisions.json.decisions?.length !== 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        decisions = await call(`${server.url}/v1/clusters/ticked/decisions`);
      }
      const view = await call(`${server.url}/v1/clusters/ticked`);
      expect(view.json.lastTick).toMatchObject({ outcome: "ran" });
      expect(decisions.json.decisions).toHaveLength(1);
      expect(decisions.json.decisions[0].elections).toHaveLength(10);
      expect(decisions.json.decisions[0].decisionId).toBe(view.json.lastTick.decisionId);
    } finally {
      await server.close();
    }
  });
});

describe("the local tick following a ramp", () => {
  it("runs a capped cluster again within the tick once the agent stored the batch's result", async () => {
    const server = await startLocalServer({
      ...localOptions,
      tickSeconds: 3,
      dataDir: mkdtempSync(join(tmpdir(), "pacer-follow-")),
    });
    try {
      const cluster = `${server.url}/v1/clusters/ramping`;
      await call(`${cluster}/config`, {
        method: "PUT",
        body: {
          "pacer.tick.enabled": true,
          "leader.imbalance.election.max.per.run": 4,
          "leader.imbalance.election.throttle.interval.ms": 1_000,
        },
      });
      let current = caughtUp;
      await call(`${cluster}/snapshot`, { method: "PUT", body: current });
      // The agent: carry out each new batch and store the result, as fast as it can.
      const seen = new Set<string>();
      for (let i = 0; i < 120 && seen.size < 2; i++) {
        const { json } = await call(`${cluster}/decisions`);
        for (const decision of [...json.decisions].reverse()) {
          if (seen.has(decision.decisionId)) continue;
          seen.add(decision.decisionId);
          current = afterElections(current, decision);
          await call(`${cluster}/snapshot`, { method: "PUT", body: current });
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const { json } = await call(`${cluster}/decisions`);
      const [second, first] = json.decisions;
      expect(first.elections).toHaveLength(4);
      expect(second.elections).toHaveLength(4);
      // One throttle interval apart, not one tick (3 s) apart.
      expect(second.evaluatedAtMs - first.evaluatedAtMs).toBeGreaterThanOrEqual(1_000);
      expect(second.evaluatedAtMs - first.evaluatedAtMs).toBeLessThan(2_000);
    } finally {
      await server.close();
    }
  });
});

describe("bearer-token auth", () => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer("dynalite", {
      auth: new TokenAuth({ "team-a": ["prod-a-*"], ops: ["*"], platform: ["@fleet"] }),
    });
  });
  afterAll(() => server.close());
  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  it("answers 401 without a valid token, and leaves health and the API document open", async () => {
    const missing = await call(`${server.url}/v1/evaluate`, { body: { snapshot: caughtUp } });
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await call(`${server.url}/v1/clusters`, { headers: as("wrong") })).status).toBe(401);
    expect((await call(`${server.url}/healthz`)).status).toBe(200);
    expect((await call(`${server.url}/openapi.json`)).status).toBe(200);
  });

  it("lets a token act on its own clusters only, and the pure endpoint with any valid token", async () => {
    const mine = await call(`${server.url}/v1/clusters/prod-a-1/evaluate`, {
      body: { snapshot: caughtUp },
      headers: as("team-a"),
    });
    expect(mine.status).toBe(200);
    const theirs = await call(`${server.url}/v1/clusters/prod-b-1/evaluate`, {
      body: { snapshot: caughtUp },
      headers: as("team-a"),
    });
    expect(theirs.status).toBe(403);
    expect((await call(`${server.url}/v1/clusters/prod-b-1`, { headers: as("team-a") })).status).toBe(403);
    expect(
      (await call(`${server.url}/v1/evaluate`, { body: { snapshot: caughtUp }, headers: as("team-a") }))
        .status,
    ).toBe(200);
    await call(`${server.url}/v1/clusters/prod-b-1/evaluate`, {
      body: { snapshot: caughtUp },
      headers: as("ops"),
    });
    const listed = await call(`${server.url}/v1/clusters`, { headers: as("team-a") });
    expect(listed.json.clusters.map((c: { clusterId: string }) => c.clusterId)).toEqual(["prod-a-1"]);
  });

  it("lets only a fleet-wide token (* or @fleet) change the fleet config, which every cluster inherits", async () => {
    const before = (await call(`${server.url}/v1/fleet/config`, { headers: as("team-a") })).json;
    const scoped = await call(`${server.url}/v1/fleet/config`, {
      method: "PUT",
      body: { "leader.imbalance.election.max.per.run": 1 },
      headers: as("team-a"),
    });
    expect(scoped.status).toBe(403);
    expect(scoped.json.detail).toContain('"*" or "@fleet"');
    expect((await call(`${server.url}/v1/fleet/config`, { headers: as("team-a") })).json).toEqual(before);
    for (const token of ["ops", "platform"]) {
      const put = await call(`${server.url}/v1/fleet/config`, {
        method: "PUT",
        body: { "leader.imbalance.election.max.per.run": 500 },
        headers: as(token),
      });
      expect(put.status).toBe(200);
    }
    // @fleet is a scope, not a cluster glob: it reaches no cluster.
    expect((await call(`${server.url}/v1/clusters/prod-a-1`, { headers: as("platform") })).status).toBe(403);
    await call(`${server.url}/v1/fleet/config`, { method: "PUT", body: before.config, headers: as("ops") });
  });

  it("reads tokens from PACER_TOKENS", () => {
    const auth = TokenAuth.fromEnvironment({ PACER_TOKENS: "t1=prod-*,stage-?; t2=*; t3=@fleet" });
    expect(auth?.scopeOf("Bearer t1")?.patterns.map(String)).toEqual(["/^prod-.*$/", "/^stage-.$/"]);
    expect(auth?.scopeOf("Bearer t1")?.fleet).toBe(false);
    expect(auth?.scopeOf("Bearer t2")?.fleet).toBe(true);
    expect(auth?.scopeOf("Bearer t3")).toEqual({ patterns: [], fleet: true });
    expect(auth?.scopeOf("Bearer t4")).toBeUndefined();
  });
});

describe("the API document", () => {
  it("serves a valid OpenAPI 3 document of exactly the routes served, whose every reference resolves", async () => {
    const server = await openServer("dynalite");
    try {
      const doc = (await call(`${server.url}/openapi.json`)).json;
      expect(doc.openapi).toMatch(/^3\./);
      expect(await new Validator().validate(doc)).toEqual({ valid: true });
      expect(Object.keys(doc.paths)).toContain("/v1/clusters/{clusterId}/evaluate");
      const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(
        (m) => m[1],
      );
      expect(refs.length).toBeGreaterThan(10);
      for (const ref of refs) expect(doc.components.schemas).toHaveProperty([ref as string]);
      expect(JSON.stringify(doc)).not.toContain("#/definitions/");
      expect(doc.components.schemas.ConfigOverrides.properties).toHaveProperty([
        "leader.imbalance.election.max.per.run",
      ]);

      // Every route the app serves is documented, and nothing else is.
      const served = createApp({ store: server.store, metricsText: async () => "" })
        .routes.filter((route) => route.method !== "ALL")
        .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`);
      const documented = Object.entries(doc.paths).flatMap(([path, operations]) =>
        Object.keys(operations as object).map((method) => `${method.toUpperCase()} ${path}`),
      );
      expect([...new Set(documented)].sort()).toEqual([...new Set(served)].sort());
    } finally {
      await server.close();
    }
  });
});
