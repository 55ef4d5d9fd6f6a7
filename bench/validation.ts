import { validateEvaluateRequest } from "../schemas/request.ts";
import { MAX_BROKERS, MAX_REPLICAS } from "../schemas/snapshot.ts";

/**
 * Hostile bodies: what validation costs for the worst invalid (and valid-but-heavy) shapes, as a ratio
 * to JSON.parse of the same bytes. Target: ≤ 1.0 for every shape, so refusing a body never costs more
 * than reading it. Each body is about 8 MiB, the local server's limit.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET_BYTES = 8 * 1024 * 1024;

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** Repeats `item` until the JSON of the whole comes near TARGET_BYTES. */
function fill<T>(item: (i: number) => T): T[] {
  const size = JSON.stringify(item(123456)).length + 1;
  return Array.from({ length: Math.floor(TARGET_BYTES / size) }, (_, i) => item(i));
}

class RawJson {
  constructor(readonly text: string) {}
}

const replicasMax = Array.from({ length: MAX_REPLICAS }, (_, i) => i);
const shapes: Record<string, () => unknown> = {
  "null partitions": () => ({ snapshot: { brokers: [], partitions: fill(() => null) } }),
  "numeric brokers": () => ({ snapshot: { brokers: fill((i) => i), partitions: [] } }),
  "negative replica ids": () => ({
    snapshot: {
      brokers: [],
      partitions: fill((i) => ({ topic: "t", partition: i, replicas: [-1, -2], isr: [-1], leader: -1 })),
    },
  }),
  "one partition, a million replicas": () => ({
    snapshot: {
      brokers: [],
      partitions: [{ topic: "t", partition: 0, replicas: fill((i) => i), isr: [], leader: -1 }],
    },
  }),
  [`${MAX_REPLICAS} replicas each, isr not a subset`]: () => ({
    snapshot: {
      brokers: [],
      partitions: fill((i) => ({
        topic: "t",
        partition: i,
        replicas: replicasMax,
        isr: [...replicasMax.slice(1), 999],
        leader: 0,
      })),
    },
  }),
  [`${MAX_REPLICAS} replicas each, duplicate last`]: () => ({
    snapshot: {
      brokers: [],
      partitions: fill((i) => ({
        topic: "t",
        partition: i,
        replicas: [...replicasMax.slice(0, -1), 0],
        isr: [],
        leader: 0,
      })),
    },
  }),
  "duplicate (topic, partition) everywhere": () => ({
    snapshot: {
      brokers: [],
      partitions: fill(() => ({ topic: "t", partition: 0, replicas: [1], isr: [1], leader: 1 })),
    },
  }),
  "invalid topic names": () => ({
    snapshot: {
      brokers: [],
      partitions: fill((i) => ({
        topic: `${"x".repeat(40)}!`,
        partition: i,
        replicas: [1],
        isr: [1],
        leader: 1,
      })),
    },
  }),
  "state.brokers of plain numbers": () => ({
    snapshot: { brokers: [], partitions: [] },
    state: { brokers: fill((i) => i), lastRunAtMs: null, lastRunCapped: false },
  }),
  "config with unknown keys": () => ({
    snapshot: { brokers: [], partitions: [] },
    config: Object.fromEntries(fill((i) => [`leader.imbalance.election.x${i}`, 1])),
  }),
  // Written out as text: JSON.stringify itself would overflow its stack on this.
  "partitions nested a million arrays deep": () =>
    new RawJson(`{"snapshot":{"brokers":[],"partitions":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}}`),
  [`valid: ${MAX_BROKERS} brokers, ${MAX_REPLICAS} replicas each`]: () => ({
    snapshot: {
      brokers: Array.from({ length: MAX_BROKERS }, (_, id) => ({ id })),
      partitions: fill((i) => ({
        topic: "t",
        partition: i,
        replicas: replicasMax,
        isr: replicasMax,
        leader: 0,
      })),
    },
  }),
};

const rows = [];
let worst = 0;
for (const [name, build] of Object.entries(shapes)) {
  const built = build();
  const body = built instanceof RawJson ? built.text : JSON.stringify(built);
  const parseMs: number[] = [];
  const validateMs: number[] = [];
  let outcome = "";
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    const parsed = JSON.parse(body);
    parseMs.push(performance.now() - start);
    start = performance.now();
    const result = validateEvaluateRequest(parsed);
    validateMs.push(performance.now() - start);
    outcome = result.ok ? "valid" : `${result.problems.length} problems`;
  }
  const ratio = median(validateMs) / median(parseMs);
  worst = Math.max(worst, ratio);
  rows.push({
    shape: name,
    MB: (body.length / 1e6).toFixed(1),
    "parse ms": Math.round(median(parseMs)),
    "validate ms": Math.round(median(validateMs)),
    "× parse": ratio.toFixed(2),
    outcome,
  });
}
console.log(`\nHostile and heavy bodies (~8 MiB each), median of ${ROUNDS}:`);
console.table(rows);
console.log(`worst validation/parse ${worst.toFixed(2)} (target ≤ 1.00): ${worst <= 1 ? "met" : "MISSED"}`);
