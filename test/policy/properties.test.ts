import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluate } from "../../functions/policy/run.ts";
import type { RunAnswer } from "../../schemas/answer.ts";
import { type ConfigOverrides, effectiveConfig } from "../../schemas/config.ts";
import { isWellFormedSnapshot, Snapshot, validateSnapshot } from "../../schemas/snapshot.ts";
import { INITIAL_STATE, type PacerState } from "../../schemas/state.ts";

/** Invariants of SPEC §4 over random clusters, configs and run sequences. */

const BROKER_IDS = [0, 1, 2, 3, 4, 5];

const snapshotArb: fc.Arbitrary<Snapshot> = fc
  .record({
    listed: fc.subarray(BROKER_IDS, { minLength: 1 }),
    fenced: fc.subarray(BROKER_IDS, { maxLength: 2 }),
    shuttingDown: fc.subarray(BROKER_IDS, { maxLength: 1 }),
    partitions: fc.array(
      fc.record({
        topic: fc.constantFrom("a", "b", "Orders", "__consumer_offsets"),
        replicas: fc.shuffledSubarray(BROKER_IDS, { minLength: 1, maxLength: 3 }),
        isrMask: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        elrMask: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        leaderPick: fc.integer({ min: -1, max: 2 }),
        reassigning: fc.boolean(),
        deleting: fc.boolean(),
        rare: fc.integer({ min: 0, max: 9 }),
      }),
      { maxLength: 60 },
    ),
  })
  .map(({ listed, fenced, shuttingDown, partitions }) => ({
    brokers: listed.map((id) => ({
      id,
      fenced: fenced.includes(id),
      inControlledShutdown: shuttingDown.includes(id),
    })),
    partitions: partitions.map((p, i) => {
      const isr = p.replicas.filter((_, k) => p.isrMask[k]);
      return {
        topic: p.topic,
        partition: i,
        replicas: p.replicas,
        isr,
        elr: isr.length === 0 ? p.replicas.filter((_, k) => p.elrMask[k]) : [],
        leader:
          p.leaderPick === -1 || p.leaderPick >= p.replicas.length
            ? -1
            : (p.replicas[p.leaderPick] as number),
        reassigning: p.reassigning && p.rare === 0,
        deleting: p.deleting && p.rare === 1,
      };
    }),
  }));

const configArb: fc.Arbitrary<ConfigOverrides> = fc.record({
  "auto.leader.rebalance.enable": fc.constantFrom(true, true, true, false),
  "leader.imbalance.election.algorithm": fc.constantFrom("immediate", "wait-for-sync", "wait-for-sync"),
  "leader.imbalance.election.wait.for.sync.threshold.percent": fc.constantFrom(0, 5, 20, 50, 100),
  "leader.imbalance.election.wait.for.sync.max.wait.ms": fc.constantFrom(0, 1000, 5000),
  "leader.imbalance.election.wait.for.sync.threshold.basis": fc.constantFrom("imbalanced", "preferred"),
  "leader.imbalance.election.max.per.run": fc.integer({ min: 1, max: 20 }),
  "leader.imbalance.election.throttle.interval.ms": fc.constantFrom(0, 0, 700, 3000),
  "leader.imbalance.election.internal.topics.last": fc.boolean(),
  "pacer.catch.up.replication.throttled.rate": fc.constantFrom(0, 1_000_000),
  "pacer.catch.up.replication.throttled.side": fc.constantFrom("leader", "follower"),
});

const stepsArb = fc.array(
  fc.record({ snapshot: snapshotArb, advanceMs: fc.integer({ min: 0, max: 2500 }) }),
  {
    minLength: 1,
    maxLength: 8,
  },
);

function runSequence(config: ConfigOverrides, steps: { snapshot: Snapshot; advanceMs: number }[]) {
  let state: PacerState = INITIAL_STATE;
  let nowMs = 10_000;
  const runs: { snapshot: Snapshot; nowMs: number; prior: PacerState; answer: RunAnswer }[] = [];
  for (const step of steps) {
    nowMs += step.advanceMs;
    const answer = evaluate({
      snapshot: step.snapshot,
      config: effectiveConfig(config),
      state,
      nowMs,
      explain: true,
    });
    runs.push({ snapshot: step.snapshot, nowMs, prior: state, answer });
    state = answer.state;
  }
  return runs;
}

