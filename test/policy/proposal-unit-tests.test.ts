import { describe, expect, it } from "vitest";
import { INITIAL_STATE } from "../../schemas/state.ts";
import {
  partition,
  preferredPartitionsOf,
  rowOf,
  run,
  runSeries,
  snapshotOf,
  WAIT_FOR_SYNC,
} from "../support/cluster.ts";

/** The proposal's unit test plan (ReplicationControlManagerTest and PeriodicTaskControlManagerTest), one by one. */

describe("max.per.run", () => {
  const snapshot = snapshotOf(preferredPartitionsOf(1, 50));

  it("caps elections per run and signals that more work remains", () => {
    const answer = run(snapshot, { "leader.imbalance.election.max.per.run": 20 });
    expect(answer.elections).toHaveLength(20);
    expect(answer.moreWorkRemains).toBe(true);
    expect(answer.metrics.electionsDeferredByThrottle).toBe(30);
    expect(answer.state.lastRunCapped).toBe(true);
  });

  it("reports more work for a run that exactly fills the cap (Kafka parity)", () => {
    const answer = run(snapshot, { "leader.imbalance.election.max.per.run": 50 });
    expect(answer.elections).toHaveLength(50);
    expect(answer.moreWorkRemains).toBe(true);
  });

  it("reports no more work below the cap and asks again after the check interval", () => {
    const answer = run(snapshot, { "leader.imbalance.election.max.per.run": 51 });
    expect(answer.elections).toHaveLength(50);
    expect(answer.moreWorkRemains).toBe(false);
    expect(answer.nextDelayMs).toBe(300_000);
  });
});

describe("the wait-for-sync gate", () => {
  it("with threshold 0 skips a broker that has any out-of-ISR preferred partition", () => {
    const answer = run(snapshotOf(preferredPartitionsOf(1, 100, { outOfSync: 1 })), WAIT_FOR_SYNC);
    expect(answer.elections).toEqual([]);
    expect(rowOf(answer, 1)).toMatchObject({
      gated: true,
      reason: "over-threshold",
      outOfSync: 1,
      total: 100,
    });
    expect(answer.metrics.electionsSkippedByGate).toBe(99);
    expect(answer.metrics.gatedBrokerCount).toBe(1);
  });

  it("with threshold 0 elects once the broker is fully in sync (a broker never gated needs no hysteresis)", () => {
    const answer = run(snapshotOf(preferredPartitionsOf(1, 100)), WAIT_FOR_SYNC);
    expect(answer.elections).toHaveLength(100);
    expect(rowOf(answer, 1)).toMatchObject({ gated: false, reason: "under-threshold" });
  });

  const atThreshold5 = { ...WAIT_FOR_SYNC, "leader.imbalance.election.wait.for.sync.threshold.percent": 5 };

  it("with threshold 5 does not gate a broker with 4% of its preferred partitions out of ISR", () => {
    const answer = run(snapshotOf(preferredPartitionsOf(1, 100, { outOfSync: 4 })), atThreshold5);
    expect(rowOf(answer, 1)?.gated).toBe(false);
    expect(answer.elections).toHaveLength(96);
  });

  it("with threshold 5 gates a broker at 6%", () => {
    const answer = run(snapshotOf(preferredPartitionsOf(1, 100, { outOfSync: 6 })), atThreshold5);
    expect(rowOf(answer, 1)?.gated).toBe(true);
    expect(answer.elections).toHaveLength(0);
  });

  it("with threshold 5 does not gate at exactly 5% (the rule is strictly more than)", () => {
    const answer = run(snapshotOf(preferredPartitionsOf(1, 100, { outOfSync: 5 })), atThreshold5);
    expect(rowOf(answer, 1)?.gated).toBe(false);
  });

  it("gates one broker without holding back another", () => {
    const snapshot = snapshotOf([
      ...preferredPartitionsOf(1, 10, { outOfSync: 5 }),
      ...preferredPartitionsOf(2, 10, { followers: [3, 4] }),
    ]);
    const answer = run(snapshot, WAIT_FOR_SYNC);
    expect(answer.elections.map((e) => e.leader)).toEqual(Array(10).fill(2));
  });
});

