import { describe, expect, it } from "vitest";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import { validateState } from "../../schemas/state.ts";
import { partition } from "../support/cluster.ts";

const brokers = [{ id: 1 }, { id: 2 }, { id: 3 }];

function problemsOf(input: unknown) {
  const result = validateSnapshot(input, "/snapshot");
  return result.ok ? [] : result.problems;
}

describe("snapshot validation", () => {
  it("accepts a snapshot with optional fields left out", () => {
    const result = validateSnapshot({ brokers, partitions: [partition("orders", 0, [1, 2, 3])] });
    expect(result.ok).toBe(true);
  });

  it("accepts a topic's partitions in any order, topics interleaved, and long replica lists", () => {
    const partitions = [
      partition("t", 2, [1]),
      partition("u", 0, [2]),
      partition("t", 0, [1]),
      partition("u", 1, [2]),
      partition("t", 1, [3]),
      partition("v", 0, [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1], { isr: [1, 5, 12] }),
    ];
    expect(validateSnapshot({ brokers, partitions }).ok).toBe(true);
  });

  it.each([
    ["a duplicate broker id", { brokers: [...brokers, { id: 2 }], partitions: [] }, "/snapshot/brokers/3/id"],
    [
      "a duplicate (topic, partition)",
      { brokers, partitions: [partition("t", 0, [1]), partition("t", 0, [2])] },
      "/snapshot/partitions/1",
    ],
    [
      "a (topic, partition) listed again after another topic",
      { brokers, partitions: [partition("t", 0, [1]), partition("u", 0, [1]), partition("t", 0, [2])] },
      "/snapshot/partitions/2",
    ],
    [
      "a (topic, partition) listed again after a lower one",
      { brokers, partitions: [partition("t", 1, [1]), partition("t", 0, [1]), partition("t", 1, [2])] },
      "/snapshot/partitions/2",
    ],
    [
      "an invalid topic name",
      { brokers, partitions: [partition("orders!", 0, [1])] },
      "/snapshot/partitions/0/topic",
    ],
    [
      "the topic name '..'",
      { brokers, partitions: [partition("..", 0, [1])] },
      "/snapshot/partitions/0/topic",
    ],
    [
      "a topic name of 250 chars",
      { brokers, partitions: [partition("t".repeat(250), 0, [1])] },
      "/snapshot/partitions/0/topic",
    ],
    [
      "empty replicas",
      { brokers, partitions: [partition("t", 0, [], { leader: -1 })] },
      "/snapshot/partitions/0/replicas",
    ],
    [
      "duplicate replicas",
      { brokers, partitions: [partition("t", 0, [1, 1])] },
      "/snapshot/partitions/0/replicas",
    ],
    [
      "duplicate replicas in a list of ten",
      { brokers, partitions: [partition("t", 0, [1, 2, 3, 4, 5, 6, 7, 8, 9, 1])] },
      "/snapshot/partitions/0/replicas",
    ],
    [
      "an isr member that is not one of ten replicas",
      {
        brokers,
        partitions: [partition("t", 0, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], { isr: [1, 11] })],
      },
      "/snapshot/partitions/0/isr",
    ],
    [
      "an isr member that is not a replica",
      { brokers, partitions: [partition("t", 0, [1, 2], { isr: [1, 3] })] },
      "/snapshot/partitions/0/isr",
    ],
    [
      "a duplicate in the isr",
      { brokers, partitions: [partition("t", 0, [1, 2], { isr: [1, 1] })] },
      "/snapshot/partitions/0/isr",
    ],
    [
      "a leader outside the replicas",
      { brokers, partitions: [partition("t", 0, [1, 2], { leader: 3 })] },
      "/snapshot/partitions/0/leader",
    ],
    ["a negative broker id", { brokers: [{ id: -1 }], partitions: [] }, "/snapshot/brokers/0/id"],
    [
      "a negative replica id",
      { brokers, partitions: [partition("t", 0, [1, -2])] },
      "/snapshot/partitions/0/replicas/1",
    ],
    [
      "a non-integer partition",
      { brokers, partitions: [{ ...partition("t", 0, [1]), partition: 0.5 }] },
      "/snapshot/partitions/0/partition",
    ],
    ["a string id", { brokers: [{ id: "1" }], partitions: [] }, "/snapshot/brokers/0/id"],
    [
      "a missing isr",
      { brokers, partitions: [{ topic: "t", partition: 0, replicas: [1], leader: 1 }] },
      "/snapshot/partitions/0/isr",
    ],
    [
      "a preferredCount below the partitions listed",
      {
        brokers: [{ id: 1, preferredCount: 1 }],
        partitions: [partition("t", 0, [1]), partition("t", 1, [1])],
      },
      "/snapshot/brokers/0/preferredCount",
    ],
    [
      "a negative lagBytes",
      { brokers: [{ id: 1, lagBytes: -1 }], partitions: [] },
      "/snapshot/brokers/0/lagBytes",
    ],
  ])("rejects %s, naming its JSON path", (_, input, at) => {
    expect(problemsOf(input).map((p) => p.pointer)).toContain(at);
  });

  it("lists every problem, not only the first", () => {
    const problems = problemsOf({
      brokers: [{ id: 1 }, { id: 1 }],
      partitions: [partition("t", 0, [1], { leader: 2 }), partition("t", 1, [1, 1], { isr: [1] })],
    });
    expect(problems.map((p) => p.pointer)).toEqual([
      "/snapshot/brokers/1/id",
      "/snapshot/partitions/0/leader",
      "/snapshot/partitions/1/replicas",
    ]);
  });

  it("caps the list at 100 problems for a huge bad snapshot", () => {
    const partitions = Array.from({ length: 500 }, (_, i) => partition("t", i, [1], { leader: 9 }));
    expect(problemsOf({ brokers, partitions })).toHaveLength(100);
  });

  it("rejects a body that is not an object", () => {
    expect(problemsOf([1, 2])).toEqual([{ pointer: "/snapshot", detail: expect.stringMatching(/object/) }]);
  });
});

describe("state validation", () => {
  it("accepts the initial state and a gate entry", () => {
    expect(validateState({ brokers: [], lastRunAtMs: null, lastRunCapped: false }).ok).toBe(true);
    expect(
      validateState({
        brokers: [{ id: 1, gatedSinceMs: 5, clearRuns: 1 }],
        lastRunAtMs: 5,
        lastRunCapped: true,
      }).ok,
    ).toBe(true);
  });

  it("rejects clearRuns of 2 (such an entry has ended) and duplicate brokers", () => {
    const result = validateState(
      { brokers: [{ id: 1, gatedSinceMs: 5, clearRuns: 2 }], lastRunAtMs: 5, lastRunCapped: false },
      "/state",
    );
    expect(!result.ok && result.problems[0]?.pointer).toBe("/state/brokers/0/clearRuns");
    const twice = validateState({
      brokers: [
        { id: 1, gatedSinceMs: 5, clearRuns: 0 },
        { id: 1, gatedSinceMs: 6, clearRuns: 0 },
      ],
      lastRunAtMs: 5,
      lastRunCapped: false,
    });
    expect(!twice.ok && twice.problems[0]?.pointer).toBe("/brokers/1/id");
  });
});
