import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Admin, ProduceAcks, Producer } from "@platformatic/kafka";
import type { TopLevelSpec } from "vega-lite";
import { KafkaCluster } from "../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  largestBurst,
  type RecoveryResult,
  runRecovery,
} from "../devkit/kafka/recovery.ts";
import { CatchUpThrottler } from "../functions/agent/catch-up-throttle.ts";
import { PacerClient } from "../functions/agent/pacer-client.ts";
import { snapshotOf } from "../functions/agent/snapshot.ts";
import { StoredThrottleRecord } from "../functions/agent/throttle-record.ts";
import { createApi } from "../functions/api/app.ts";
import { renderSvg } from "../functions/handlers/simulate-cli.ts";
import { KafkaAdminClient } from "../functions/kafka/admin.ts";
import { dynamoClient, ensureTable } from "../functions/store/client.ts";
import { DynamoStore } from "../functions/store/dynamo-store.ts";
import { startEmbeddedStore } from "../functions/store/embedded.ts";

/**
 * `npm run bench:kafka`: the same broker recovery on Apache Kafka 4.1 under Kafka's own balancer and
 * under `pacer agent`, side by side (with a steady acks=all producer measuring latency throughout),
 * then the agent's cost per run at 3,000 and 30,000 partitions. Writes report/kafka/*.svg.
 */

const TOPICS = ["orders", "payments"];
const PARTITIONS_PER_TOPIC = 150;
const PREFERRED = 100;
const PRODUCE_MB = Number(process.env.BENCH_PRODUCE_MB ?? 200);
const OUT = resolve("report/kafka");