describe("max-wait, the escape hatch", () => {
  const stuck = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
  const config = { ...WAIT_FOR_SYNC, "leader.imbalance.election.wait.for.sync.max.wait.ms": 60_000 };

  it("releases a gated broker after the configured duration even if it remains out of sync", () => {
    const [first, before, after] = runSeries(
      [
        { snapshot: stuck, nowMs: 0 },
        { snapshot: stuck, nowMs: 59_999 },
        { snapshot: stuck, nowMs: 60_000 },
      ],
      config,
    );
    expect(rowOf(first!, 1)).toMatchObject({ gated: true, gatedSinceMs: 0 });
    expect(rowOf(before!, 1)?.gated).toBe(true);
    expect(rowOf(after!, 1)).toMatchObject({ gated: false, reason: "max-wait-expired", gatedSinceMs: 0 });
    expect(after!.elections).toHaveLength(5);
    expect(after!.metrics.maxWaitExpiredBrokerCount).toBe(1);
  });

  it("never releases with max.wait.ms = 0", () => {
    const answers = runSeries(
      [0, 1e9, 1e12].map((nowMs) => ({ snapshot: stuck, nowMs })),
      { ...config, "leader.imbalance.election.wait.for.sync.max.wait.ms": 0 },
    );
    expect(answers.map((a) => rowOf(a, 1)?.gated)).toEqual([true, true, true]);
  });

  it("ends the episode after two clear runs past max-wait, so a later fall-behind is gated afresh", () => {
    const caughtUp = snapshotOf(preferredPartitionsOf(1, 10));
    const answers = runSeries(
      [
        { snapshot: stuck, nowMs: 0 },
        { snapshot: stuck, nowMs: 60_000 },
        { snapshot: caughtUp, nowMs: 61_000 },
        { snapshot: caughtUp, nowMs: 62_000 },
        { snapshot: stuck, nowMs: 63_000 },
      ],
      config,
    );
    expect(answers.map((a) => rowOf(a, 1)?.reason)).toEqual([
      "over-threshold",
      "max-wait-expired",
      "max-wait-expired",
      "max-wait-expired",
      "over-threshold",
    ]);
    expect(answers[3]!.state.brokers).toEqual([]);
    expect(rowOf(answers[4]!, 1)).toMatchObject({ gated: true, gatedSinceMs: 63_000 });
  });

  it("restarts the clock of a broker that went down and came back still behind", () => {
    const fenced = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }), [{ id: 1, fenced: true }]);
    const answers = runSeries(
      [
        { snapshot: stuck, nowMs: 0 },
        { snapshot: fenced, nowMs: 30_000 },
        { snapshot: stuck, nowMs: 90_000 },
      ],
      config,
    );
    expect(rowOf(answers[1]!, 1)).toMatchObject({ gated: false, reason: "inactive", gatedSinceMs: null });
    expect(answers[1]!.state.brokers).toEqual([]);
    expect(rowOf(answers[2]!, 1)).toMatchObject({
      gated: true,
      reason: "over-threshold",
      gatedSinceMs: 90_000,
    });
  });
});

describe("hysteresis", () => {
  it("keeps a broker that briefly dropped out of ISR gated for one more run after it returns", () => {
    const inSync = snapshotOf(preferredPartitionsOf(1, 10));
    const dropped = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 1 }));
    const answers = runSeries(
      [
        { snapshot: dropped, nowMs: 0 },
        { snapshot: inSync, nowMs: 1000 },
        { snapshot: inSync, nowMs: 2000 },
      ],
      WAIT_FOR_SYNC,
    );
    expect(answers.map((a) => rowOf(a, 1)?.reason)).toEqual(["over-threshold", "hysteresis", "released"]);
    expect(answers.map((a) => a.elections.length)).toEqual([0, 0, 10]);
    expect(rowOf(answers[1]!, 1)?.clearRuns).toBe(1);
    expect(answers[2]!.state.brokers).toEqual([]);
  });

  it("starts counting again when the broker falls behind mid-hysteresis", () => {
    const inSync = snapshotOf(preferredPartitionsOf(1, 10));
    const dropped = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 1 }));
    const answers = runSeries(
      [dropped, inSync, dropped, inSync, inSync].map((snapshot, i) => ({ snapshot, nowMs: i * 1000 })),
      WAIT_FOR_SYNC,
    );
    expect(answers.map((a) => rowOf(a, 1)?.reason)).toEqual([
      "over-threshold",
      "hysteresis",
      "over-threshold",
      "hysteresis",
      "released",
    ]);
    expect(rowOf(answers[4]!, 1)?.elected).toBe(10);
  });
});

