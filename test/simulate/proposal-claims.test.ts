import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type Simulation, simulate, simulateScenario } from "../../functions/simulate/simulate.ts";
import { summarize } from "../../functions/simulate/summary.ts";
import { Scenario } from "../../schemas/scenario.ts";

/** The proposal's integration tests and worked example, asserted on simulated recoveries. */

const scenario = (name: string) => Scenario.parse(JSON.parse(readFileSync(`scenarios/${name}.json`, "utf8")));
const rowsOf = (simulation: Simulation, broker: number) =>
  simulation.runs.map((run) => ({ run, row: run.brokers.find((b) => b.id === broker)! }));

describe("the worked example", () => {
  const worked = scenario("worked-example");
  const simulation = simulate(worked);
  const rows = rowsOf(simulation, 1);

  it("grants no leadership while more than 5% of the broker's preferred partitions are out of ISR", () => {
    const behind = rows.filter(({ row }) => row.outOfSync * 100 > 5 * row.preferred);
    expect(behind.length).toBeGreaterThan(0);
    for (const { row } of behind) expect(row.elected).toBe(0);
  });

  it("drains in ⌈5000/200⌉ = 25 capped runs of exactly 200, 15 s apart, once the broker is released", () => {
    const electing = simulation.runs.filter((run) => run.electionCount > 0);
    expect(electing.map((run) => run.electionCount)).toEqual(Array(25).fill(200));
    const gaps = electing.slice(1).map((run, i) => run.atMs - (electing[i] as { atMs: number }).atMs);
    expect(new Set(gaps)).toEqual(new Set([15_000]));
    expect(electing.every((run) => run.moreWorkRemains)).toBe(true);
    // Released only once every partition is back in sync (the gate's threshold and two clear runs).
    expect(rows.find(({ run }) => run === electing[0])?.row.outOfSync).toBe(0);
    const rampMs = (electing.at(-1)?.atMs ?? 0) - (electing[0]?.atMs ?? 0) + 15_000;
    expect(rampMs).toBe(375_000); // ≈ 6.25 min
  });

  it("recovers within 2× the time today's defaults take for the same recovery", () => {
    const [gated] = summarize(worked, simulation);
    const [baseline] = summarize(scenario("today"), simulate(scenario("today")));
    const ratio = (gated?.totalRecoveryMs ?? Infinity) / (baseline?.totalRecoveryMs ?? 0);
    console.log(
      `worked example: total recovery ${gated?.totalRecoveryMs} ms gated vs ${baseline?.totalRecoveryMs} ms today: ${ratio.toFixed(2)}×`,
    );
    expect(ratio).toBeLessThanOrEqual(2);
  });

  it("is deterministic for a seed", () => {
    expect(simulate(worked)).toEqual(simulation);
    const reseeded = simulate({
      ...worked,
      catchUp: { ...worked.catchUp, kind: "long-tailed", medianMs: 60_000 },
      seed: 99,
    });
    expect(reseeded.runs).not.toEqual(simulation.runs);
  });
});

describe("today's defaults", () => {
  it("hand leadership back in bursts of up to 1,000 within one run cycle, while the broker still catches up", () => {
    const simulation = simulate(scenario("today"));
    const [summary] = summarize(scenario("today"), simulation);
    expect(summary?.largestBatch).toBe(1000);
    expect(summary?.largestIn15s).toBeGreaterThan(1000);
    const burst = simulation.runs.filter((run) => run.electionCount === 1000);
    expect(burst.length).toBeGreaterThan(1);
    expect(burst.every((run) => run.nextDelayMs === 10)).toBe(true);
    const firstElecting = rowsOf(simulation, 1).find(({ row }) => row.elected > 0);
    expect(firstElecting?.row.outOfSync).toBeGreaterThan(1000);
  });
});

describe("two brokers recovering at once", () => {
  it("gives each broker 100 ± 1 of every capped run of 200 while both have candidates", () => {
    const simulation = simulate(scenario("rolling-two"));
    const shared = simulation.runs.filter(
      (run) =>
        run.electionCount === 200 &&
        run.brokers.every((b) => !b.gated && b.leading < b.preferred - b.outOfSync + b.elected),
    );
    expect(shared.length).toBeGreaterThanOrEqual(9);
    for (const run of shared)
      for (const b of run.brokers) expect(Math.abs(b.elected - 100)).toBeLessThanOrEqual(1);
  });
});

describe("stuck stragglers", () => {
  const stragglers = scenario("stragglers");
  const [imbalanced, preferred] = simulateScenario(stragglers) as [Simulation, Simulation];

  it("stall the broker under basis imbalanced: re-gated after its first batch until max-wait", () => {
    const rows = rowsOf(imbalanced, 1);
    const firstElection = rows.findIndex(({ row }) => row.elected > 0);
    const regated = rows.slice(firstElection + 1).find(({ row }) => row.gated);
    expect(regated?.row.reason).toBe("over-threshold");
    const resumed = rows.slice(firstElection + 1).find(({ row }) => row.elected > 0);
    expect(resumed?.row.reason).toBe("max-wait-expired");
  });

  it("do not stall it under basis preferred", () => {
    const rows = rowsOf(preferred, 1);
    const firstElection = rows.findIndex(({ row }) => row.elected > 0);
    expect(rows.slice(firstElection).some(({ row }) => row.gated)).toBe(false);
    const [stalled, steady] = [imbalanced, preferred].map(
      (s) => summarize(stragglers, s)[0]?.caughtUpLedMs ?? Infinity,
    );
    expect((stalled as number) - (steady as number)).toBeGreaterThanOrEqual(20 * 60_000);
  });
});

describe("a strict gate with one stuck straggler", () => {
  it("holds the broker until max-wait lets it through", () => {
    const simulation = simulate(scenario("strict"));
    const rows = rowsOf(simulation, 1);
    const first = rows.find(({ row }) => row.elected > 0);
    const gatedSince = rows.find(({ row }) => row.gated)?.run.atMs ?? 0;
    expect(first?.row.reason).toBe("max-wait-expired");
    expect((first?.run.atMs ?? 0) - gatedSince).toBeGreaterThanOrEqual(1_800_000);
    expect(
      rows.filter(({ run }) => run.atMs < (first?.run.atMs ?? 0)).every(({ row }) => row.elected === 0),
    ).toBe(true);
  });
});
