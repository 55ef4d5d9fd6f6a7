import { describe, expect, it } from "vitest";
import type { RunAnswer } from "../../schemas/answer.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { INITIAL_STATE, type PacerState } from "../../schemas/state.ts";
import { preferredPartitionsOf, rowOf, run, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";

/**
 * The extension `leader.imbalance.election.wait.for.sync.max.lag.bytes`: beside the proposal's share of
 * partitions out of sync, a broker is gated while its replicas still have more than that many bytes to
 * fetch — the last few partitions out of sync can hold most of a catch-up.
 */
const MB = 1_000_000;
const PACING: ConfigOverrides = {
  ...WAIT_FOR_SYNC,
  "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
  "leader.imbalance.election.max.per.run": 1000,
};
const WITH_MAX_LAG: ConfigOverrides = {
  ...PACING,
  "leader.imbalance.election.wait.for.sync.max.lag.bytes": 50 * MB,
};

/** Broker 1 with 100 preferred partitions, 2 of them out of sync (under a 5 % threshold), and its lag. */
function recovering(lagBytes: number | undefined) {
  return snapshotOf(preferredPartitionsOf(1, 100, { outOfSync: 2 }), [{ id: 1, lagBytes }]);
}

/** Runs a minute apart, broker 1's lag given per run; the answers. */
function series(config: ConfigOverrides, lags: (number | undefined)[]): RunAnswer[] {
  let state: PacerState = INITIAL_STATE;
  return lags.map((lag, i) => {
    const answer = run(recovering(lag), config, state, i * 60_000);
    state = answer.state;
    return answer;
  });
}

describe("the max-lag-bytes gate (extension)", () => {
  it("gates a broker 2 % out of sync while it still has 600 MB to fetch", () => {
    const [answer] = series(WITH_MAX_LAG, [600 * MB]);
    expect(answer?.elections).toEqual([]);
    expect(rowOf(answer as RunAnswer, 1)).toMatchObject({
      gated: true,
      reason: "over-max-lag-bytes",
      outOfSync: 2,
      total: 100,
      lagBytes: 600 * MB,
    });
  });

  it("releases it after two clear runs once the lag is at most the limit, and the second run elects", () => {
    const answers = series(WITH_MAX_LAG, [600 * MB, 120 * MB, 50 * MB, 10 * MB]);
    expect(answers.map((a) => rowOf(a, 1)?.reason)).toEqual([
      "over-max-lag-bytes",
      "over-max-lag-bytes",
      "hysteresis",
      "released",
    ]);
    expect(answers.map((a) => a.elections.length)).toEqual([0, 0, 0, 98]);
  });

  it("keeps a broker gated whose lag the snapshot does not give, until max-wait lets it through", () => {
    const config = { ...WITH_MAX_LAG, "leader.imbalance.election.wait.for.sync.max.wait.ms": 120_000 };
    const answers = series(config, [undefined, undefined, undefined]);
    expect(answers.map((a) => rowOf(a, 1)?.reason)).toEqual([
      "over-max-lag-bytes",
      "over-max-lag-bytes",
      "max-wait-expired",
    ]);
    expect(rowOf(answers[0] as RunAnswer, 1)).not.toHaveProperty("lagBytes");
    expect(answers.map((a) => a.elections.length)).toEqual([0, 0, 98]);
  });

  it("names the proposal's threshold first when a broker is over both", () => {
    const snapshot = snapshotOf(preferredPartitionsOf(1, 100, { outOfSync: 30 }), [
      { id: 1, lagBytes: 600 * MB },
    ]);
    expect(rowOf(run(snapshot, WITH_MAX_LAG, INITIAL_STATE, 0), 1)?.reason).toBe("over-threshold");
  });

  it("is off by default: the lag is reported and the proposal's rule alone decides", () => {
    const [answer] = series(PACING, [600 * MB]);
    expect(answer?.elections).toHaveLength(98);
    expect(rowOf(answer as RunAnswer, 1)).toMatchObject({ gated: false, lagBytes: 600 * MB });
  });

  it("does not judge a broker with nothing to take back", () => {
    const balanced = snapshotOf(
      preferredPartitionsOf(1, 10).map((p) => ({ ...p, leader: 1 })),
      [{ id: 1, lagBytes: 600 * MB }],
    );
    const answer = run(balanced, WITH_MAX_LAG, INITIAL_STATE, 0);
    expect(answer.brokers).toEqual([]);
    expect(answer.metrics.gatedBrokerCount).toBe(0);
  });
});
