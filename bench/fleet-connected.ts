import { setTimeout as delay } from "node:timers/promises";
import { countingStore } from "../devkit/counting-store.ts";
import { KafkaCluster } from "../devkit/kafka/cluster.ts";
import { createEvenTopics, readPartitions, waitFor } from "../devkit/kafka/recovery.ts";
import { DECISION_TTL_MS } from "../functions/api/app.ts";
import type { JobResult } from "../functions/api/tick-job.ts";
import { ClusterConnections } from "../functions/kafka/cluster-connections.ts";
import { LocalTicker } from "../functions/queue/local-ticker.ts";
import { dynamoClient, ensureTable } from "../functions/store/client.ts";
import { DynamoStore } from "../functions/store/dynamo-store.ts";
import { startEmbeddedStore } from "../functions/store/embedded.ts";

/**
 * A tick over a fleet the worker reads itself: N clusters registered with a connection, each a real
 * connection to one of three local Apache Kafka clusters (three brokers each, the newest release)
 * under its own id, so that every job connects, reads the whole cluster and carries out its batch
 * (one broker of each Kafka cluster restarted first, leading none of its partitions). The jobs run as
 * the stack runs them at once (its worker concurrency 50 × batches of 10 = 500), in this one process.
 * Two ticks: the first connects every cluster, the second reuses the kept connections.
 *
 *   BENCH_CLUSTERS (1000)  BENCH_PARTITIONS (300 per Kafka cluster)  BENCH_CONCURRENCY (500)
 */
const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 1_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 500);
const KAFKA_CLUSTERS = 3;

const kafka: KafkaCluster[] = [];
const embedded = await startEmbeddedStore();
const tableName = "bench-fleet-connected";
const setup = dynamoClient({ endpoint: embedded.endpoint });
const clients = new ClusterConnections({ read: () => Promise.reject(new Error("no secrets in this bench")) });
try {
  console.log(`starting ${KAFKA_CLUSTERS} Kafka clusters of 3 brokers, ${PARTITIONS} partitions each…`);
  for (let k = 0; k < KAFKA_CLUSTERS; k++) {
    const cluster = await KafkaCluster.start({ brokers: 3, brokerHeapMb: 384 });
    kafka.push(cluster);
    await createEvenTopics(cluster, ["orders", "payments", "audit"], PARTITIONS / 3, 120_000, "none");
  }
  await ensureTable(setup, tableName);
  const store = new DynamoStore(setup, tableName);
  const nowMs = Date.now();
  for (let i = 0; i < CLUSTERS; i++) {
    const clusterId = `cluster-${String(i).padStart(5, "0")}`;
    const cluster = kafka[i % KAFKA_CLUSTERS] as KafkaCluster;
    await store.putConnection(
      clusterId,
      { "bootstrap.servers": cluster.bootstrapServers, "security.protocol": "PLAINTEXT" },
      nowMs,
    );
    // Due again a second after each run, so that the second tick runs every cluster too.
    await store.putConfig(
      clusterId,
      { "pacer.tick.enabled": true, "leader.imbalance.check.interval.seconds": 1 },
      nowMs,
    );
  }
  // Broker 2 of each Kafka cluster restarted: back in sync, leading none of its preferred partitions.
  for (const cluster of kafka) {
    await cluster.stopBroker(2, "SIGTERM");
    await cluster.startBroker(2);
    await waitFor(
      async () => ((await readPartitions(cluster)).every((p) => p.isr.length === 3) ? true : undefined),
      120_000,
      "broker 2 back in sync",
    );
  }

  const counting = countingStore(embedded.endpoint, tableName);
  console.log(
    `\none tick over ${CLUSTERS} clusters with connections (${KAFKA_CLUSTERS} Kafka clusters under ~${Math.round(CLUSTERS / KAFKA_CLUSTERS)} ids each), ${CONCURRENCY} jobs at once, embedded store`,
  );
  for (const tick of ["first (connects)", "second (kept connections)"]) {
    counting.reset();
    const results: JobResult[] = [];
    const failures: string[] = [];
    const ticker = new LocalTicker({
      store: counting.store,
      tickMs: 60_000,
      concurrency: CONCURRENCY,
      decisionTtlMs: DECISION_TTL_MS,
      clients,
      onJob: (result) => results.push(result),
      onFailure: (clusterId, error) => failures.push(`${clusterId}: ${error.message}`),
    });
    const cpuBefore = process.cpuUsage();
    const startedAtMs = performance.now();
    const report = await ticker.tick(Date.now());
    await ticker.queue.drained();
    const tickMs = performance.now() - startedAtMs;
    const cpu = process.cpuUsage(cpuBefore);
    // Stopped without closing the kept clients: the second tick reuses them.
    const ran = results.filter((r) => r.status === "done").length;
    const unreachable = results.filter((r) => r.status === "unreachable");
    const carried = results.reduce(
      (sum, r) => {
        const c = r.carriedOut;
        return c
          ? { asked: sum.asked + c.asked, done: sum.done + c.done, notNeeded: sum.notNeeded + c.notNeeded }
          : sum;
      },
      { asked: 0, done: 0, notNeeded: 0 },
    );
    console.log(
      [
        `\n${tick} tick: ${(tickMs / 1000).toFixed(1)} s for ${report.queued} queued, ${ran} ran, ${unreachable.length} unreachable, ${failures.length} failed (within the minute: ${tickMs < 60_000 ? "yes" : "NO"})`,
        `  elections asked ${carried.asked}, done ${carried.done}, not needed ${carried.notNeeded} (ids sharing a Kafka cluster ask for the same partitions)`,
        `  store calls: ${(counting.total() / Math.max(1, ran)).toFixed(2)} per cluster run; CPU ${((cpu.user + cpu.system) / 1000 / Math.max(1, ran)).toFixed(1)} ms per cluster (this process, embedded store included)`,
        `  Kafka clients kept: ${clients.size}`,
      ].join("\n"),
    );
    if (unreachable.length > 0) console.log(`  first unreachable: ${unreachable[0]?.detail}`);
    if (failures.length > 0) console.log(`  first failure: ${failures[0]}`);
    await delay(1_500);
  }
  counting.close();
} finally {
  await clients.close();
  setup.destroy();
  await embedded.close();
  for (const cluster of kafka) await cluster.close();
}
