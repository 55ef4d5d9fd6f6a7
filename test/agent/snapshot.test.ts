import { describe, expect, it } from "vitest";
import { lagBytesOf, snapshotOf } from "../../functions/agent/snapshot.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";

describe("the snapshot an agent builds from a cluster read", () => {
  const read = {
    brokers: [
      { id: 3, fenced: false },
      { id: 1, fenced: true },
      { id: 2, fenced: false },
    ],
    partitions: [
      { topic: "orders", partition: 0, replicas: [1, 2, 3], isr: [2, 3], leader: 2, elr: [] },
      { topic: "orders", partition: 1, replicas: [2, 3, 1], isr: [2, 3, 1], leader: 2, elr: [] },
      { topic: "pay", partition: 0, replicas: [3, 1, 2], isr: [], leader: -1, elr: [3] },
    ],
    reassigning: [{ topic: "orders", partition: 1 }],
  };

  it("keeps brokers' fenced state, sorted by id, never in controlled shutdown", () => {
    expect(snapshotOf(read).brokers).toEqual([
      { id: 1, fenced: true, inControlledShutdown: false },
      { id: 2, fenced: false, inControlledShutdown: false },
      { id: 3, fenced: false, inControlledShutdown: false },
    ]);
  });

  it("copies replicas, ISR, leader and ELR, and marks reassignments; an empty ELR and no reassignment are left out", () => {
    const [p0, p1, p2] = snapshotOf(read).partitions;
    expect(p0).toEqual({
      topic: "orders",
      partition: 0,
      replicas: [1, 2, 3],
      isr: [2, 3],
      leader: 2,
    });
    expect(p1?.reassigning).toBe(true);
    expect(p2).toMatchObject({ leader: -1, isr: [], elr: [3] });
  });

  it("is always a valid SPEC snapshot", () => {
    const odd = {
      ...read,
      partitions: [
        ...read.partitions,
        { topic: "gone", partition: 0, replicas: [], isr: [], leader: -1, elr: [] },
        { topic: "odd", partition: 0, replicas: [1, 2], isr: [2, 9], leader: 9, elr: [7] },
      ],
    };
    const snapshot = snapshotOf(odd);
    expect(validateSnapshot(snapshot).ok).toBe(true);
    const odd1 = snapshot.partitions.find((p) => p.topic === "odd");
    expect(odd1).toMatchObject({ isr: [2], leader: -1 });
    expect(odd1?.elr).toBeUndefined();
    expect(snapshot.partitions.some((p) => p.topic === "gone")).toBe(false);
  });
});

describe("each broker's bytes still to fetch (the max-lag-bytes gate's signal)", () => {
  const partitions = [
    // Broker 1 out of sync on two partitions led by 2 and 3, in sync on a third.
    { topic: "orders", partition: 0, replicas: [1, 2, 3], isr: [2, 3], leader: 2, elr: [] },
    { topic: "orders", partition: 1, replicas: [3, 1, 2], isr: [3, 2], leader: 3, elr: [] },
    { topic: "orders", partition: 2, replicas: [2, 3, 1], isr: [2, 3, 1], leader: 2, elr: [] },
  ];
  const sizesOf = (answered: number[], bytes: Record<string, Record<number, number>>) => ({
    answered: new Set(answered),
    bytes: new Map(
      Object.entries(bytes).map(([p, perBroker]) => [
        `orders\u0000${p}`,
        new Map(Object.entries(perBroker).map(([id, b]) => [Number(id), b])),
      ]),
    ),
  });

  it("sums, over the partitions it is out of sync on, the leader's log size less its own", () => {
    const sizes = sizesOf([1, 2, 3], {
      0: { 1: 100, 2: 1_100, 3: 1_100 },
      1: { 1: 0, 2: 500, 3: 500 },
      2: { 1: 900, 2: 1_000, 3: 1_000 },
    });
    expect(Object.fromEntries(lagBytesOf(partitions, sizes))).toEqual({ 1: 1_500, 2: 0, 3: 0 });
    expect(
      snapshotOf({ brokers: [{ id: 1, fenced: false }], partitions, reassigning: [], replicaSizes: sizes })
        .brokers,
    ).toEqual([{ id: 1, fenced: false, inControlledShutdown: false, lagBytes: 1_500 }]);
  });

  it("counts a leader's whole log where the broker has no replica on disk yet", () => {
    const sizes = sizesOf([1, 2, 3], { 0: { 2: 700, 3: 700 }, 1: { 1: 500, 2: 500, 3: 500 }, 2: {} });
    expect(lagBytesOf(partitions, sizes).get(1)).toBe(700);
  });

  it("leaves a broker out when it, or a leader it must fetch from, did not answer", () => {
    const sizes = { 0: { 1: 100, 2: 1_100 }, 1: { 1: 0, 2: 500 }, 2: {} };
    expect(lagBytesOf(partitions, sizesOf([1, 2], sizes)).has(1)).toBe(false); // leader 3 silent
    expect(lagBytesOf(partitions, sizesOf([2, 3], sizes)).has(1)).toBe(false); // broker 1 silent
    expect(
      snapshotOf({
        brokers: [{ id: 1, fenced: false }],
        partitions,
        reassigning: [],
        replicaSizes: sizesOf([2, 3], sizes),
      }).brokers[0],
    ).not.toHaveProperty("lagBytes");
  });
});
