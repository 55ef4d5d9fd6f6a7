import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call, type Reply } from "../support/http.ts";
import { openServer, STORE_KINDS } from "../support/stores.ts";

const snapshot = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
const JSON_HEADERS = { "content-type": "application/json" };

describe.each(STORE_KINDS)("bad requests on %s", (kind) => {
  let server: Awaited<ReturnType<typeof openServer>>;
  let storedBefore: string;
  beforeAll(async () => {
    server = await openServer(kind, { maxBodyBytes: 64 * 1024 });
    const first = await call(`${server.url}/v1/clusters/c1/evaluate`, {
      body: { snapshot, config: WAIT_FOR_SYNC },
    });
    expect(first.status).toBe(200);
    storedBefore = JSON.stringify(await server.store.getCluster("c1"));
  });
  afterAll(() => server.close());

  const managed = `/v1/clusters/c1/evaluate`;
  const cases: [string, string, Parameters<typeof call>[1], number, string][] = [
    ["not JSON", managed, { raw: "{nope", headers: JSON_HEADERS }, 400, "/problems/invalid-json"],
    [
      "an empty body",
      managed,
      { method: "POST", raw: "", headers: JSON_HEADERS },
      400,
      "/problems/invalid-json",
    ],
    [
      "text/plain",
      managed,
      { raw: "{}", headers: { "content-type": "text/plain" } },
      415,
      "/problems/unsupported-media-type",
    ],
    [
      "no content type",
      managed,
      { raw: JSON.stringify({ snapshot }) },
      415,
      "/problems/unsupported-media-type",
    ],
    [
      "a brotli body",
      managed,
      { raw: "{}", headers: { ...JSON_HEADERS, "content-encoding": "br" } },
      415,
      "/problems/unsupported-media-type",
    ],
    [
      "a body over the limit",
      managed,
      { raw: `{"x":"${"a".repeat(70_000)}"}`, headers: JSON_HEADERS },
      413,
      "/problems/payload-too-large",
    ],
    [
      "a gzip body that inflates over the limit",
      managed,
      {
        raw: gzipSync(`{"x":"${"a".repeat(1_000_000)}"}`),
        headers: { ...JSON_HEADERS, "content-encoding": "gzip" },
      },
      413,
      "/problems/payload-too-large",
    ],
    [
      "broken gzip",
      managed,
      { raw: "not gzip", headers: { ...JSON_HEADERS, "content-encoding": "gzip" } },
      400,
      "/problems/invalid-json",
    ],
    ["a JSON array", managed, { body: [1, 2] }, 400, "/problems/invalid-input"],
    ["a missing snapshot", managed, { body: { config: {} } }, 400, "/problems/invalid-input"],
    [
      "an invalid snapshot",
      managed,
      { body: { snapshot: { brokers: [{ id: -1 }], partitions: [] } } },
      400,
      "/problems/invalid-input",
    ],
    [
      "an unknown config key",
      managed,
      { body: { snapshot, config: { "max.per.run": 5 } } },
      400,
      "/problems/invalid-input",
    ],
    [
      "state in a managed body",
      managed,
      { body: { snapshot, state: { brokers: [], lastRunAtMs: null, lastRunCapped: false } } },
      400,
      "/problems/invalid-input",
    ],
    ["an unknown body key", managed, { body: { snapshot, snapshots: [] } }, 400, "/problems/invalid-input"],
    [
      "a bad cluster id",
      "/v1/clusters/bad%20id/evaluate",
      { body: { snapshot } },
      400,
      "/problems/invalid-input",
    ],
    [
      "a 129-char cluster id",
      `/v1/clusters/${"c".repeat(129)}/evaluate`,
      { body: { snapshot } },
      400,
      "/problems/invalid-input",
    ],
    [
      "an overlong Idempotency-Key",
      managed,
      { body: { snapshot }, headers: { "idempotency-key": "k".repeat(256) } },
      400,
      "/problems/invalid-input",
    ],
    [
      "a bad config PUT",
      "/v1/clusters/c1/config",
      { method: "PUT", body: { "leader.imbalance.election.max.per.run": -1 } },
      400,
      "/problems/invalid-input",
    ],
    ["a bad decisions limit", "/v1/clusters/c1/decisions?limit=0", {}, 400, "/problems/invalid-input"],
    ["a bad fleet limit", "/v1/clusters?limit=abc", {}, 400, "/problems/invalid-input"],
    ["an unknown route", "/v2/evaluate", { body: {} }, 404, "/problems/not-found"],
    ["an unknown cluster", "/v1/clusters/never-seen", {}, 404, "/problems/not-found"],
    ["GET on evaluate", managed, { method: "GET" }, 405, "/problems/method-not-allowed"],
    ["DELETE on config", "/v1/clusters/c1/config", { method: "DELETE" }, 405, "/problems/method-not-allowed"],
    [
      "PUT on the pure endpoint",
      "/v1/evaluate",
      { method: "PUT", body: {} },
      405,
      "/problems/method-not-allowed",
    ],
  ];

  it.each(cases)(
    "answers %s with the right 4xx problem and leaves the stored state alone",
    async (_, path, init, status, type) => {
      const reply: Reply = await call(`${server.url}${path}`, init);
      expect(reply.status).toBe(status);
      expect(reply.headers.get("content-type")).toBe("application/problem+json");
      expect(reply.json).toMatchObject({ type, status });
      expect(typeof reply.json.detail).toBe("string");
      expect(JSON.stringify(await server.store.getCluster("c1"))).toBe(storedBefore);
    },
  );

  it("lists every problem of a bad request with its JSON pointer", async () => {
    const reply = await call(`${server.url}/v1/evaluate`, {
      body: {
        snapshot: {
          brokers: [{ id: 1 }],
          partitions: [{ topic: "t", partition: 0, replicas: [1], isr: [2], leader: 1 }],
        },
        config: {
          "leader.imbalance.election.immediate.period.ms": 10,
          "leader.imbalance.election.max.per.run": "many",
        },
        now: -5,
      },
    });
    expect(reply.status).toBe(400);
    expect(reply.json.errors.map((e: { pointer: string }) => e.pointer)).toEqual([
      "/snapshot/partitions/0/isr",
      "/config/leader.imbalance.election.max.per.run",
      "/config/leader.imbalance.election.immediate.period.ms",
      "/now",
    ]);
    expect(reply.json.errors[2].detail).toContain("leader.imbalance.election.throttle.interval.ms");
  });

  it("accepts a gzip body", async () => {
    const reply = await call(`${server.url}/v1/evaluate`, {
      body: { snapshot, config: WAIT_FOR_SYNC, now: 5 },
      gzip: true,
    });
    expect(reply.status).toBe(200);
    expect(reply.json.brokers[0]).toMatchObject({ gated: true, gatedSinceMs: 5 });
  });
});
