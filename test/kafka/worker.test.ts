import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { makeCertificates, type TestCertificates } from "../../devkit/kafka/certificates.ts";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  LeadershipWatcher,
  largestBurst,
  produceUneven,
  readPartitions,
  setReplicationThrottle,
  waitFor,
} from "../../devkit/kafka/recovery.ts";
import { freePort } from "../../devkit/processes.ts";
import { type SecretsManagerServer, startSecretsManager } from "../../devkit/secrets-manager.ts";
import { CatchUpThrottler, FOLLOWER_RATE } from "../../functions/agent/catch-up-throttle.ts";
import { DECISION_TTL_MS, IDEMPOTENCY_TTL_MS } from "../../functions/api/app.ts";
import type { ManagedAnswer } from "../../functions/api/managed-run.ts";
import type { TickJob } from "../../functions/api/tick.ts";
import { runTickJob, type TickWorker } from "../../functions/api/tick-job.ts";
import { createApp } from "../../functions/app.ts";
import { createTickHandler } from "../../functions/handlers/lambda-tick.ts";
import { createWorkerHandler } from "../../functions/handlers/lambda-worker.ts";
import { secretsManagerReaderOf } from "../../functions/handlers/secrets-manager.ts";
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";
import { ClusterConnections } from "../../functions/kafka/cluster-connections.ts";
import { sqsJobQueue } from "../../functions/queue/sqs-queue.ts";
import { dynamoClient } from "../../functions/store/client.ts";
import type { PacerStore } from "../../functions/store/store.ts";
import type { ThrottleRecord } from "../../schemas/throttle-record.ts";
import { createQueues, deliverAll, sqsEvent, type TestQueues } from "../support/sqs.ts";
import { openStore, type TestStore } from "../support/stores.ts";

/**
 * The scheduled worker pacing clusters with nothing beside them: the tick and worker handlers invoked
 * as Lambda invokes them (the worker with SQS events from ElasticMQ), DynamoDB Local for the state,
 * moto for Secrets Manager, and Apache Kafka (the newest release) reached over SASL_SSL with
 * SCRAM-SHA-512, the credentials only in the secret. Clusters are registered through the HTTP API
 * as an operator registers them; a few pacer cluster ids name the same Kafka cluster where a test
 * needs a fresh history.
 */

const TOPICS = ["orders", "payments"];
const PARTITIONS_PER_TOPIC = 30;
const PREFERRED = (TOPICS.length * PARTITIONS_PER_TOPIC) / 3;
const USER = { username: "pacer", password: "worker-secret-9f1c" };
const WRONG_PASSWORD = "wrong-secret-77aa";
const THRESHOLD_PERCENT = 5;
const CAP = 4;
const INTERVAL_MS = 2_000;
const TICK_PERIOD_MS = 15_000;
const PACING = {
  "pacer.tick.enabled": true,
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": THRESHOLD_PERCENT,
  "leader.imbalance.election.max.per.run": CAP,
  "leader.imbalance.election.throttle.interval.ms": INTERVAL_MS,
  "leader.imbalance.check.interval.seconds": 2,
};
/** What the worker holds a restarted broker's catch-up to, on its follower side (Kafka's own quota). */
const CATCH_UP_RATE = 4_000_000;
const PACING_THE_CATCH_UP = {
  ...PACING,
  "pacer.catch.up.replication.throttled.rate": CATCH_UP_RATE,
  "pacer.catch.up.replication.throttled.side": "follower",
};