/** One 1 KiB record every 10 ms, acks=all, round-robin over every partition; latency per record. */
function latencyProbe(cluster: KafkaCluster) {
  const producer = new Producer({
    clientId: "bench-latency",
    bootstrapBrokers: cluster.bootstrapServers.split(","),
    acks: ProduceAcks.ALL,
  });
  const value = Buffer.alloc(1024, 1);
  const samples: { atMs: number; latencyMs: number }[] = [];
  let n = 0;
  const timer = setInterval(() => {
    const topic = TOPICS[n % TOPICS.length] as string;
    const partition = Math.floor(n / TOPICS.length) % PARTITIONS_PER_TOPIC;
    n++;
    const atMs = Date.now();
    producer
      .send({ messages: [{ topic, partition, value }] })
      .then(() => samples.push({ atMs, latencyMs: Date.now() - atMs }))
      .catch(() => samples.push({ atMs, latencyMs: Number.NaN }));
  }, 10);
  return {
    samples,
    stop: async () => {
      clearInterval(timer);
      await new Promise((r) => setTimeout(r, 2000));
      await producer.close();
    },
  };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

interface Outcome {
  label: string;
  result: RecoveryResult;
  latencies: { atMs: number; latencyMs: number }[];
}

async function recover(
  cluster: KafkaCluster,
  label: string,
  kafkaBalancer: boolean,
  produceMb = PRODUCE_MB,
): Promise<Outcome> {
  let probe: ReturnType<typeof latencyProbe> | undefined;
  const result = await runRecovery({
    cluster,
    topics: TOPICS,
    partitionsPerTopic: PARTITIONS_PER_TOPIC,
    restart: [1],
    produceBytes: produceMb * 1_000_000,
    // The probe measures a quiet baseline first, and the recovery, not the flush of what was produced.
    settleMs: 20_000,
    throttleBytesPerSecond: 5_000_000,
    pacer: kafkaBalancer ? { kind: "kafka-balancer" } : { kind: "agent-embedded" },
    during: () => {
      probe = latencyProbe(cluster);
      return probe;
    },
  });
  return { label, result, latencies: probe?.samples ?? [] };
}

function row(outcome: Outcome) {
  const { result } = outcome;
  const onto = result.moves.filter((m) => m.to === 1);
  const behind = onto.filter((m) => m.outOfSync * 100 > 5 * m.preferred);
  const end = result.recoveredAtMs[1] as number;
  const during = outcome.latencies.filter((s) => s.atMs >= result.restartedAtMs && s.atMs <= end);
  const baseline = outcome.latencies
    .filter((s) => s.atMs < result.restartedAtMs && !Number.isNaN(s.latencyMs))
    .map((s) => s.latencyMs);
  const ok = during.map((s) => s.latencyMs).filter((x) => !Number.isNaN(x));
  return {
    pacer: outcome.label,
    "moves onto broker 1": onto.length,
    "while > 5 % behind": behind.length,
    "largest 1 s burst": largestBurst(result.moves, 1000, 1),
    "largest 5 s burst": largestBurst(result.moves, 5000, 1),
    "leads all preferred after": `${((end - result.restartedAtMs) / 1000).toFixed(1)} s`,
    "before restart p99 ms": percentile(baseline, 99),
    "produce p50 ms": percentile(ok, 50),
    "produce p99 ms": percentile(ok, 99),
    "produce max ms": Math.max(...ok),
    "failed sends": during.length - ok.length,
  };
}

function leadershipChartOf(outcomes: Outcome[]): TopLevelSpec {
  const values = outcomes.flatMap(({ label, result }) =>
    result.samples.flatMap((s) => {
      const seconds = Math.round((s.atMs - result.restartedAtMs) / 100) / 10;
      if (seconds < 0) return [];
      return [
        { seconds, value: s.leads[1] ?? 0, series: `${label}: leads` },
        { seconds, value: PREFERRED - (s.outOfSync[1] ?? 0), series: `${label}: in the ISR` },
      ];
    }),
  );
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: `Broker 1 coming back on Apache Kafka 4.1 (${PRODUCE_MB} MB behind, catch-up throttled to 5 MB/s)`,
      subtitle: "Of broker 1's preferred partitions: those it leads, and those it is back in the ISR of",
    },
    width: 720,
    height: 300,
    data: { values },
    mark: { type: "line", interpolate: "step-after", strokeWidth: 2 },
    encoding: {
      x: { field: "seconds", type: "quantitative", title: "seconds since broker 1 restarted" },
      y: { field: "value", type: "quantitative", title: `of its ${PREFERRED} preferred partitions` },
      color: {
        field: "series",
        type: "nominal",
        title: null,
        legend: { orient: "bottom", columns: 2, labelLimit: 300 },
      },
      strokeDash: { field: "series", type: "nominal", title: null },
    },
  };
}

function latencyChartOf(outcomes: Outcome[]): TopLevelSpec {
  // p99 per 2 s window: a few hundred points instead of one per record.
  const values = outcomes.flatMap(({ label, result, latencies }) => {
    const windows = new Map<number, number[]>();
    for (const s of latencies) {
      if (Number.isNaN(s.latencyMs) || s.atMs < result.restartedAtMs - 10_000) continue;
      const window = Math.floor((s.atMs - result.restartedAtMs) / 2000) * 2;
      windows.set(window, [...(windows.get(window) ?? []), s.latencyMs]);
    }
    return [...windows].map(([seconds, list]) => ({
      seconds,
      p99: Math.max(1, percentile(list, 99)),
      pacer: label,
    }));
  });
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "A steady acks=all producer during the recovery",
      subtitle: "One 1 KiB record every 10 ms over all 300 partitions; p99 latency per 2 s window",
    },
    width: 720,
    height: 220,
    data: { values },
    mark: { type: "line", point: true, strokeWidth: 2 },
    encoding: {
      x: { field: "seconds", type: "quantitative", title: "seconds since broker 1 restarted" },
      y: { field: "p99", type: "quantitative", title: "p99 latency (ms, log scale)", scale: { type: "log" } },
      color: { field: "pacer", type: "nominal", title: null, legend: { orient: "bottom" } },
    },
  };
}

