import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BROKERS } from "../../schemas/snapshot.ts";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer } from "../support/stores.ts";

/**
 * A hostile client, bounded and seeded: large malformed bodies of the shapes that once cost a stack
 * overflow or minutes of quadratic checks, sent 4 at a time at a listening server whose store holds a
 * cluster. Nothing gets a 5xx, nothing is accepted, the stored cluster does not change, and the server
 * still answers /healthz and a small request.
 */

const SEED = 20261203;
const REQUESTS = 120;
const CONCURRENCY = 4;
const ENTRIES = 200_000;

const many = <T>(n: number, item: (i: number) => T) => Array.from({ length: n }, (_, i) => item(i));

/** Each shape takes a size and gives a body that must be refused. */
const HOSTILE: Record<string, (n: number) => unknown> = {
  "negative replica ids": (n) => ({
    snapshot: {
      brokers: [],
      partitions: many(n, (i) => ({ topic: "t", partition: i, replicas: [-1], isr: [-1], leader: -1 })),
    },
  }),
  "negative elr ids": (n) => ({
    snapshot: {
      brokers: [],
      partitions: [{ topic: "t", partition: 0, replicas: [1], isr: [], leader: -1, elr: many(n, () => -3) }],
    },
  }),
  "state brokers of plain numbers": (n) => ({
    snapshot: { brokers: [], partitions: [] },
    state: { brokers: many(n, (i) => i), lastRunAtMs: null, lastRunCapped: false },
  }),
  "distinct replicas in one partition": (n) => ({
    snapshot: {
      brokers: [],
      partitions: [{ topic: "t", partition: 0, replicas: many(n, (i) => i), isr: [], leader: -1 }],
    },
  }),
  "null partitions": (n) => ({ snapshot: { brokers: [], partitions: many(n, () => null) } }),
  "numeric brokers": (n) => ({ snapshot: { brokers: many(n, (i) => i), partitions: [] } }),
  "too many brokers": () => ({
    snapshot: { brokers: many(MAX_BROKERS + 1, (id) => ({ id })), partitions: [] },
  }),
  "duplicate partitions": (n) => ({
    snapshot: {
      brokers: [],
      partitions: many(n, () => ({ topic: "t", partition: 0, replicas: [1], isr: [1], leader: 1 })),
    },
  }),
  "unknown config keys": (n) => ({
    snapshot: { brokers: [], partitions: [] },
    config: Object.fromEntries(many(n, (i) => [`leader.imbalance.x${i}`, i])),
  }),
};

describe("a hostile client", () => {
  let server: Awaited<ReturnType<typeof openServer>>;
  const cluster = snapshotOf(preferredPartitionsOf(1, 4, { outOfSync: 2 }));
  beforeAll(async () => {
    server = await openServer("dynalite");
    const first = await call(`${server.url}/v1/clusters/target/evaluate`, {
      body: { snapshot: cluster, config: WAIT_FOR_SYNC },
    });
    expect(first.status).toBe(200);
  });
  afterAll(() => server.close());

  it(`gets a 4xx for each of ${REQUESTS} large malformed bodies, changes nothing, and leaves the server responsive`, async () => {
    const before = (await call(`${server.url}/v1/clusters/target`)).json;
    const requests = fc.sample(
      fc.record({
        shape: fc.constantFrom(...Object.keys(HOSTILE)),
        size: fc.integer({ min: ENTRIES / 4, max: ENTRIES }),
        route: fc.constantFrom("/v1/evaluate", "/v1/clusters/target/evaluate"),
      }),
      { seed: SEED, numRuns: REQUESTS },
    );
    const statuses: number[] = [];
    const queue = [...requests];
    const worker = async () => {
      for (let r = queue.shift(); r; r = queue.shift()) {
        const body = (HOSTILE[r.shape] as (n: number) => unknown)(r.size) as Record<string, unknown>;
        // The managed endpoint owns the state: a hostile state goes to the pure endpoint only.
        const route = "state" in body ? "/v1/evaluate" : r.route;
        const reply = await call(`${server.url}${route}`, { body });
        statuses.push(reply.status);
        expect(reply.status, `${r.shape} at ${route}`).toBeGreaterThanOrEqual(400);
        expect(reply.status, `${r.shape} at ${route}`).toBeLessThan(500);
      }
    };
    await Promise.all(many(CONCURRENCY, worker));
    expect(statuses).toHaveLength(REQUESTS);
    const after = (await call(`${server.url}/v1/clusters/target`)).json;
    expect(after).toEqual(before);
    expect((await call(`${server.url}/healthz`)).status).toBe(200);
    const small = await call(`${server.url}/v1/evaluate`, { body: { snapshot: cluster } });
    expect(small.status).toBe(200);
  });
});