const isEligible = (snapshot: Snapshot, topic: string, partition: number) => {
  const p = snapshot.partitions.find((q) => q.topic === topic && q.partition === partition)!;
  const preferred = p.replicas[0] as number;
  const broker = snapshot.brokers.find((b) => b.id === preferred);
  const active = broker !== undefined && !broker.fenced && !broker.inControlledShutdown;
  const inSync = p.isr.includes(preferred) || (p.isr.length === 0 && (p.elr ?? []).includes(preferred));
  return p.leader !== preferred && active && inSync && !p.reassigning && !p.deleting;
};

const RUNS = { numRuns: 300 };

describe("policy invariants", () => {
  it("never elects an ineligible partition nor one of a gated broker, and never exceeds the cap", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        for (const { snapshot, answer } of runSequence(config, steps)) {
          expect(answer.elections.length).toBeLessThanOrEqual(
            config["leader.imbalance.election.max.per.run"]!,
          );
          const gated = new Set(answer.brokers.filter((b) => b.gated).map((b) => b.id));
          for (const e of answer.elections) {
            expect(isEligible(snapshot, e.topic, e.partition)).toBe(true);
            expect(gated.has(e.leader)).toBe(false);
          }
        }
      }),
      RUNS,
    );
  });

  it("takes a broker's activity from the snapshot's broker list, never from whether it has a group (rule 0)", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        const waitForSync = config["leader.imbalance.election.algorithm"] === "wait-for-sync";
        for (const { snapshot, prior, answer } of runSequence(config, steps)) {
          if (answer.deferred !== null) continue;
          const listed = new Map(snapshot.brokers.map((b) => [b.id, b]));
          const isActive = (id: number) => {
            const broker = listed.get(id);
            return broker !== undefined && !broker.fenced && !broker.inControlledShutdown;
          };
          for (const row of answer.brokers) expect(row.reason === "inactive").toBe(!isActive(row.id));
          if (!waitForSync) continue;
          // An active broker's episode goes on (same gatedSinceMs) until released or let through.
          for (const entry of prior.brokers.filter((e) => isActive(e.id))) {
            const row = answer.brokers.find((r) => r.id === entry.id);
            const kept = answer.state.brokers.find((e) => e.id === entry.id);
            if (kept) expect(kept.gatedSinceMs).toBe(entry.gatedSinceMs);
            else expect(["released", "max-wait-expired"]).toContain(row?.reason);
          }
        }
      }),
      RUNS,
    );
  });

  it("gives every imbalanced partition exactly one disposition, and the counts add up", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        for (const { snapshot, answer } of runSequence(config, steps)) {
          const imbalanced = snapshot.partitions.filter((p) => p.leader !== p.replicas[0]);
          expect(answer.partitions!.map((p) => `${p.topic}/${p.partition}`).sort()).toEqual(
            imbalanced.map((p) => `${p.topic}/${p.partition}`).sort(),
          );
          const count = (d: string) => answer.partitions!.filter((p) => p.disposition === d).length;
          expect(count("elected")).toBe(answer.elections.length);
          expect(count("skipped-gated")).toBe(answer.metrics.electionsSkippedByGate);
          expect(count("deferred-cap") + count("deferred-throttle")).toBe(
            answer.metrics.electionsDeferredByThrottle,
          );
          const rows = answer.brokers;
          expect(rows.reduce((n, r) => n + r.elected, 0)).toBe(answer.elections.length);
          for (const row of rows) {
            const eligible = row.elected + row.skippedByGate + row.deferredByThrottle + row.deferredInternal;
            if (answer.deferred !== "rebalance-disabled") expect(eligible).toBe(row.eligible);
          }
        }
      }),
      RUNS,
    );
  });

  it("with internal.topics.last, hands a broker an internal partition only when no other is eligible", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        if (!config["leader.imbalance.election.internal.topics.last"]) return;
        for (const { answer } of runSequence(config, steps)) {
          const taken = new Set(["elected", "deferred-cap"]);
          for (const row of answer.brokers) {
            const own = answer.partitions!.filter(
              (p) => p.preferredReplica === row.id && taken.has(p.disposition),
            );
            const internal = own.filter((p) => p.topic === "__consumer_offsets");
            // Either all it takes this run is internal, or none of it is and the internal ones wait.
            if (internal.length > 0) expect(own.every((p) => p.topic === "__consumer_offsets")).toBe(true);
            if (row.deferredInternal > 0) {
              expect(internal).toEqual([]);
              expect(answer.moreWorkRemains).toBe(true);
            }
          }
        }
      }),
      RUNS,
    );
  });

  it("shares a capped run round-robin: two open buckets never differ by more than one", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        for (const { answer } of runSequence(config, steps)) {
          const open = answer.brokers.filter((r) => !r.gated && r.eligible > 0);
          for (const a of open) {
            for (const b of open)
              expect(a.elected).toBeGreaterThanOrEqual(
                Math.min(a.eligible - a.deferredInternal, b.elected - 1),
              );
          }
        }
      }),
      RUNS,
    );
  });

  it("never holds a broker gated for max.wait.ms or longer when max-wait is on", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        const maxWaitMs = config["leader.imbalance.election.wait.for.sync.max.wait.ms"]!;
        for (const { answer, nowMs } of runSequence(config, steps)) {
          for (const row of answer.brokers.filter((r) => r.gated)) {
            if (maxWaitMs > 0) expect(nowMs - row.gatedSinceMs!).toBeLessThan(maxWaitMs);
          }
        }
      }),
      RUNS,
    );
  });

  it("under immediate, answers the same whatever gate entries the prior state holds", () => {
    fc.assert(
      fc.property(
        configArb,
        snapshotArb,
        fc.array(
          fc.record({
            id: fc.constantFrom(...BROKER_IDS),
            gatedSinceMs: fc.nat(20_000),
            clearRuns: fc.constantFrom(0, 1),
          }),
          {
            maxLength: 4,
          },
        ),
        (config, snapshot, entries) => {
          const immediate = { ...config, "leader.imbalance.election.algorithm": "immediate" as const };
          const unique = [...new Map(entries.map((e) => [e.id, e])).values()].sort((a, b) => a.id - b.id);
          const base = { snapshot, config: effectiveConfig(immediate), nowMs: 30_000, explain: true };
          const clean = evaluate({ ...base, state: INITIAL_STATE });
          const dirty = evaluate({ ...base, state: { ...INITIAL_STATE, brokers: unique } });
          expect(dirty.elections).toEqual(clean.elections);
          expect(dirty.partitions).toEqual(clean.partitions);
          if (clean.deferred === null) expect(dirty.state).toEqual(clean.state);
        },
      ),
      RUNS,
    );
  });

  it("throttles exactly the replicas active brokers host outside the ISR of a led, unguarded partition", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        const rate = config["pacer.catch.up.replication.throttled.rate"] ?? 0;
        for (const { snapshot, answer } of runSequence(config, steps)) {
          const active = (id: number) =>
            snapshot.brokers.some((b) => b.id === id && !b.fenced && !b.inControlledShutdown);
          const expected = new Set<string>();
          if (rate > 0)
            for (const p of snapshot.partitions) {
              if (p.reassigning || p.deleting || p.leader === -1) continue;
              for (const r of p.replicas)
                if (!p.isr.includes(r) && active(r)) expected.add(`${r}/${p.topic}/${p.partition}`);
            }
          const throttled = answer.catchUpThrottles.flatMap((t) => {
            expect(t.rateBytesPerSecond).toBe(rate);
            expect(t.outOfSync).toBe(t.replicas.reduce((n, r) => n + r.partitions.length, 0));
            // Leader side: each replica behind is held by its partition's leader, the shares within the rate.
            if (t.side === "leader") {
              const held = t.leaders.flatMap((l) =>
                l.replicas.flatMap((r) =>
                  r.partitions.map((p) => {
                    const partition = snapshot.partitions.find(
                      (q) => q.topic === r.topic && q.partition === p,
                    );
                    expect(partition?.leader).toBe(l.broker);
                    return `${r.topic}/${p}`;
                  }),
                ),
              );
              const behind = t.replicas.flatMap((r) => r.partitions.map((p) => `${r.topic}/${p}`));
              expect(held.sort()).toEqual(behind.sort());
              const shares = t.leaders.reduce((n, l) => n + l.rateBytesPerSecond, 0);
              expect(shares).toBeLessThanOrEqual(Math.max(rate, t.leaders.length));
            } else expect(t.leaders).toEqual([]);
            return t.replicas.flatMap((r) => r.partitions.map((p) => `${t.broker}/${r.topic}/${p}`));
          });
          expect(throttled.length).toBe(expected.size);
          expect(new Set(throttled)).toEqual(expected);
        }
      }),
      RUNS,
    );
  });

  it("is deterministic and leaves its inputs untouched", () => {
    fc.assert(
      fc.property(configArb, stepsArb, (config, steps) => {
        const before = structuredClone(steps);
        expect(runSequence(config, steps)).toEqual(runSequence(config, steps));
        expect(steps).toEqual(before);
      }),
      { numRuns: 100 },
    );
  });
});