describe("rule 0: activity comes from the broker list, not from having a group", () => {
  it("keeps counting clear runs for a listed, unfenced broker whose group is empty, and keeps its gatedSinceMs", () => {
    const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
    // Its leadership came back by other means: nothing is imbalanced, broker 1 is still listed.
    const noGroup = snapshotOf([], behind.brokers);
    const answers = runSeries(
      [
        { snapshot: behind, nowMs: 0 },
        { snapshot: noGroup, nowMs: 1000 },
        { snapshot: noGroup, nowMs: 2000 },
      ],
      WAIT_FOR_SYNC,
    );
    expect(rowOf(answers[1]!, 1)).toMatchObject({
      gated: true,
      reason: "hysteresis",
      clearRuns: 1,
      gatedSinceMs: 0,
    });
    expect(answers[1]!.state.brokers).toEqual([{ id: 1, gatedSinceMs: 0, clearRuns: 1 }]);
    expect(rowOf(answers[2]!, 1)).toMatchObject({ gated: false, reason: "released" });
    expect(answers[2]!.state.brokers).toEqual([]);
  });

  it("keeps the max-wait clock of a broker that falls behind again after an empty-group run", () => {
    const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
    const noGroup = snapshotOf([], behind.brokers);
    const answers = runSeries(
      [
        { snapshot: behind, nowMs: 0 },
        { snapshot: noGroup, nowMs: 1000 },
        { snapshot: behind, nowMs: 2000 },
      ],
      { ...WAIT_FOR_SYNC, "leader.imbalance.election.wait.for.sync.max.wait.ms": 60_000 },
    );
    expect(rowOf(answers[2]!, 1)).toMatchObject({ gated: true, reason: "over-threshold", gatedSinceMs: 0 });
  });
});

describe("round-robin selection", () => {
  it("gives each of two brokers with 1,000 imbalanced partitions 100 ± 1 of a 200 cap", () => {
    const snapshot = snapshotOf([
      ...preferredPartitionsOf(1, 1000, { followers: [3, 4] }),
      ...preferredPartitionsOf(2, 1000, { followers: [3, 4] }),
    ]);
    const answer = run(snapshot, { "leader.imbalance.election.max.per.run": 200 });
    const perBroker = [1, 2].map((id) => answer.elections.filter((e) => e.leader === id).length);
    for (const count of perBroker) expect(Math.abs(count - 100)).toBeLessThanOrEqual(1);
    expect(rowOf(answer, 1)).toMatchObject({ elected: 100, deferredByThrottle: 900 });
  });

  it("alternates in ascending broker id, each bucket by topic then partition number", () => {
    const snapshot = snapshotOf([
      partition("b", 1, [2, 3], { leader: 3 }),
      partition("a", 10, [2, 3], { leader: 3 }),
      partition("a", 9, [2, 3], { leader: 3 }),
      partition("z", 0, [1, 3], { leader: 3 }),
      partition("B", 0, [1, 3], { leader: 3 }),
    ]);
    const answer = run(snapshot);
    expect(answer.elections).toEqual([
      { topic: "B", partition: 0, leader: 1 },
      { topic: "a", partition: 9, leader: 2 },
      { topic: "z", partition: 0, leader: 1 },
      { topic: "a", partition: 10, leader: 2 },
      { topic: "b", partition: 1, leader: 2 },
    ]);
    expect(answer.kafkaLeaderElection.partitions[0]).toEqual({ topic: "B", partition: 0 });
  });
});

describe("the immediate algorithm", () => {
  it("elects exactly Kafka's eligible set when not capped", () => {
    const snapshot = snapshotOf(
      [
        partition("t", 0, [1, 2, 3]), // balanced
        partition("t", 1, [1, 2, 3], { leader: 2 }), // eligible
        partition("t", 2, [1, 2, 3], { leader: 2, isr: [2, 3] }), // preferred not in ISR
        partition("t", 3, [1, 2, 3], { leader: -1, isr: [], elr: [1] }), // eligible via ELR
        partition("t", 4, [1, 2, 3], { leader: -1, isr: [], elr: [2] }), // preferred not in ELR either
        partition("t", 5, [1, 2, 3], { leader: 2, reassigning: true }),
        partition("t", 6, [1, 2, 3], { leader: 2, deleting: true }),
        partition("t", 7, [4, 2, 3], { leader: 2 }), // preferred fenced
        partition("t", 8, [5, 2, 3], { leader: 2 }), // preferred in controlled shutdown
        partition("t", 9, [9, 2, 3], { leader: 2 }), // preferred unregistered
        partition("t", 10, [1, 2, 3], { leader: -1 }), // leaderless, preferred in ISR
      ],
      [
        { id: 4, fenced: true },
        { id: 5, inControlledShutdown: true },
      ],
    );
    snapshot.brokers = snapshot.brokers.filter((b) => b.id !== 9);
    const answer = run(snapshot);
    expect(answer.elections.map((e) => e.partition)).toEqual([1, 3, 10]);
    expect(Object.fromEntries(answer.partitions!.map((p) => [p.partition, p.disposition]))).toEqual({
      1: "elected",
      2: "preferred-not-in-isr",
      3: "elected",
      4: "preferred-not-in-isr",
      5: "reassigning",
      6: "deleting",
      7: "preferred-fenced",
      8: "preferred-in-controlled-shutdown",
      9: "preferred-unregistered",
      10: "elected",
    });
  });

  it("gates nobody and clears the gate state left by wait-for-sync", () => {
    const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
    const gated = run(behind, WAIT_FOR_SYNC);
    const answer = run(behind, {}, gated.state);
    expect(rowOf(answer, 1)).toMatchObject({
      gated: false,
      reason: "algorithm-immediate",
      gatedSinceMs: null,
    });
    expect(answer.state.brokers).toEqual([]);
    expect(answer.elections).toHaveLength(5);
    expect(answer.metrics.outOfSyncPreferredPartitionCount).toEqual({ 1: 5 });
  });
});

