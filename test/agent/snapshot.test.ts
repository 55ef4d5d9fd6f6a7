import { describe, expect, it } from "vitest";
import { snapshotOf } from "../../functions/agent/snapshot.ts";
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

  it("copies replicas, ISR, leader and ELR, and marks reassignments", () => {
    const [p0, p1, p2] = snapshotOf(read).partitions;
    expect(p0).toEqual({
      topic: "orders",
      partition: 0,
      replicas: [1, 2, 3],
      isr: [2, 3],
      leader: 2,
      elr: [],
      reassigning: false,
      deleting: false,
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
    expect(snapshot.partitions.find((p) => p.topic === "odd")).toMatchObject({
      isr: [2],
      leader: -1,
      elr: [],
    });
    expect(snapshot.partitions.some((p) => p.topic === "gone")).toBe(false);
  });
});
