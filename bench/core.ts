import { evaluate } from "../functions/policy/run.ts";
import { type ConfigOverrides, effectiveConfig } from "../schemas/config.ts";
import { validateSnapshot } from "../schemas/snapshot.ts";
import { INITIAL_STATE } from "../schemas/state.ts";
import { recoveringCluster } from "./cluster.ts";

/**
 * The core's cost against the cost of reading its input: a 1,000,000-partition snapshot of 200 brokers,
 * broker 0 recovering and owning 5% of the preferred replicas, 60% of those back in ISR.
 * Targets on a 2-core machine: validation ≤ 1.0 × JSON.parse, core run ≤ 0.3 × JSON.parse.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function time(fn: () => unknown): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

const snapshot = recoveringCluster({
  brokers: 200,
  partitions: 1_000_000,
  partitionsPerTopic: 100,
  recoveringShare: 0.05,
  caughtUpShare: 0.6,
  seed: 42,
});
const body = JSON.stringify(snapshot);
console.log(
  `snapshot: ${snapshot.partitions.length.toLocaleString()} partitions, ${(body.length / 1e6).toFixed(1)} MB of JSON`,
);

const configs: Record<string, ConfigOverrides> = {
  "immediate, cap 1000": {},
  "wait-for-sync 5%, cap 200, throttle 15 s": {
    "leader.imbalance.election.algorithm": "wait-for-sync",
    "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
    "leader.imbalance.election.max.per.run": 200,
    "leader.imbalance.election.throttle.interval.ms": 15_000,
  },
  "immediate, uncapped (every eligible partition sorted)": {
    "leader.imbalance.election.max.per.run": 2_147_483_647,
  },
};

const parseMs: number[] = [];
const validateMs: number[] = [];
const coreMs: Record<string, number[]> = Object.fromEntries(Object.keys(configs).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  let parsed: unknown;
  parseMs.push(time(() => (parsed = JSON.parse(body))));
  let valid: ReturnType<typeof validateSnapshot> | undefined;
  validateMs.push(time(() => (valid = validateSnapshot(parsed))));
  if (!valid?.ok) throw new Error("the benchmark snapshot must be valid");
  for (const [name, overrides] of Object.entries(configs)) {
    const config = effectiveConfig(overrides);
    const input = { snapshot: valid.value, config, state: INITIAL_STATE, nowMs: 1_767_225_600_000 };
    coreMs[name]?.push(time(() => evaluate(input)));
  }
}

const parse = median(parseMs);
const rows: [string, number, string][] = [
  ["JSON.parse", parse, "1.00"],
  ["schema validation", median(validateMs), (median(validateMs) / parse).toFixed(2)],
];
for (const [name, samples] of Object.entries(coreMs))
  rows.push([`core run: ${name}`, median(samples), (median(samples) / parse).toFixed(2)]);
console.log(`median of ${ROUNDS} rounds`);
console.table(rows.map(([step, ms, ratio]) => ({ step, "median ms": Math.round(ms), "× parse": ratio })));
const validationRatio = median(validateMs) / parse;
const coreRatio = Math.max(
  ...Object.entries(coreMs)
    .slice(0, 2)
    .map(([, s]) => median(s) / parse),
);
console.log(
  `validation/parse ${validationRatio.toFixed(2)} (target ≤ 1.00): ${validationRatio <= 1 ? "met" : "MISSED"}`,
);
console.log(
  `core/parse ${coreRatio.toFixed(2)} (target ≤ 0.30, capped configs): ${coreRatio <= 0.3 ? "met" : "MISSED"}`,
);