let cluster: KafkaCluster;
let scratch: string;
let certs: TestCertificates;
let secretsManager: SecretsManagerServer;
let backing: TestStore;
let queues: TestQueues;
let env: Record<string, string>;
let api: ReturnType<typeof createApp>;
/** Accepts connections and never answers: a cluster whose job only its budget ends. */
let silent: Server;
let secretArn: string;
/** Everything the handlers wrote (their structured logs and metrics): searched for secrets. */
let logged = "";
const writeStdout = process.stdout.write;
const writeStderr = process.stderr.write;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "pacer-worker-"));
  certs = makeCertificates(join(scratch, "certs"));
  [cluster, secretsManager, backing] = await Promise.all([
    KafkaCluster.start({
      brokers: 3,
      saslUser: USER,
      tlsListeners: [
        { name: "SASL_SSL", protocol: "SASL_SSL", keystore: certs.brokerStore, truststore: certs.ca },
      ],
    }),
    startSecretsManager(),
    openStore("DynamoDB Local"),
  ]);
  await createEvenTopics(cluster, TOPICS, PARTITIONS_PER_TOPIC);
  queues = await createQueues(inject("sqsEndpoint"), { visibilitySeconds: 30, maxReceiveCount: 3 });
  env = {
    PACER_TABLE: backing.tableName,
    DYNAMODB_ENDPOINT: backing.endpoint,
    PACER_TICK_QUEUE_URL: queues.queueUrl,
    SQS_ENDPOINT: inject("sqsEndpoint"),
    SECRETSMANAGER_ENDPOINT: secretsManager.endpoint,
    PACER_TICK_WINDOW_SECONDS: "3",
    PACER_CLUSTER_BUDGET_MS: "4000",
  };
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  api = createApp({
    store: backing.store,
    decisionTtlMs: DECISION_TTL_MS,
    idempotencyTtlMs: IDEMPOTENCY_TTL_MS,
  });
  secretArn = await secretsManager.createSecret("kafka/pacer", JSON.stringify(USER));
  const keep = ((chunk: string | Uint8Array) => {
    logged += chunk.toString();
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = keep;
  process.stderr.write = keep;
}, 300_000);

