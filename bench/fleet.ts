import { gzipSync } from "node:zlib";
import { countingStore } from "../devkit/counting-store.ts";
import { DECISION_TTL_MS } from "../functions/api/app.ts";
import { inProcess, managedRun } from "../functions/api/managed-run.ts";
import { snapshotIdOf } from "../functions/api/tick.ts";
import { DEFAULT_TICK_CONCURRENCY } from "../functions/handlers/local.ts";
import { LocalTicker } from "../functions/queue/local-ticker.ts";
import { dynamoClient, ensureTable } from "../functions/store/client.ts";
import { DynamoStore } from "../functions/store/dynamo-store.ts";
import { startEmbeddedStore } from "../functions/store/embedded.ts";
import { validateSnapshot } from "../schemas/snapshot.ts";
import { recoveringCluster } from "./cluster.ts";

/**
 * One tick over a fleet, through the product's own code: N clusters (12 brokers, 2,000 partitions,
 * one broker recovering) registered with ticking on and a fresh snapshot each, on the embedded store;
 * then one tick with the local ticker's bounded pool, on a store that adds a latency to every call
 * (0 and 5 ms: DynamoDB from Lambda is ~5 ms a call). Prints clusters per minute, store calls per
 * ticked cluster and per managed run, and what the fan-out on AWS would hold in a minute.
 *
 *   BENCH_CLUSTERS (1000)  BENCH_PARTITIONS (2000)  BENCH_LATENCIES_MS ("0,5")
 *   BENCH_CONCURRENCY (the local server's default)  BENCH_WORKERS (50: the stack's worker concurrency)
 */
const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 1_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 2_000);
const LATENCIES_MS = (process.env.BENCH_LATENCIES_MS ?? "0,5").split(",").map(Number);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? DEFAULT_TICK_CONCURRENCY);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 50);
/** SQS hands a worker up to 10 jobs at once (the stack's batch size). */
const BATCH = 10;
/** A 1,024 MB Lambda has about 0.6 of a vCPU: CPU measured here counts this many times over there. */
const LAMBDA_CPU_FACTOR = 1.7;

async function registerFleet(store: DynamoStore, nowMs: number) {
  for (let i = 0; i < CLUSTERS; i++) {
    const clusterId = `cluster-${String(i).padStart(5, "0")}`;
    const snapshot = recoveringCluster({
      brokers: 12,
      partitions: PARTITIONS,
      partitionsPerTopic: 50,
      recoveringShare: 1 / 12,
      caughtUpShare: 0.97,
      seed: i + 1,
    });
    const bytes = Buffer.from(JSON.stringify(snapshot));
    await store.putConfig(clusterId, { "pacer.tick.enabled": true }, nowMs);
    await store.putSnapshot(clusterId, gzipSync(bytes), {
      snapshotId: snapshotIdOf(bytes, nowMs),
      receivedAtMs: nowMs,
      partitionCount: snapshot.partitions.length,
    });
  }
}

