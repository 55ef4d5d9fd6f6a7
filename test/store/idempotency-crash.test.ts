import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inProcess, managedRun } from "../../functions/api/managed-run.ts";
import type { PacerStore } from "../../functions/store/store.ts";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { openStore, STORE_KINDS, type TestStore } from "../support/stores.ts";

/**
 * A process that dies in the middle of an idempotent run, at each step where it can: a retry with the
 * same key after the lease never advances the state twice, and answers what the first run decided.
 * Death is the one fault a real store cannot be made to cause, so a wrapper causes it: from just
 * before the named operation on, every call of the dying attempt fails.
 */

type Step = "saveRun" | "putDecision" | "commitIdempotency";

function dyingAt(store: PacerStore, step: Step): PacerStore {
  let dead = false;
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        if (name === step) dead = true;
        if (dead) throw new Error(`the process died before ${String(name)}`);
        return value.apply(target, args);
      };
    },
  });
}

/** The save takes effect, but its reply is lost (a timeout): the process lives on and sees an error. */
function losingSaveReply(store: PacerStore): PacerStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name !== "saveRun" || typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await value.apply(target, args);
        throw new Error("the save timed out");
      };
    },
  });
}

const snapshot = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
const request = { snapshot, config: WAIT_FOR_SYNC, state: undefined, nowMs: undefined };
const requestBytes = Buffer.from(JSON.stringify({ snapshot, config: WAIT_FOR_SYNC }));
const options = (nowMs: number) => ({
  clock: () => nowMs,
  dryRun: false,
  explain: false,
  idempotencyKey: "retry-me",
  decisionTtlMs: 7 * 86_400_000,
  idempotencyTtlMs: 86_400_000,
});

describe.each(STORE_KINDS)("an idempotent run whose process dies, on %s", (kind) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openStore(kind);
  });
  afterAll(() => t.close());

  it.each<[Step, boolean]>([
    ["commitIdempotency", true],
    ["putDecision", true],
    ["saveRun", false],
  ])(
    "dies before %s: a retry after the lease runs once in all (the run was saved: %s)",
    async (step, saved) => {
      const clusterId = `dies-at-${step}`;
      const t0 = 1_796_000_000_000;
      await expect(
        managedRun(dyingAt(t.store, step), clusterId, inProcess(request), requestBytes, options(t0)),
      ).rejects.toThrow("the process died");

      // While the lease holds, a retry is told the first is still running.
      const early = await managedRun(
        t.store,
        clusterId,
        inProcess(request),
        requestBytes,
        options(t0 + 5_000),
      );
      expect(early.status).toBe(409);

      const retry = await managedRun(
        t.store,
        clusterId,
        inProcess(request),
        requestBytes,
        options(t0 + 31_000),
      );
      expect(retry.status).toBe(200);
      expect(retry.replayed).toBe(saved);
      const answer = JSON.parse(retry.body);
      // Saved first: the first run's own answer, from its time. Not saved: the retry's run.
      expect(answer.evaluatedAtMs).toBe(saved ? t0 : t0 + 31_000);
      expect(answer.stateVersion).toBe(1);
      const cluster = await t.store.getCluster(clusterId);
      expect(cluster?.version).toBe(1);
      expect(cluster?.state?.brokers).toEqual([{ id: 1, gatedSinceMs: answer.evaluatedAtMs, clearRuns: 0 }]);
      const decisions = await t.store.listDecisions(clusterId, { limit: 10, nowMs: t0 + 31_000 });
      expect(decisions.map((d) => d.decisionId)).toEqual([answer.decisionId]);

      // And from then on the key replays that answer byte for byte.
      const again = await managedRun(
        t.store,
        clusterId,
        inProcess(request),
        requestBytes,
        options(t0 + 40_000),
      );
      expect(again).toMatchObject({ status: 200, replayed: true, body: retry.body });
    },
  );

  it("keeps the staged answer when a save's reply is lost, so that the retry replays it", async () => {
    const t0 = 1_796_000_000_000;
    const lost = managedRun(
      losingSaveReply(t.store),
      "lost-reply",
      inProcess(request),
      requestBytes,
      options(t0),
    );
    await expect(lost).rejects.toThrow("timed out");
    const retry = await managedRun(
      t.store,
      "lost-reply",
      inProcess(request),
      requestBytes,
      options(t0 + 31_000),
    );
    expect(retry).toMatchObject({ status: 200, replayed: true });
    expect(JSON.parse(retry.body).evaluatedAtMs).toBe(t0);
    expect((await t.store.getCluster("lost-reply"))?.version).toBe(1);
  });

  it("knows a saved run by its stored decision when other runs followed it", async () => {
    const t0 = 1_796_000_000_000;
    const died = managedRun(
      dyingAt(t.store, "commitIdempotency"),
      "followed",
      inProcess(request),
      requestBytes,
      options(t0),
    );
    await expect(died).rejects.toThrow("the process died");
    const other = await managedRun(t.store, "followed", inProcess(request), requestBytes, {
      ...options(t0 + 10_000),
      idempotencyKey: undefined,
    });
    expect(other.status).toBe(200);
    const retry = await managedRun(
      t.store,
      "followed",
      inProcess(request),
      requestBytes,
      options(t0 + 31_000),
    );
    expect(retry).toMatchObject({ status: 200, replayed: true });
    expect(JSON.parse(retry.body).evaluatedAtMs).toBe(t0);
    expect((await t.store.getCluster("followed"))?.version).toBe(2);
  });
});