/**
 * Catch-up pacing's share of a run, as the agent pays it (its record in the store read each run, and
 * written when it changes): a run in which a third of all partitions' replicas on broker 1 start to be
 * throttled (the broker's rate read and set, every topic's list read and appended to), a run with
 * nothing to change (the record read, the configs read, no write), and the run that lifts them all.
 * Medians of `rounds`, after a warm-up.
 */
async function throttleCost(kafka: KafkaAdminClient, pacer: PacerClient, rounds: number) {
  // A third of the partitions behind on broker 1, held on the follower side (the default).
  const behind = (await kafka.describePartitions()).filter((p) => p.partition % 3 === 0);
  const byTopic = new Map<string, number[]>();
  for (const p of behind) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
  const wanted = [
    {
      broker: 1,
      rateBytesPerSecond: 2_500_000,
      outOfSync: behind.length,
      replicas: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
      side: "follower" as const,
      leaders: [],
    },
  ];
  const catchUp = new CatchUpThrottler(kafka, new StoredThrottleRecord(pacer));
  const set: number[] = [];
  const unchanged: number[] = [];
  const lift: number[] = [];
  for (let round = -2; round < rounds; round++) {
    const t0 = performance.now();
    const first = await catchUp.apply(wanted, false);
    const t1 = performance.now();
    await catchUp.apply(wanted, false);
    const t2 = performance.now();
    const lifted = await catchUp.apply([], false);
    const t3 = performance.now();
    if (first.errors.length || lifted.errors.length)
      throw new Error(`catch-up throttle: ${[...first.errors, ...lifted.errors].join("; ")}`);
    if (round >= 0) {
      set.push(t1 - t0);
      unchanged.push(t2 - t1);
      lift.push(t3 - t2);
    }
  }
  const med = (list: number[]) => Math.round(percentile(list, 50));
  return {
    throttledReplicas: wanted[0]?.outOfSync ?? 0,
    throttleSet: med(set),
    throttleUnchanged: med(unchanged),
    throttleLift: med(lift),
  };
}

/** The agent's run, piece by piece, on a cluster of `partitions` partitions (replication factor 1). */
async function costPerRun(partitions: number, rounds = 9) {
  const cluster = await KafkaCluster.start({
    brokers: 3,
    // Thousands of small logs: keep their preallocated indexes small.
    broker: { "log.index.size.max.bytes": 65536, "log.segment.bytes": 1048576 },
  });
  const store = await startEmbeddedStore();
  const client = dynamoClient({ endpoint: store.endpoint });
  try {
    const admin = new Admin({ clientId: "bench", bootstrapBrokers: cluster.bootstrapServers.split(",") });
    const perTopic = 1000;
    for (let t = 0; t < partitions / perTopic; t++)
      await admin.createTopics({ topics: [`t${t}`], partitions: perTopic, replicas: 1 });
    await admin.close();
    const kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
    let seen = 0;
    for (let i = 0; i < 120 && seen < partitions; i++) {
      seen = (await kafka.describePartitions()).filter((p) => p.leader >= 0).length;
      if (seen < partitions) await new Promise((r) => setTimeout(r, 1000));
    }
    await ensureTable(client, "leadership-pacer");
    const app = createApi({ store: new DynamoStore(client, "leadership-pacer") });
    const pacer = new PacerClient("http://embedded", "bench", async (r) => app.fetch(r));
    const config = { "leader.imbalance.election.algorithm": "wait-for-sync" } as const;
    // Let the new cluster settle (its JVMs compile and load thousands of logs) before measuring.
    await new Promise((r) => setTimeout(r, 15_000));
    const timings: { read: number; decide: number; elect: number; total: number }[] = [];
    for (let round = -3; round < rounds; round++) {
      const t0 = performance.now();
      const brokers = (await kafka.describeCluster()).brokers;
      const read = {
        brokers,
        partitions: await kafka.describePartitions(),
        reassigning: await kafka.listReassignments(),
      };
      const t1 = performance.now();
      await pacer.evaluate(snapshotOf(read), config);
      const t2 = performance.now();
      // A full batch of 1,000 (all already led by their preferred replica: Kafka answers 84 for each).
      const results = await kafka.electPreferred(read.partitions.slice(0, 1000));
      const t3 = performance.now();
      if (results.length !== 1000) throw new Error(`ElectLeaders answered ${results.length} of 1000`);
      if (round >= 0) timings.push({ read: t1 - t0, decide: t2 - t1, elect: t3 - t2, total: t3 - t0 });
    }
    const throttle = await throttleCost(kafka, pacer, rounds);
    await kafka.close();
    const med = (k: keyof (typeof timings)[number]) =>
      Math.round(
        percentile(
          timings.map((t) => t[k]),
          50,
        ),
      );
    return {
      partitions,
      seen,
      read: med("read"),
      decide: med("decide"),
      elect: med("elect"),
      total: med("total"),
      ...throttle,
    };
  } finally {
    client.destroy();
    await store.close();
    await cluster.close();
  }
}

