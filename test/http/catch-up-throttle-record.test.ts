import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearerFetch, PacerClient } from "../../functions/agent/pacer-client.ts";
import { PacerError } from "../../functions/agent/pacer-error.ts";
import { StoredThrottleRecord } from "../../functions/agent/throttle-record.ts";
import { call } from "../support/http.ts";
import { openServer, STORE_KINDS } from "../support/stores.ts";

const RECORD = {
  rates: { "follower.replication.throttled.rate@1": { rateBytesPerSecond: 2_500_000 } },
  lists: { "follower.replication.throttled.replicas@orders": ["0:1", "3:1"] },
  throttlingSinceMs: { "1": 1_765_000_000_000 },
  unconfirmed: true,
};

describe.each(STORE_KINDS)("the catch-up throttle record on %s", (kind) => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer(kind);
  });
  afterAll(() => server.close());

  const url = (clusterId: string) => `${server.url}/v1/clusters/${clusterId}/catch-up-throttles`;
  const put = (clusterId: string, body: unknown) => call(url(clusterId), { method: "PUT", body });

  it("is empty at version 0 before anything is written, then holds what was written", async () => {
    const empty = await call(url("fresh"));
    expect(empty.status).toBe(200);
    expect(empty.json).toEqual({ version: 0, record: { rates: {}, lists: {}, throttlingSinceMs: {} } });

    const written = await put("fresh", { version: 0, record: RECORD });
    expect(written.status).toBe(200);
    expect(written.json).toEqual({ version: 1, record: RECORD });
    expect((await call(url("fresh"))).json).toEqual({ version: 1, record: RECORD });
    const next = await put("fresh", { version: 1, record: { ...RECORD, unconfirmed: undefined } });
    expect(next.json.version).toBe(2);
  });

  it("refuses a write from a version that is not the stored one (409), and keeps the record", async () => {
    await put("two-agents", { version: 0, record: RECORD });
    const stale = await put("two-agents", {
      version: 0,
      record: { rates: {}, lists: {}, throttlingSinceMs: {} },
    });
    expect(stale.status).toBe(409);
    expect(stale.json.type).toBe("/problems/record-changed");
    expect(stale.json.detail).toMatch(/at version 1, not 0: another agent paces this cluster too/);
    expect((await call(url("two-agents"))).json).toEqual({ version: 1, record: RECORD });
  });

  it.each([
    [
      "a rate of 0",
      {
        version: 0,
        record: { ...RECORD, rates: { "follower.replication.throttled.rate@1": { rateBytesPerSecond: 0 } } },
      },
      /\/record\/rates\/follower\.replication\.throttled\.rate@1\/rateBytesPerSecond/,
    ],
    [
      "a list entry that is not partition:broker",
      { version: 0, record: { ...RECORD, lists: { "leader.replication.throttled.replicas@t": ["*"] } } },
      /entries are partition:broker/,
    ],
    ["no version", { record: RECORD }, /\/version/],
    ["a field it does not know", { version: 0, record: { ...RECORD, extra: 1 } }, /\/record/],
  ])("answers 400 naming the problem for %s, and writes nothing", async (_name, body, detail) => {
    const reply = await put("bad-input", body);
    expect(reply.status).toBe(400);
    expect(reply.json.type).toBe("/problems/invalid-input");
    expect(reply.json.detail).toMatch(/^The catch-up throttle record has 1 problem/);
    expect(JSON.stringify(reply.json.errors)).toMatch(detail);
    expect((await call(url("bad-input"))).json.version).toBe(0);
  });

  it("outlives the cluster's removal from the fleet: Kafka may still hold what it describes", async () => {
    await call(`${server.url}/v1/clusters/removed/config`, { method: "PUT", body: {} });
    await put("removed", { version: 0, record: RECORD });
    expect((await call(`${server.url}/v1/clusters/removed`, { method: "DELETE" })).status).toBe(204);
    expect((await call(url("removed"))).json).toEqual({ version: 1, record: RECORD });
  });

  it("is served to GET and PUT only", async () => {
    const reply = await call(url("methods"), { method: "POST", body: {} });
    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe("GET, PUT");
  });

  it("lets the agent's record go on from where another process left it, and refuses a second writer", async () => {
    const client = () => new PacerClient(server.url, "agents", bearerFetch("unused"));
    const first = new StoredThrottleRecord(client());
    await first.load();
    await first.save(RECORD);
    // A second agent (or the same one after a restart) reads it as the first left it …
    const second = new StoredThrottleRecord(client());
    expect(await second.load()).toEqual(RECORD);
    await second.save({ ...RECORD, unconfirmed: false });
    // … and the first, which has not read since, can no longer write over it.
    const refused = await first.save({ rates: {}, lists: {}, throttlingSinceMs: {} }).catch((e) => e);
    expect(refused).toBeInstanceOf(PacerError);
    expect((refused as PacerError).status).toBe(409);
    expect(await new StoredThrottleRecord(client()).load()).toEqual({ ...RECORD, unconfirmed: false });
  });
});
