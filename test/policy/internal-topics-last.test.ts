import { describe, expect, it } from "vitest";
import { IMMEDIATE_PERIOD_MS } from "../../functions/policy/throttle.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { afterElections, partition, rowOf, run, snapshotOf } from "../support/cluster.ts";

/**
 * Extension: leader.imbalance.election.internal.topics.last. A broker's partitions of Kafka's own
 * topics (the group, transaction and share-group coordinators) come back after its others.
 */
const LAST: ConfigOverrides = { "leader.imbalance.election.internal.topics.last": true };

/** Broker 1 prefers 4 data partitions and 2 of __consumer_offsets, all led by 2 and in sync. */
const recovered = snapshotOf([
  ...[0, 1, 2, 3].map((i) => partition("orders", i, [1, 2, 3], { leader: 2 })),
  ...[0, 1].map((i) => partition("__consumer_offsets", i, [1, 2, 3], { leader: 2 })),
  partition("__transaction_state", 0, [2, 1, 3], { leader: 1 }),
]);

describe("internal topics last", () => {
  it("is off by default: Kafka's order, internal partitions with the rest", () => {
    const answer = run(recovered);
    expect(answer.elections.map((e) => e.topic)).toContain("__consumer_offsets");
    expect(rowOf(answer, 1)?.deferredInternal).toBe(0);
  });

  it("hands back the data partitions first, the coordinators in the next run, at once", () => {
    const first = run(recovered, LAST, INITIAL_STATE, 1_000);
    const second = run(afterElections(recovered, first), LAST, first.state, 2_000);
    // Round-robin over brokers 1 and 2; broker 2's internal partition goes now, since broker 2 has
    // nothing else to take back.
    expect(first.elections.map((e) => `${e.topic}-${e.partition}`)).toEqual([
      "orders-0",
      "__transaction_state-0",
      "orders-1",
      "orders-2",
      "orders-3",
    ]);
    expect(rowOf(first, 1)).toMatchObject({ elected: 4, deferredInternal: 2, deferredByThrottle: 0 });
    expect(first.partitions?.filter((p) => p.disposition === "deferred-internal")).toHaveLength(2);
    // The held partitions make it a run with more to do: the next comes after the throttle, not a
    // check interval later.
    expect(first.moreWorkRemains).toBe(true);
    expect(first.nextDelayMs).toBe(IMMEDIATE_PERIOD_MS);
    expect(second.elections.map((e) => `${e.topic}-${e.partition}`)).toEqual([
      "__consumer_offsets-0",
      "__consumer_offsets-1",
    ]);
    expect(second.moreWorkRemains).toBe(false);
  });

  it("does not hold the coordinators behind a data partition that cannot be elected", () => {
    const stuck = snapshotOf([
      partition("orders", 0, [1, 2, 3], { leader: 2, isr: [2, 3] }),
      partition("__consumer_offsets", 0, [1, 2, 3], { leader: 2 }),
    ]);
    expect(run(stuck, LAST).elections.map((e) => e.topic)).toEqual(["__consumer_offsets"]);
  });
});