describe("the in-place snapshot check", () => {
  it("accepts exactly what the Snapshot schema accepts", () => {
    const almostSnapshot = fc.oneof(
      snapshotArb.chain((s) =>
        fc.constantFrom<unknown>(
          s,
          { ...s, brokers: [...s.brokers, { id: 1.5 }] },
          { ...s, brokers: [...s.brokers, { id: 3, fenced: "no" }] },
          { ...s, brokers: [...s.brokers, { id: 4, preferredCount: -1 }] },
          { ...s, brokers: [...s.brokers, { id: 5, lagBytes: 1.5 }] },
          { ...s, brokers: [...s.brokers, { id: 6, lagBytes: 1_000_000 }] },
          {
            ...s,
            partitions: [...s.partitions, { topic: "", partition: 0, replicas: [1], isr: [], leader: 1 }],
          },
          {
            ...s,
            partitions: [...s.partitions, { topic: "x", partition: 0, replicas: [1], isr: [], leader: -2 }],
          },
          {
            ...s,
            partitions: [
              ...s.partitions,
              { topic: "x", partition: 0, replicas: [1], isr: [], leader: 1, elr: null },
            ],
          },
          {
            ...s,
            partitions: [
              ...s.partitions,
              { topic: "x", partition: 0, replicas: [1], isr: [], leader: 1, deleting: 1 },
            ],
          },
          {
            ...s,
            partitions: [
              ...s.partitions,
              { topic: "x", partition: 0, replicas: [1], isr: [], leader: 1, extra: true },
            ],
          },
          { ...s, partitions: null },
        ),
      ),
      fc.jsonValue(),
      fc.record({ brokers: fc.array(fc.jsonValue()), partitions: fc.array(fc.jsonValue()) }),
    );
    fc.assert(
      fc.property(almostSnapshot, (input) => {
        expect(isWellFormedSnapshot(input)).toBe(Snapshot.safeParse(input).success);
        if (!isWellFormedSnapshot(input)) expect(validateSnapshot(input).ok).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds a (topic, partition) listed twice however the list is ordered", () => {
    const pairs = fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.integer({ min: 0, max: 6 })), {
      maxLength: 20,
    });
    fc.assert(
      fc.property(pairs, (list) => {
        const partitions = list.map(([topic, partition]) => ({
          topic,
          partition,
          replicas: [1],
          isr: [1],
          leader: 1,
        }));
        const distinct = new Set(list.map(([topic, partition]) => `${topic}-${partition}`)).size;
        const result = validateSnapshot({ brokers: [{ id: 1 }], partitions });
        expect(result.ok).toBe(distinct === list.length);
      }),
      { numRuns: 2000 },
    );
  });
});
