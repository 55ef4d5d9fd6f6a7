import { describe, expect, it } from "vitest";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { partition, run, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";

/**
 * The extension `pacer.catch.up.replication.throttled.rate`: while an active broker hosts replicas
 * outside the ISR, the answer names it, those replicas, the rate and where Kafka's replication quota
 * holds it (its leaders, each with its share, or the broker itself); a broker in sync everywhere is not
 * named, so its throttle is lifted.
 */
const MB = 1_000_000;
const CATCH_UP: ConfigOverrides = { ...WAIT_FOR_SYNC, "pacer.catch.up.replication.throttled.rate": 2 * MB };

/** Broker 1 back after a restart: in the ISR of orders-0 and -3 only; brokers 2 and 3 in sync. */
function broker1Behind() {
  return snapshotOf([
    partition("orders", 0, [1, 2, 3]),
    partition("orders", 1, [1, 2, 3], { leader: 2, isr: [2, 3] }),
    partition("orders", 2, [2, 1, 3], { isr: [2, 3] }),
    partition("orders", 3, [3, 1, 2]),
    partition("audit", 0, [2, 3, 1], { isr: [2, 3] }),
  ]);
}

describe("catch-up pacing (extension)", () => {
  it("is off by default: no throttle in the answer", () => {
    const answer = run(broker1Behind(), WAIT_FOR_SYNC);
    expect(answer.catchUpThrottles).toEqual([]);
    expect(answer.metrics.catchUpThrottledBrokerCount).toBe(0);
  });

  it("throttles a broker back from a restart on exactly the replicas it is catching up on, on the leader side their leaders", () => {
    const answer = run(broker1Behind(), {
      ...CATCH_UP,
      "pacer.catch.up.replication.throttled.side": "leader",
    });
    expect(answer.catchUpThrottles).toEqual([
      {
        broker: 1,
        rateBytesPerSecond: 2 * MB,
        outOfSync: 3,
        replicas: [
          { topic: "audit", partitions: [0] },
          { topic: "orders", partitions: [1, 2] },
        ],
        side: "leader",
        // orders-1 and -2 and audit-0 are all led by broker 2: it holds the whole rate.
        leaders: [
          {
            broker: 2,
            rateBytesPerSecond: 2 * MB,
            replicas: [
              { topic: "audit", partitions: [0] },
              { topic: "orders", partitions: [1, 2] },
            ],
          },
        ],
      },
    ]);
    expect(answer.metrics.catchUpThrottledBrokerCount).toBe(1);
  });

  it("shares the rate among the leaders by the replicas each leads", () => {
    const snapshot = snapshotOf([
      partition("t", 0, [2, 1], { isr: [2] }),
      partition("t", 1, [3, 1], { isr: [3] }),
      partition("t", 2, [3, 1], { isr: [3] }),
      partition("t", 3, [3, 1], { isr: [3] }),
    ]);
    const [throttle] = run(snapshot, {
      ...CATCH_UP,
      "pacer.catch.up.replication.throttled.side": "leader",
    }).catchUpThrottles;
    expect(throttle?.leaders.map((l) => [l.broker, l.rateBytesPerSecond])).toEqual([
      [2, 0.5 * MB],
      [3, 1.5 * MB],
    ]);
  });

  it("by default on the follower side: holds the broker itself and names no leaders", () => {
    const [throttle] = run(broker1Behind(), CATCH_UP).catchUpThrottles;
    expect(throttle).toMatchObject({ broker: 1, side: "follower", leaders: [], outOfSync: 3 });
  });

  it("names no broker once it is in sync everywhere, so that its throttle is lifted", () => {
    const inSync = snapshotOf([partition("orders", 0, [1, 2, 3]), partition("orders", 1, [2, 1, 3])]);
    expect(run(inSync, CATCH_UP).catchUpThrottles).toEqual([]);
  });

  it("leaves out a broker that is fenced, in controlled shutdown or not listed: it fetches nothing", () => {
    const partitions = [
      partition("orders", 0, [1, 2, 4], { isr: [2] }),
      partition("orders", 1, [3, 2, 5], { isr: [2] }),
    ];
    const snapshot = snapshotOf(partitions, [
      { id: 1, fenced: true },
      { id: 3, inControlledShutdown: true },
      { id: 2 },
      { id: 4 },
    ]);
    snapshot.brokers = snapshot.brokers.filter((b) => b.id !== 5);
    expect(run(snapshot, CATCH_UP).catchUpThrottles.map((t) => t.broker)).toEqual([4]);
  });

  it("leaves partitions being reassigned or deleted, and leaderless ones, to whoever moves them", () => {
    const snapshot = snapshotOf([
      partition("orders", 0, [1, 2, 3], { leader: 2, isr: [2, 3], reassigning: true }),
      partition("orders", 1, [1, 2, 3], { leader: 2, isr: [2, 3], deleting: true }),
      partition("orders", 2, [1, 2, 3], { leader: -1, isr: [] }),
      partition("orders", 3, [1, 2, 3], { leader: 2, isr: [2, 3] }),
    ]);
    expect(run(snapshot, CATCH_UP).catchUpThrottles).toMatchObject([
      {
        broker: 1,
        rateBytesPerSecond: 2 * MB,
        outOfSync: 1,
        replicas: [{ topic: "orders", partitions: [3] }],
      },
    ]);
  });

  it("throttles each broker behind on its own replicas, in ascending id", () => {
    const snapshot = snapshotOf([
      partition("orders", 0, [3, 2, 1], { isr: [3] }),
      partition("orders", 1, [1, 2, 3], { leader: 2, isr: [2] }),
    ]);
    const throttles = run(snapshot, CATCH_UP).catchUpThrottles;
    expect(throttles.map(({ broker, replicas }) => [broker, replicas])).toEqual([
      [1, [{ topic: "orders", partitions: [0, 1] }]],
      [2, [{ topic: "orders", partitions: [0] }]],
      [3, [{ topic: "orders", partitions: [1] }]],
    ]);
  });

  it("still paces the catch-up in a run the election throttle defers, and with rebalancing off", () => {
    const capped = { lastRunAtMs: 999_000, lastRunCapped: true, brokers: [] };
    const deferred = run(
      broker1Behind(),
      { ...CATCH_UP, "leader.imbalance.election.throttle.interval.ms": 15_000 },
      capped,
    );
    expect(deferred.deferred).toBe("throttle");
    expect(deferred.catchUpThrottles.map((t) => t.broker)).toEqual([1]);
    const disabled = run(broker1Behind(), { ...CATCH_UP, "auto.leader.rebalance.enable": false });
    expect(disabled.deferred).toBe("rebalance-disabled");
    expect(disabled.catchUpThrottles.map((t) => t.broker)).toEqual([1]);
  });

  it("asks again within a second while a broker with replicas behind is down, to throttle it as soon as it is back", () => {
    const down = snapshotOf(
      [partition("orders", 0, [1, 2, 3], { leader: 2, isr: [2, 3] }), partition("orders", 1, [2, 1, 3])],
      [{ id: 1, fenced: true }],
    );
    const config = { ...CATCH_UP, "leader.imbalance.check.interval.seconds": 300 };
    expect(run(down, config).nextDelayMs).toBe(1000);
    // Off, or the broker back (now throttled), or nothing behind: the proposal's schedule.
    expect(run(down, WAIT_FOR_SYNC).nextDelayMs).toBe(300_000);
    expect(run(broker1Behind(), config).nextDelayMs).toBe(300_000);
    const inSync = snapshotOf([partition("orders", 0, [1, 2, 3])], [{ id: 1, fenced: true }]);
    expect(run(inSync, config).nextDelayMs).toBe(300_000);
  });

  it("changes nothing of the elections, the gate or the state", () => {
    const without = run(broker1Behind(), WAIT_FOR_SYNC);
    const withThrottle = run(broker1Behind(), CATCH_UP);
    const { catchUpThrottles: _a, metrics: m1, config: _c1, ...rest1 } = without;
    const { catchUpThrottles: _b, metrics: m2, config: _c2, ...rest2 } = withThrottle;
    expect(rest2).toEqual(rest1);
    expect({ ...m2, catchUpThrottledBrokerCount: 0 }).toEqual(m1);
  });
});
