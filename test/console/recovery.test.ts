import { describe, expect, it } from "vitest";
import { recoveryOf } from "../../functions/api/recovery.ts";
import type { RunAnswer } from "../../schemas/answer.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { partition, preferredPartitionsOf, run, runSeries, snapshotOf } from "../support/cluster.ts";

/** How far along a recovering broker is, as the fleet and cluster views show it, from real runs. */
const PACED: ConfigOverrides = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
  "leader.imbalance.election.max.per.run": 20,
  "leader.imbalance.election.throttle.interval.ms": 10_000,
};

/** Broker 1 prefers 100 partitions; it leads the first `leads`, the rest are led by 101; `outOfSync` of those lack it in the ISR. */
function brokerOne(leads: number, outOfSync: number) {
  const rest = preferredPartitionsOf(1, 100 - leads, { outOfSync, topic: "t" }).map((p) => ({
    ...p,
    partition: p.partition + leads,
  }));
  const led = Array.from({ length: leads }, (_, i) => partition("t", i, [1, 101, 201]));
  return snapshotOf([...led, ...rest]);
}

describe("a recovering broker's progress", () => {
  it("is gated with its in-sync count while over the threshold, with no time left guessed", () => {
    const [answer] = runSeries([{ snapshot: brokerOne(0, 40), nowMs: 1_000 }], PACED);
    expect(recoveryOf(answer as RunAnswer)).toEqual([
      { id: 1, preferred: 100, inSync: 60, leading: 0, phase: "gated", timeLeftMs: null },
    ]);
  });

  it("waits for a clear run, then ramps 20 a run 10 s apart: the time left is the runs left at that pace", () => {
    const answers = runSeries(
      [
        { snapshot: brokerOne(0, 40), nowMs: 1_000 },
        { snapshot: brokerOne(0, 0), nowMs: 2_000 },
        { snapshot: brokerOne(0, 0), nowMs: 3_000 },
      ],
      PACED,
    );
    expect(recoveryOf(answers[1] as RunAnswer)[0]).toMatchObject({
      phase: "waiting for a clear run",
      inSync: 100,
    });
    // 20 moved; 80 left at 20 a run, a run every 10 s.
    expect(recoveryOf(answers[2] as RunAnswer)).toEqual([
      { id: 1, preferred: 100, inSync: 100, leading: 20, phase: "ramping", timeLeftMs: 40_000 },
    ]);
  });

  it("leads all once the last run moved the rest, and a balanced broker is not listed", () => {
    const answer = run(brokerOne(95, 0), {
      ...PACED,
      "leader.imbalance.election.wait.for.sync.threshold.percent": 50,
    });
    expect(recoveryOf(answer)).toEqual([
      { id: 1, preferred: 100, inSync: 100, leading: 100, phase: "leads all", timeLeftMs: 0 },
    ]);
    expect(recoveryOf(run(brokerOne(100, 0), PACED))).toEqual([]);
  });

  it("says fenced or offline rather than out of sync", () => {
    const snapshot = brokerOne(0, 100);
    const fenced = run(
      { ...snapshot, brokers: snapshot.brokers.map((b) => (b.id === 1 ? { ...b, fenced: true } : b)) },
      PACED,
    );
    expect(recoveryOf(fenced)[0]).toMatchObject({ id: 1, phase: "fenced", inSync: 0 });
    const offline = run({ ...snapshot, brokers: snapshot.brokers.filter((b) => b.id !== 1) }, PACED);
    expect(recoveryOf(offline)[0]).toMatchObject({ id: 1, phase: "offline" });
  });
});