async function oneTick(latencyMs: number) {
  const embedded = await startEmbeddedStore();
  const tableName = "bench-fleet";
  const setup = dynamoClient({ endpoint: embedded.endpoint });
  await ensureTable(setup, tableName);
  const nowMs = Date.now();
  await registerFleet(new DynamoStore(setup, tableName), nowMs);

  const counting = countingStore(embedded.endpoint, tableName, latencyMs);
  const results: { outcome: string; elections: number }[] = [];
  const failures: string[] = [];
  const ticker = new LocalTicker({
    store: counting.store,
    tickMs: 60_000,
    concurrency: CONCURRENCY,
    decisionTtlMs: DECISION_TTL_MS,
    onJob: (result) => results.push(result),
    onFailure: (clusterId, error) => failures.push(`${clusterId}: ${error.message}`),
  });
  const cpuBefore = process.cpuUsage();
  const startedAtMs = performance.now();
  const report = await ticker.tick(Date.now());
  const queuedAtMs = performance.now();
  await ticker.queue.drained();
  const tickMs = performance.now() - startedAtMs;
  const cpu = process.cpuUsage(cpuBefore);
  await ticker.stop();
  const tickCalls = counting.total();

  // A managed run without an Idempotency-Key, on one of the clusters.
  const meta = (await counting.store.getCluster("cluster-00000"))?.snapshot;
  const text = meta ? await counting.store.getSnapshot("cluster-00000", meta) : null;
  const snapshot = validateSnapshot(JSON.parse(text ?? "{}"));
  if (!snapshot.ok) throw new Error("the stored snapshot does not validate");
  counting.reset();
  const managed = await managedRun(
    counting.store,
    "cluster-00000",
    inProcess({ snapshot: snapshot.value, config: {}, state: undefined, nowMs: undefined }),
    Buffer.from(text ?? ""),
    {
      clock: Date.now,
      dryRun: false,
      explain: false,
      decisionTtlMs: DECISION_TTL_MS,
      idempotencyTtlMs: 60_000,
    },
  );
  if (managed.status !== 200) throw new Error(`the managed run answered ${managed.status}`);
  const managedCalls = counting.total();

  counting.close();
  setup.destroy();
  await embedded.close();
  const ran = results.filter((r) => r.outcome === "ran").length;
  return {
    latencyMs,
    ran,
    failures,
    queued: report.queued,
    queuedAfterMs: queuedAtMs - startedAtMs,
    tickMs,
    elections: results.reduce((sum, r) => sum + r.elections, 0),
    callsPerCluster: tickCalls / ran,
    managedCalls,
    cpuMsPerCluster: (cpu.user + cpu.system) / 1000 / ran,
  };
}

console.log(
  `one tick over ${CLUSTERS} clusters of 12 brokers and ${PARTITIONS} partitions, ${CONCURRENCY} at once, embedded store`,
);
for (const latencyMs of LATENCIES_MS) {
  const r = await oneTick(latencyMs);
  if (r.ran !== CLUSTERS || r.failures.length > 0)
    throw new Error(`ran ${r.ran} of ${CLUSTERS}; failures: ${r.failures.slice(0, 3).join("; ")}`);
  const perMinute = (CLUSTERS / r.tickMs) * 60_000;
  console.log(
    [
      `\n+${latencyMs} ms per store call:`,
      `  tick: ${(r.tickMs / 1000).toFixed(1)} s for ${r.ran} clusters (all queued after ${(r.queuedAfterMs / 1000).toFixed(1)} s), ${Math.round(perMinute)} clusters per minute, ${r.elections} elections`,
      `  store calls: ${r.callsPerCluster.toFixed(2)} per ticked cluster (listing and fleet config included), ${r.managedCalls} per managed run without a key`,
      `  CPU: ${r.cpuMsPerCluster.toFixed(1)} ms per cluster (this process, embedded store included)`,
    ].join("\n"),
  );
  if (latencyMs === 5) {
    // On AWS: SQS hands each worker 10 jobs; their store calls overlap, their CPU does not.
    const cpuOnLambdaMs = r.cpuMsPerCluster * LAMBDA_CPU_FACTOR;
    const batchMs = BATCH * cpuOnLambdaMs + 4 * latencyMs + 20; // + SQS receive and delete
    const perMinuteOnAws = Math.floor(((WORKERS * BATCH) / batchMs) * 60_000);
    console.log(
      [
        `  on AWS with the fan-out (${WORKERS} workers, ${BATCH} jobs each, CPU × ${LAMBDA_CPU_FACTOR} for a 1,024 MB Lambda, ${latencyMs} ms a call):`,
        `    ~${Math.round(batchMs)} ms per batch of ${BATCH}: ~${perMinuteOnAws.toLocaleString("en")} clusters a minute; 10,000 clusters in ~${Math.ceil((10_000 / perMinuteOnAws) * 60)} s`,
      ].join("\n"),
    );
  }
}