describe("the throttle and the reschedule delay", () => {
  const snapshot = snapshotOf(preferredPartitionsOf(1, 50));
  const throttled = {
    "leader.imbalance.election.max.per.run": 20,
    "leader.imbalance.election.throttle.interval.ms": 15_000,
  };

  it("asks again after the throttle interval when capped", () => {
    expect(run(snapshot, throttled).nextDelayMs).toBe(15_000);
  });

  it("asks again after Kafka's immediate period (10 ms) when capped with no throttle", () => {
    expect(run(snapshot, { "leader.imbalance.election.max.per.run": 20 }).nextDelayMs).toBe(10);
  });

  it("defers a run that comes too early after a capped run, touching no state", () => {
    const first = run(snapshot, throttled, INITIAL_STATE, 100_000);
    const early = run(snapshot, throttled, first.state, 104_000);
    expect(early.deferred).toBe("throttle");
    expect(early.elections).toEqual([]);
    expect(early.nextDelayMs).toBe(11_000);
    expect(early.state).toEqual(first.state);
    expect(early.metrics.electionsDeferredByThrottle).toBe(50);
    expect(new Set(early.partitions!.map((p) => p.disposition))).toEqual(new Set(["deferred-throttle"]));
  });

  it("runs again once the interval has passed", () => {
    const first = run(snapshot, throttled, INITIAL_STATE, 100_000);
    const onTime = run(snapshot, throttled, first.state, 115_000);
    expect(onTime.deferred).toBeNull();
    expect(onTime.elections).toHaveLength(20);
  });

  it("does not hold the gate's evaluation of a deferred run against the broker", () => {
    const behind = snapshotOf([
      ...preferredPartitionsOf(1, 10, { outOfSync: 1 }),
      ...preferredPartitionsOf(2, 50, { followers: [3, 4] }),
    ]);
    const config = { ...WAIT_FOR_SYNC, ...throttled };
    const first = run(behind, config, INITIAL_STATE, 0);
    const deferred = run(behind, config, first.state, 1_000);
    expect(deferred.state).toBe(first.state);
    expect(rowOf(deferred, 1)).toMatchObject({ reason: "throttle-deferred", clearRuns: 0, gatedSinceMs: 0 });
  });

  it("does not throttle after a run that was not capped", () => {
    const small = { ...throttled, "leader.imbalance.election.max.per.run": 100 };
    const first = run(snapshot, small, INITIAL_STATE, 100_000);
    expect(run(snapshot, small, first.state, 100_001).deferred).toBeNull();
  });

  it("takes a config change on the next run", () => {
    const first = run(snapshot, throttled, INITIAL_STATE, 100_000);
    const faster = { ...throttled, "leader.imbalance.election.throttle.interval.ms": 2_000 };
    expect(run(snapshot, faster, first.state, 102_000).elections).toHaveLength(20);
    expect(
      run(snapshot, { ...throttled, "leader.imbalance.election.max.per.run": 5 }, first.state, 115_000)
        .elections,
    ).toHaveLength(5);
  });

  it("never waits longer than one interval when the clock went backwards", () => {
    const first = run(snapshot, throttled, INITIAL_STATE, 100_000);
    expect(run(snapshot, throttled, first.state, 50_000).nextDelayMs).toBe(15_000);
  });
});

describe("auto.leader.rebalance.enable = false", () => {
  it("elects nothing, changes nothing and asks again after the check interval", () => {
    const behind = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
    const gated = run(behind, WAIT_FOR_SYNC, INITIAL_STATE, 0);
    const off = run(
      snapshotOf(preferredPartitionsOf(1, 10)),
      {
        ...WAIT_FOR_SYNC,
        "auto.leader.rebalance.enable": false,
        "leader.imbalance.check.interval.seconds": 60,
      },
      gated.state,
      1000,
    );
    expect(off.elections).toEqual([]);
    expect(off.deferred).toBe("rebalance-disabled");
    expect(off.state).toBe(gated.state);
    expect(off.nextDelayMs).toBe(60_000);
  });
});
