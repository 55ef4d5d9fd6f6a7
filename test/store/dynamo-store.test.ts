import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DecisionSummary } from "../../functions/store/store.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { openStore, STORE_KINDS, type TestStore } from "../support/stores.ts";

const summary = (decisionId: string): DecisionSummary => ({
  decisionId,
  evaluatedAtMs: 1,
  electionCount: 0,
  moreWorkRemains: false,
  nextDelayMs: 300_000,
  deferred: null,
  gatedBrokers: [],
  maxWaitExpiredBrokers: [],
});
const run = (nowMs: number) => ({
  state: { ...INITIAL_STATE, lastRunAtMs: nowMs },
  lastDecision: summary(`d${nowMs}`),
  nowMs,
});

describe.each(STORE_KINDS)("the DynamoDB store on %s", (kind) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openStore(kind);
  });
  afterAll(() => t.close());

  it("saves a run only over the version it read", async () => {
    expect(await t.store.getCluster("v")).toBeNull();
    expect(await t.store.saveRun("v", 0, run(10))).toBe(true);
    expect(await t.store.saveRun("v", 0, run(11))).toBe(false);
    expect(await t.store.saveRun("v", 1, run(12))).toBe(true);
    const cluster = await t.store.getCluster("v");
    expect(cluster).toMatchObject({
      clusterId: "v",
      version: 2,
      state: { lastRunAtMs: 12 },
      lastDecision: { decisionId: "d12" },
    });
  });

  it("saves a tick's run only if no run of its key or a later one was saved, whatever the version", async () => {
    const tick = (key: string, atMs: number) => ({ key, outcome: { atMs, outcome: "ran" as const } });
    expect(await t.store.saveRun("k", 0, { ...run(10), tick: tick("000000000001000#0001", 10) })).toBe(true);
    expect(await t.store.saveRun("k", 1, { ...run(11), tick: tick("000000000001000#0001", 11) })).toBe(false);
    expect(await t.store.saveRun("k", 1, { ...run(12), tick: tick("000000000000500#0003", 12) })).toBe(false);
    // A run without a tick key (the managed endpoint) is not held back by one.
    expect(await t.store.saveRun("k", 1, run(13))).toBe(true);
    expect(await t.store.saveRun("k", 2, { ...run(14), tick: tick("000000000001000#0002", 14) })).toBe(true);
    expect(await t.store.getCluster("k")).toMatchObject({
      version: 3,
      lastTickKey: "000000000001000#0002",
      lastTick: { atMs: 14, outcome: "ran" },
    });
  });

  it("reads a cluster and the fleet config in one call", async () => {
    await t.store.putFleetConfig({ "leader.imbalance.election.max.per.run": 20 }, 1);
    await t.store.saveRun("both", 0, run(10));
    expect(await t.store.getClusterAndFleet("both")).toMatchObject({
      cluster: { clusterId: "both", version: 1 },
      fleetConfig: { "leader.imbalance.election.max.per.run": 20 },
    });
    expect(await t.store.getClusterAndFleet("nobody")).toMatchObject({ cluster: null });
  });

  it("keeps config and state apart: a config write neither bumps the version nor loses the state", async () => {
    await t.store.saveRun("c", 0, run(10));
    await t.store.putConfig("c", { "leader.imbalance.election.max.per.run": 7 }, 20);
    const cluster = await t.store.getCluster("c");
    expect(cluster).toMatchObject({
      version: 1,
      config: { "leader.imbalance.election.max.per.run": 7 },
      state: { lastRunAtMs: 10 },
    });
    expect(cluster?.createdAtMs).toBe(10);
  });

  it("resets the state with a version bump, so that a run that read the old state cannot save", async () => {
    await t.store.saveRun("r", 0, run(10));
    expect(await t.store.resetState("r", 11)).toBe(true);
    expect(await t.store.saveRun("r", 1, run(12))).toBe(false);
    expect(await t.store.getCluster("r")).toMatchObject({ version: 2, state: null });
    expect(await t.store.resetState("never", 1)).toBe(false);
  });

  it("lets one claim of an Idempotency-Key through, keeps the answer, and lets a dead claim lapse", async () => {
    const lease = (nowMs: number) => ({ nowMs, leaseMs: 30_000 });
    expect(await t.store.claimIdempotency("i", "k1", "h", { nowMs: 1_000, leaseMs: 30_000 })).toBeNull();
    expect(await t.store.claimIdempotency("i", "k1", "h", { nowMs: 2_000, leaseMs: 30_000 })).toEqual({
      done: false,
      requestHash: "h",
      leaseUntilMs: 31_000,
      staged: null,
    });
    const record = { requestHash: "h", decisionId: "d", status: 200, body: '{"a":1}' };
    expect(await t.store.stageIdempotency("i", "k1", record, lease(2_500), 90_000_000)).toBe(true);
    expect(await t.store.claimIdempotency("i", "k1", "h", { nowMs: 3_000, leaseMs: 30_000 })).toEqual({
      done: false,
      requestHash: "h",
      leaseUntilMs: 32_500,
      staged: record,
    });
    await t.store.commitIdempotency("i", "k1", "d");
    expect(await t.store.claimIdempotency("i", "k1", "h", { nowMs: 4_000, leaseMs: 30_000 })).toEqual({
      done: true,
      record,
    });

    // A claim with nothing staged lapses with its lease; a released one is free at once.
    expect(await t.store.claimIdempotency("i", "k2", "h", { nowMs: 1_000, leaseMs: 30_000 })).toBeNull();
    expect(await t.store.claimIdempotency("i", "k2", "h", { nowMs: 31_000, leaseMs: 30_000 })).toBeNull();
    await t.store.releaseIdempotency("i", "k2");
    expect(await t.store.claimIdempotency("i", "k2", "h", { nowMs: 32_000, leaseMs: 30_000 })).toBeNull();
  });

  it("keeps a staged answer past its lease until it is taken over or released by its decision", async () => {
    const lease = (nowMs: number) => ({ nowMs, leaseMs: 30_000 });
    const record = { requestHash: "h", decisionId: "s1", status: 200, body: "{}" };
    expect(await t.store.claimIdempotency("i", "k3", "h", { nowMs: 1_000, leaseMs: 30_000 })).toBeNull();
    expect(await t.store.stageIdempotency("i", "k3", record, lease(1_000), 90_000_000)).toBe(true);
    // Not free when its lease has run out: the run may have been saved.
    expect(await t.store.claimIdempotency("i", "k3", "h", { nowMs: 60_000, leaseMs: 30_000 })).toMatchObject({
      staged: record,
    });
    await t.store.releaseIdempotency("i", "k3");
    expect(await t.store.claimIdempotency("i", "k3", "h", { nowMs: 60_000, leaseMs: 30_000 })).toMatchObject({
      staged: record,
    });
    // Taken over only while its lease is out, and only once.
    expect(await t.store.takeOverIdempotency("i", "k3", "s1", "h", lease(20_000))).toBe(false);
    expect(await t.store.takeOverIdempotency("i", "k3", "s1", "h", lease(60_000))).toBe(true);
    expect(await t.store.takeOverIdempotency("i", "k3", "s1", "h", lease(60_000))).toBe(false);
    // The new holder's claim: a stage from the old one (another hash) is refused.
    expect(
      await t.store.stageIdempotency(
        "i",
        "k3",
        { ...record, requestHash: "other" },
        lease(61_000),
        90_000_000,
      ),
    ).toBe(false);
    // Released by the decision that was not saved.
    expect(
      await t.store.stageIdempotency("i", "k3", { ...record, decisionId: "s2" }, lease(61_000), 90_000_000),
    ).toBe(true);
    await t.store.releaseIdempotency("i", "k3", "s2");
    expect(await t.store.claimIdempotency("i", "k3", "h", { nowMs: 62_000, leaseMs: 30_000 })).toBeNull();
  });

  it("lists decisions newest first, after a given one, without the expired", async () => {
    const nowMs = Date.now();
    for (const [id, expiresAtMs] of [
      ["001", nowMs + 60_000],
      ["002", nowMs - 1_000],
      ["003", nowMs + 60_000],
      ["004", nowMs + 60_000],
    ] as const) {
      await t.store.putDecision(
        "d",
        { decisionId: id, evaluatedAtMs: Number(id), body: `{"id":"${id}"}` },
        expiresAtMs,
      );
    }
    const ids = async (options: { limit: number; after?: string }) =>
      (await t.store.listDecisions("d", { ...options, nowMs })).map((d) => d.decisionId);
    expect(await ids({ limit: 10 })).toEqual(["004", "003", "001"]);
    expect(await ids({ limit: 2 })).toEqual(["004", "003"]);
    expect(await ids({ limit: 10, after: "001" })).toEqual(["004", "003"]);
  });

  it("keeps a decision and an idempotent answer larger than one item, in pieces, whole", async () => {
    // Random text barely compresses: about 1.6 MB gzip'd, five items, more than one 1 MB query page.
    const large = JSON.stringify({ explained: randomBytes(1_500_000).toString("hex") });
    const nowMs = Date.now();
    await t.store.putDecision("big", { decisionId: "009", evaluatedAtMs: 9, body: large }, nowMs + 60_000);
    const [decision] = await t.store.listDecisions("big", { limit: 1, nowMs });
    expect(decision?.body).toBe(large);

    expect(await t.store.claimIdempotency("big", "k", "h", { nowMs: 1_000, leaseMs: 30_000 })).toBeNull();
    const record = { requestHash: "h", decisionId: "009", status: 200, body: large };
    await t.store.stageIdempotency("big", "k", record, { nowMs: 1_000, leaseMs: 30_000 }, 90_000_000);
    await t.store.commitIdempotency("big", "k", "009");
    expect(await t.store.claimIdempotency("big", "k", "h", { nowMs: 2_000, leaseMs: 30_000 })).toEqual({
      done: true,
      record,
    });
    // A completed record, in pieces or not, is never released.
    await t.store.releaseIdempotency("big", "k");
    expect(await t.store.claimIdempotency("big", "k", "h", { nowMs: 3_000, leaseMs: 30_000 })).toEqual({
      done: true,
      record,
    });
  });

  it("pages through the fleet, one row per cluster", async () => {
    const own = await openStore(kind);
    try {
      for (const id of ["a", "b", "c"]) await own.store.putConfig(id, {}, 1);
      await own.store.saveRun("b", 0, run(5));
      await own.store.putDecision(
        "b",
        { decisionId: "x", evaluatedAtMs: 5, body: "{}" },
        Date.now() + 60_000,
      );
      const first = await own.store.listClusters(2);
      expect(first.items.map((c) => c.clusterId)).toEqual(["a", "b"]);
      const second = await own.store.listClusters(2, first.cursor);
      expect(second.items.map((c) => c.clusterId)).toEqual(["c"]);
    } finally {
      await own.close();
    }
  });
});