afterAll(async () => {
  process.stdout.write = writeStdout;
  process.stderr.write = writeStderr;
  queues?.client.destroy();
  silent?.close();
  await Promise.all([cluster?.close(), secretsManager?.stop(), backing?.close()]);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The connection an operator registers for the cluster: SCRAM over TLS, the credentials by reference. */
const scramOverTls = (arn: string) => ({
  "bootstrap.servers": cluster.tlsBootstrapServers("SASL_SSL"),
  "security.protocol": "SASL_SSL",
  "sasl.mechanism": "SCRAM-SHA-512",
  "sasl.credentials.secret.arn": arn,
  "ssl.truststore.certificates": readFileSync(certs.ca, "utf8"),
});

async function register(clusterId: string, connection: unknown, config: Record<string, unknown> = PACING) {
  const put = (path: string, body: unknown) =>
    api.request(`/v1/clusters/${clusterId}/${path}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const registered = await put("connection", connection);
  expect(registered.status, await registered.clone().text()).toBe(200);
  expect((await put("config", config)).status).toBe(200);
}

const getJson = async (path: string) => (await api.request(path)).json();
const ledBy = async (id: number) =>
  (await readPartitions(cluster)).filter((p) => p.leader === id && p.replicas[0] === id).length;

/** Broker 3 bounced: back in every ISR, leading none of its preferred partitions. */
async function bounceBroker3() {
  await cluster.stopBroker(3, "SIGTERM");
  await cluster.startBroker(3);
  await waitFor(
    async () =>
      (await readPartitions(cluster)).every((p) => p.isr.length === p.replicas.length) ? true : undefined,
    60_000,
    "broker 3 back in every ISR",
  );
  expect(await ledBy(3)).toBe(0);
}

/**
 * The schedule and the event source mapping: a tick every `periodMs` (its window), each job and its
 * follow-ups delivered to the worker as they come due.
 */
async function tickUntil(done: () => Promise<boolean>, timeoutMs: number, periodMs = 3_000) {
  const environment: Record<string, string> = { ...env, PACER_TICK_WINDOW_SECONDS: String(periodMs / 1000) };
  const tick = createTickHandler(environment);
  const worker = createWorkerHandler(environment);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const startedAtMs = Date.now();
    await tick({ scheduledAt: new Date(startedAtMs).toISOString() });
    await deliverAll(queues, worker, periodMs + 20_000);
    if (await done()) return;
    await new Promise((r) => setTimeout(r, Math.max(0, startedAtMs + periodMs - Date.now())));
  }
  throw new Error(`not done within ${timeoutMs} ms`);
}

async function decisionsOf(clusterId: string): Promise<ManagedAnswer[]> {
  const { decisions } = (await getJson(`/v1/clusters/${clusterId}/decisions?limit=100`)) as {
    decisions: ManagedAnswer[];
  };
  return decisions.sort((a, b) => a.evaluatedAtMs - b.evaluatedAtMs);
}

describe("the scheduled worker reads each cluster and elects itself", () => {
  it("paces a restarted broker back over SCRAM and TLS, beside clusters with a wrong password, unreachable, and never answering", async () => {
    const wrongArn = await secretsManager.createSecret(
      "kafka/pacer-wrong",
      JSON.stringify({ ...USER, password: WRONG_PASSWORD }),
    );
    await register("paced", scramOverTls(secretArn), PACING_THE_CATCH_UP);
    await register("wrong-password", scramOverTls(wrongArn));
    await register("unreachable", {
      "bootstrap.servers": `127.0.0.1:${await freePort()}`,
      "security.protocol": "PLAINTEXT",
    });
    await register("silent", {
      "bootstrap.servers": `127.0.0.1:${(silent.address() as { port: number }).port}`,
      "security.protocol": "PLAINTEXT",
    });

    // Broker 3 down while 40 MB are written. The operator's leader-side throttle (3 MB/s from each
    // leader) slows its catch-up from the start; the worker's follower-side rate on it (4 MB/s) holds
    // it from the worker's first run: it rejoins the ISRs over seconds.
    await setReplicationThrottle(cluster, 3_000_000, ["leader"]);
    await cluster.stopBroker(3, "SIGTERM");
    await produceUneven(cluster, TOPICS, PARTITIONS_PER_TOPIC, 40_000_000);
    const watcher = new LeadershipWatcher(cluster, TOPICS);
    const kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
    const followerRateOf3 = pollBrokerConfig(kafka, 3, FOLLOWER_RATE);
    try {
      await cluster.startBroker(3);
      // Ticks 15 s apart: the ramp and the gate's runs in between are the worker's own follow-ups.
      await tickUntil(async () => (await ledBy(3)) === PREFERRED, 240_000, TICK_PERIOD_MS);
      // Once in sync, the throttle is lifted by the run that sees it (the last one, or the next tick's).
      await tickUntil(async () => followerRateOf3.seen.at(-1) === null, 60_000, 3_000);
    } finally {
      await new Promise((r) => setTimeout(r, 1_000));
      await watcher.stop();
      await followerRateOf3.stop();
      await kafka.close();
      await setReplicationThrottle(cluster, 0, ["leader"]);
    }
    // As Kafka answered for broker 3: the worker's rate on its follower side while it caught up, then none.
    expect(followerRateOf3.seen).toContain(String(CATCH_UP_RATE));
    expect(followerRateOf3.seen.at(-1)).toBeNull();
    const { record } = (await getJson("/v1/clusters/paced/catch-up-throttles")) as { record: ThrottleRecord };
    expect([record.rates, record.lists]).toEqual([{}, {}]);

    // As Kafka saw it: no move onto broker 3 while over the threshold, never more than a cap within an interval.
    const onto3 = watcher.moves.filter((m) => m.to === 3);
    expect(onto3.length).toBeGreaterThanOrEqual(PREFERRED);
    expect(onto3.filter((m) => m.outOfSync * 100 > THRESHOLD_PERCENT * m.preferred)).toEqual([]);
    expect(largestBurst(onto3, INTERVAL_MS - 300)).toBeLessThanOrEqual(CAP);
    // As the worker decided: gated first, then capped runs at least the interval apart.
    const decisions = await decisionsOf("paced");
    const firstGated = decisions.find((d) => d.brokers.some((b) => b.id === 3 && b.gated));
    const firstElecting = decisions.find((d) => d.elections.length > 0);
    expect(firstGated).toBeDefined();
    // The gate's two more runs (hysteresis) came at the check interval, not a tick apart each.
    expect((firstElecting?.evaluatedAtMs ?? 0) - (firstGated?.evaluatedAtMs ?? 0)).toBeLessThan(
      TICK_PERIOD_MS,
    );
    const electing = decisions.filter((d) => d.elections.length > 0);
    expect(electing.every((d) => d.elections.length <= CAP)).toBe(true);
    const capped = electing.filter((d) => d.elections.length === CAP);
    for (let i = 1; i < capped.length; i++)
      expect(
        (capped[i] as ManagedAnswer).evaluatedAtMs - (capped[i - 1] as ManagedAnswer).evaluatedAtMs,
      ).toBeGreaterThanOrEqual(INTERVAL_MS);

    // What the worker carried out stays on the last run's summary after the next ticks skip the
    // cluster; the other two clusters' last ticks say why they could not be read.
    const { clusters } = (await getJson("/v1/clusters")) as {
      clusters: {
        clusterId: string;
        connected: boolean;
        lastTick: Record<string, unknown>;
        carriedOut: Record<string, unknown> | null;
      }[];
    };
    const rowOf = (id: string) => clusters.find((c) => c.clusterId === id);
    expect(rowOf("wrong-password")?.lastTick).toMatchObject({
      outcome: "unreachable",
      reach: "authentication",
    });
    expect(rowOf("unreachable")?.lastTick).toMatchObject({ outcome: "unreachable", reach: "unreachable" });
    // A broker that never answers costs its own job the budget, and nothing else.
    expect(rowOf("silent")?.lastTick).toMatchObject({ outcome: "unreachable", reach: "unreachable" });
    expect(rowOf("paced")?.connected).toBe(true);
    const carried = rowOf("paced")?.carriedOut;
    expect(carried).toMatchObject({ asked: expect.any(Number), notNeeded: 0, failed: {} });
    expect(carried?.done).toBe(carried?.asked);

    // The secrets are nowhere but in Secrets Manager: not in the table, the API, the console or the logs.
    const scan = dynamoClient({ endpoint: backing.endpoint });
    const items = JSON.stringify((await scan.send(new ScanCommand({ TableName: backing.tableName }))).Items);
    scan.destroy();
    const pages = await Promise.all(
      ["/", "/clusters/paced", "/clusters/wrong-password"].map(async (path) =>
        (await api.request(path)).text(),
      ),
    );
    expect(pages[2]).toContain("credentials refused");
    const listing =
      JSON.stringify(clusters) +
      JSON.stringify(await getJson("/v1/clusters/paced/connection")) +
      pages.join("");
    for (const text of [items, listing, logged]) {
      expect(text).not.toContain(USER.password);
      expect(text).not.toContain(WRONG_PASSWORD);
    }
    // The metric the alarm on clusters that cannot be reached watches, and the warning in the log.
    expect(logged).toContain('"FleetClusterUnreachable":1');
    expect(logged).toContain('"message":"cluster unreachable"');
  });

  it("a job delivered twice at once, to two workers, is carried out once", async () => {
    await register("twice", scramOverTls(secretArn), {
      ...PACING,
      "leader.imbalance.election.max.per.run": 100,
    });
    await bounceBroker3();
    const message = { MessageId: "m-1", ReceiptHandle: "r-1", Body: JSON.stringify(jobFor("twice")) };
    // Two function instances at once, each with its own connections, handed the same delivery.
    const before = logged.length;
    const responses = await Promise.all([
      createWorkerHandler(env)(sqsEvent([message])),
      createWorkerHandler(env)(sqsEvent([message])),
    ]);
    expect(responses.flatMap((r) => r.batchItemFailures)).toEqual([]);
    const statuses = jobLines(logged.slice(before)).map((line) => `${line.status} ${line.elections}`);
    expect(statuses.sort()).toEqual([`done ${PREFERRED}`, "replayed 0"]);
    expect((await decisionsOf("twice")).filter((d) => d.elections.length > 0)).toHaveLength(1);
    expect(await ledBy(3)).toBe(PREFERRED);
    const twice = (await getJson("/v1/clusters/twice")) as {
      lastTick: { carriedOut?: Record<string, unknown> };
      lastDecision: { carriedOut?: Record<string, unknown> };
    };
    expect(twice.lastTick.carriedOut).toMatchObject({ asked: PREFERRED, done: PREFERRED });
    expect(twice.lastDecision.carriedOut).toEqual(twice.lastTick.carriedOut);
  });

  it("a worker gone after the election, before writing what Kafka answered: delivered again, nothing is asked twice", async () => {
    await register("killed", scramOverTls(secretArn), {
      ...PACING,
      "leader.imbalance.election.max.per.run": 100,
    });
    await bounceBroker3();
    const job = jobFor("killed");
    const elections: number[] = [];
    // The worker dies the moment Kafka has answered: its last write never happens.
    const dying = workerOn(
      withFault(backing.store, {
        recordCarriedOut: () => {
          throw new Error("worker killed");
        },
      }),
      elections,
    );
    await expect(runTickJob(job, dying)).rejects.toThrow("worker killed");
    expect(elections).toEqual([PREFERRED]);
    expect(await ledBy(3)).toBe(PREFERRED);
    // The queue delivers it again, to another worker: the run's tick key is saved, so nothing runs.
    const again = workerOn(backing.store, elections);
    expect(await runTickJob(job, again)).toMatchObject({ status: "replayed", elections: 0 });
    expect(elections).toEqual([PREFERRED]);
    expect((await decisionsOf("killed")).filter((d) => d.elections.length > 0)).toHaveLength(1);
  });

  it("a batch whose read is older than pacer.snapshot.max.age.ms by the time it is saved is not carried out", async () => {
    await register("slow-store", scramOverTls(secretArn), {
      ...PACING,
      "leader.imbalance.election.max.per.run": 100,
      "pacer.snapshot.max.age.ms": 1_000,
    });
    await bounceBroker3();
    const job = jobFor("slow-store");
    const elections: number[] = [];
    const slow = workerOn(
      withFault(backing.store, { saveRun: () => new Promise((r) => setTimeout(r, 1_500)) }),
      elections,
    );
    expect(await runTickJob(job, slow)).toMatchObject({ status: "done", elections: PREFERRED });
    expect(elections).toEqual([]);
    expect(await ledBy(3)).toBe(0);
    const record = await backing.store.getCluster("slow-store");
    expect(record?.lastTick?.carriedOut?.notCarriedOut).toMatch(
      /old, over pacer\.snapshot\.max\.age\.ms \(1000\)/,
    );
  });
});

describe("a broker killed a moment ago, still in the cluster's metadata", () => {
  it("is down to the catch-up throttle: its rate is lifted once it is back, not an error each run", async () => {
    const kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
    let record: ThrottleRecord = {
      rates: { [`${FOLLOWER_RATE}@3`]: { rateBytesPerSecond: 1_000_000 } },
      lists: {},
      throttlingSinceMs: { "3": Date.now() },
    };
    const throttler = new CatchUpThrottler(kafka, {
      load: async () => structuredClone(record),
      save: async (next) => {
        record = structuredClone(next);
      },
    });
    try {
      await cluster.stopBroker(3, "SIGKILL");
      // KRaft lists it until its session times out (9 s): connecting to it is refused meanwhile.
      const report = await throttler.liftAll();
      expect(report.errors).toEqual([]);
      expect(report.liftWhenBack).toEqual([3]);
      expect(record.rates).toHaveProperty(`${FOLLOWER_RATE}@3`);
    } finally {
      await kafka.close();
      await cluster.startBroker(3);
    }
  });
});

/**
 * Broker `id`'s own value of `name` as Kafka answers it (null when it has none), polled until stopped:
 * each change, in order. A read that fails (the broker down) is skipped.
 */
function pollBrokerConfig(kafka: KafkaAdminClient, id: number, name: string) {
  const seen: (string | null)[] = [];
  let polling = true;
  const loop = (async () => {
    while (polling) {
      const value = await kafka.describeBrokerConfigs(id, [name]).then(
        (configs) => {
          const config = configs.get(name);
          return config?.source === "broker" ? config.value : null;
        },
        () => undefined,
      );
      if (value !== undefined && (seen.length === 0 || seen.at(-1) !== value)) seen.push(value);
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return {
    seen,
    stop: async () => {
      polling = false;
      await loop;
    },
  };
}

/** The run lines ("tick job") of the worker's structured log. */
function jobLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.includes('"tick job"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A worker on `store`, whose Kafka clients count the partitions of each ElectLeaders request. */
function workerOn(store: PacerStore, elections: number[]): TickWorker {
  const clients = new ClusterConnections(secretsManagerReaderOf(env));
  const clientOf = clients.clientOf.bind(clients);
  clients.clientOf = async (id, connection) => {
    const kept = await clientOf(id, connection);
    const elect = kept.client.electPreferred.bind(kept.client);
    kept.client.electPreferred = async (partitions, timeoutMs) => {
      elections.push(partitions.length);
      return elect(partitions, timeoutMs);
    };
    return kept;
  };
  return { store, clock: Date.now, queue: sqsJobQueue(env), decisionTtlMs: DECISION_TTL_MS, clients };
}

/** The tick's job for one cluster, as the tick queues it. */
function jobFor(clusterId: string): TickJob {
  const scheduledAtMs = Date.now();
  return { clusterId, scheduledAtMs, run: 1, untilMs: scheduledAtMs + 3_000, fleetConfig: {} };
}

/** The store, with a fault before some of its writes: a fault a test cannot cause otherwise. */
function withFault(
  store: PacerStore,
  faults: {
    recordCarriedOut?: () => void;
    saveRun?: () => Promise<void>;
  },
): PacerStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      const fault = faults[name as keyof typeof faults] as ((...args: unknown[]) => unknown) | undefined;
      if (typeof value !== "function") return value;
      if (!fault) return value.bind(target);
      return async (...args: unknown[]) => {
        await fault(...args);
        return value.apply(target, args);
      };
    },
  });
}
