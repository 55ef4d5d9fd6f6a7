import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { StoreRejectedError } from "../../functions/store/store.ts";
import { MAX_BROKERS, MAX_REPLICAS } from "../../schemas/snapshot.ts";
import { call } from "../support/http.ts";
import { openServer, openStore, STORE_KINDS } from "../support/stores.ts";

/**
 * The documented limits: a snapshot past them gets a 400 naming the limit; one at them is paced,
 * state saved, on both DynamoDB-protocol servers (which hold items to 400 KB as DynamoDB does).
 */

const MAX_ID = 2_147_483_647;
const NOW = 1_767_225_600_000;
const WAIT_FOR_SYNC = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.max.wait.ms": 0,
};

/** MAX_BROKERS brokers with the largest ids, each the preferred replica of one partition it is behind on. */
function everyBrokerGated(brokers = MAX_BROKERS) {
  const ids = Array.from({ length: brokers }, (_, i) => MAX_ID - i);
  return {
    brokers: ids.map((id) => ({ id })),
    partitions: ids.map((id, i) => ({
      topic: `topic-with-a-long-name-${i}`,
      partition: MAX_ID - i,
      replicas: [id, ids[(i + 1) % brokers] as number],
      isr: [ids[(i + 1) % brokers] as number],
      leader: ids[(i + 1) % brokers] as number,
    })),
  };
}

describe.each(STORE_KINDS)("the documented limits on %s", (kind) => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer(kind);
  });
  afterAll(() => server.close());

  it(`paces a cluster of ${MAX_BROKERS} brokers that are all gated, run after run`, async () => {
    const snapshot = everyBrokerGated();
    for (let run = 0; run < 2; run++) {
      const answer = await call(`${server.url}/v1/clusters/huge/evaluate`, {
        body: { snapshot, config: WAIT_FOR_SYNC },
      });
      expect(answer.status).toBe(200);
      expect(answer.json.metrics.gatedBrokerCount).toBe(MAX_BROKERS);
    }
    const stored = await call(`${server.url}/v1/clusters/huge`);
    expect(stored.json.stateVersion).toBe(2);
    expect(stored.json.gate).toHaveLength(MAX_BROKERS);
  });

  it("refuses a snapshot over the broker limit with a 400 naming it, and stores nothing", async () => {
    const answer = await call(`${server.url}/v1/clusters/too-many/evaluate`, {
      body: { snapshot: everyBrokerGated(MAX_BROKERS + 1), config: WAIT_FOR_SYNC },
    });
    expect(answer.status).toBe(400);
    expect(answer.json.errors).toContainEqual({
      pointer: "/snapshot/brokers",
      detail: `at most ${MAX_BROKERS} brokers`,
    });
    expect((await call(`${server.url}/v1/clusters/too-many`)).status).toBe(404);
  });

  it("refuses replica lists over the limit", async () => {
    const replicas = Array.from({ length: MAX_REPLICAS + 1 }, (_, i) => i);
    const answer = await call(`${server.url}/v1/evaluate`, {
      body: {
        snapshot: { brokers: [], partitions: [{ topic: "t", partition: 0, replicas, isr: [], leader: -1 }] },
      },
    });
    expect(answer.status).toBe(400);
    expect(answer.json.errors).toContainEqual({
      pointer: "/snapshot/partitions/0/replicas",
      detail: `at most ${MAX_REPLICAS} ids`,
    });
  });

  it("classifies a write the store refuses as too large: StoreRejectedError, not an outage", async () => {
    const t = await openStore(kind);
    try {
      const brokers = Array.from({ length: 20_000 }, (_, i) => ({
        id: MAX_ID - i,
        gatedSinceMs: NOW,
        clearRuns: 0,
      }));
      const lastDecision = {
        decisionId: "d",
        evaluatedAtMs: NOW,
        electionCount: 0,
        moreWorkRemains: false,
        nextDelayMs: 0,
        deferred: null,
        gatedBrokers: [],
        maxWaitExpiredBrokers: [],
      };
      await expect(
        t.store.saveRun("x", 0, {
          state: { brokers, lastRunAtMs: NOW, lastRunCapped: false },
          lastDecision,
          nowMs: NOW,
        }),
      ).rejects.toBeInstanceOf(StoreRejectedError);
    } finally {
      await t.close();
    }
  });
});

describe("a write the store refuses", () => {
  it("is a 507 naming the cause, with no Retry-After and no elections", async () => {
    // The one fault no valid request can cause any more: a store that refuses the save.
    const t = await openStore("dynalite");
    try {
      const store = Object.create(t.store) as typeof t.store;
      store.saveRun = async () => {
        throw new StoreRejectedError(new Error("Item size has exceeded the maximum allowed size"));
      };
      const app = createApp({ store });
      const response = await app.request("/v1/clusters/x/evaluate", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ snapshot: everyBrokerGated(3) }),
      });
      expect(response.status).toBe(507);
      expect(response.headers.get("retry-after")).toBeNull();
      const problem = (await response.json()) as { type: string; detail: string };
      expect(problem.type).toBe("/problems/store-rejected");
      expect(problem.detail).toContain("Item size has exceeded");
    } finally {
      await t.close();
    }
  });
});
