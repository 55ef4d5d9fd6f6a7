import { describe, expect, it } from "vitest";
import type { RunAnswer } from "../../schemas/answer.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import {
  afterElections,
  preferredPartitionsOf,
  rowOf,
  run,
  snapshotOf,
  WAIT_FOR_SYNC,
} from "../support/cluster.ts";

/**
 * SPEC §4's extension: under the literal `imbalanced` basis the denominator shrinks as leadership returns,
 * so a broker released with stragglers just under the threshold is re-gated after its first batches.
 */
function drain(basis: "imbalanced" | "preferred", runs: number, onlyImbalanced = false): RunAnswer[] {
  const config: ConfigOverrides = {
    ...WAIT_FOR_SYNC,
    "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
    "leader.imbalance.election.wait.for.sync.threshold.basis": basis,
    "leader.imbalance.election.max.per.run": 200,
  };
  // 1,000 preferred partitions, 40 (4%) stuck out of ISR for good.
  let snapshot = snapshotOf(preferredPartitionsOf(1, 1000, { outOfSync: 40 }));
  let state = INITIAL_STATE;
  const answers: RunAnswer[] = [];
  for (let i = 0; i < runs; i++) {
    const sent = onlyImbalanced
      ? {
          brokers: snapshot.brokers.map((b) => (b.id === 1 ? { ...b, preferredCount: 1000 } : b)),
          partitions: snapshot.partitions.filter((p) => p.leader !== p.replicas[0]),
        }
      : snapshot;
    const answer = run(sent, config, state, i * 60_000);
    answers.push(answer);
    state = answer.state;
    snapshot = afterElections(snapshot, answer);
  }
  return answers;
}

describe("the gate's denominator", () => {
  it("under basis imbalanced re-gates a broker released just under the threshold and stalls it", () => {
    const answers = drain("imbalanced", 6);
    expect(answers.map((a) => a.elections.length)).toEqual([200, 200, 0, 0, 0, 0]);
    expect(rowOf(answers[2]!, 1)).toMatchObject({
      gated: true,
      reason: "over-threshold",
      outOfSync: 40,
      total: 600,
    });
  });

  it("under basis preferred keeps the ratio steady and drains every caught-up partition", () => {
    const answers = drain("preferred", 6);
    expect(answers.map((a) => a.elections.length)).toEqual([200, 200, 200, 200, 160, 0]);
    expect(answers.every((a) => rowOf(a, 1)?.total === 1000 && !rowOf(a, 1)?.gated)).toBe(true);
  });

  it("under basis preferred takes the total from brokers[].preferredCount when only imbalanced partitions are sent", () => {
    const answers = drain("preferred", 6, true);
    expect(answers.map((a) => a.elections.length)).toEqual([200, 200, 200, 200, 160, 0]);
    expect(rowOf(answers[3]!, 1)).toMatchObject({ total: 1000, outOfSync: 40 });
  });
});