// BENCH_COST_ONLY=1 measures the agent's cost per run alone, without the two recoveries.
if (!process.env.BENCH_COST_ONLY) {
  mkdirSync(OUT, { recursive: true });
  const cluster = await KafkaCluster.start({ brokers: 3 });
  let outcomes: Outcome[];
  try {
    await createEvenTopics(cluster, TOPICS, PARTITIONS_PER_TOPIC);
    // A first, unmeasured recovery: both measured ones then run on warm JVMs and logs.
    await recover(cluster, "warm-up", false, 50);
    await cluster.restartController({
      "auto.leader.rebalance.enable": true,
      "leader.imbalance.check.interval.seconds": 5,
    });
    const kafka = await recover(cluster, "Kafka's balancer", true);
    await cluster.restartController({ "auto.leader.rebalance.enable": false });
    const agent = await recover(cluster, "pacer agent", false);
    outcomes = [kafka, agent];
  } finally {
    await cluster.close();
  }
  console.log(
    `\nBroker 1 recovering on Apache Kafka 4.1: 3 brokers, ${TOPICS.length * PARTITIONS_PER_TOPIC} partitions (RF 3), ${PRODUCE_MB} MB produced while it was down, catch-up throttled to 5 MB/s.`,
  );
  console.log(
    "Agent: wait-for-sync 5 %, cap 20, throttle 2 s, check interval 5 s. Kafka: auto.leader.rebalance.enable, check interval 5 s.\n",
  );
  console.table(outcomes.map(row));
  writeFileSync(join(OUT, "leadership.svg"), await renderSvg(leadershipChartOf(outcomes)));
  writeFileSync(join(OUT, "latency.svg"), await renderSvg(latencyChartOf(outcomes)));
  console.log(`charts: ${join(OUT, "leadership.svg")}, ${join(OUT, "latency.svg")}`);
}

console.log(
  "\nThe agent's cost per run (median of 9 after 3 warm-up runs; read = DescribeCluster + DescribeTopicPartitions + ListPartitionReassignments, decide = the embedded managed run, elect = ElectLeaders of 1,000):",
);
const costs = [];
for (const partitions of (process.env.BENCH_COST_PARTITIONS ?? "3000,30000").split(",").map(Number))
  costs.push(await costPerRun(partitions));
console.table(
  costs.map((c) => ({
    partitions: c.partitions,
    "read ms": c.read,
    "decide ms": c.decide,
    "elect ms": c.elect,
    "total ms": c.total,
    "catch-up throttle: set / unchanged / lifted ms": `${c.throttleSet} / ${c.throttleUnchanged} / ${c.throttleLift} (${c.throttledReplicas} replicas)`,
    "a run while throttling ms": c.total + c.throttleUnchanged,
    "the run that sets it ms": c.total + c.throttleSet,
  })),
);
