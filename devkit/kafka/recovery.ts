import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Admin, Connection, incrementalAlterConfigsV1, ProduceAcks, Producer } from "@platformatic/kafka";
import type { RunReport } from "../../functions/agent/agent.ts";
import { KafkaAdminClient, type KafkaPartition } from "../../functions/kafka/admin.ts";
import { spawnPacer } from "../processes.ts";
import type { KafkaCluster } from "./cluster.ts";

/**
 * A broker's recovery on a real cluster, as the end-to-end tests and `npm run bench:kafka` stage it:
 * topics whose preferred leaders are spread evenly, data produced with acks=all while brokers are
 * down, replication throttled so that a restarted broker rejoins the ISRs one partition at a time,
 * and a watcher that records every leadership change.
 */

/** The replicas {@link createEvenTopics} gives partition `partition` of its `topicIndex`-th topic. */
export const evenReplicas = (brokers: number[], topicIndex: number, partition: number) =>
  [0, 1, 2].map((k) => brokers[(partition + topicIndex + k) % brokers.length] as number);

/**
 * Topics of `partitionsPerTopic` partitions, replication factor 3, preferred leaders in rotation, every
 * replica in the replication throttle's lists (`throttled`: both sides, or neither, so that the lists
 * are free for catch-up pacing).
 */
export async function createEvenTopics(
  cluster: KafkaCluster,
  topics: string[],
  partitionsPerTopic: number,
  timeoutMs = 60_000,
  throttled: "both" | "none" = "both",
): Promise<void> {
  const brokers = cluster.brokerIds();
  for (const [t, topic] of topics.entries()) {
    const assignments = Array.from({ length: partitionsPerTopic }, (_, partition) => ({
      partition,
      brokers: evenReplicas(brokers, t, partition),
    }));
    // A client of its own for each attempt: on NOT_CONTROLLER the client looks the controller up
    // again in the metadata it read first (an empty topic list never refreshes it), so one client
    // keeps asking the broker that was not the controller when it started (Kafka 3.7.2 in ZooKeeper
    // mode answered NOT_CONTROLLER for the whole minute).
    const create = async () => {
      const admin = new Admin({
        clientId: "pacer-test",
        bootstrapBrokers: cluster.bootstrapServers.split(","),
      });
      try {
        await admin.createTopics({
          topics: [topic],
          assignments,
          // Only replicas out of the ISR are throttled, so the throttle slows catch-up and nothing else.
          configs:
            throttled === "both"
              ? [
                  { name: "leader.replication.throttled.replicas", value: "*" },
                  { name: "follower.replication.throttled.replicas", value: "*" },
                ]
              : [],
        });
      } finally {
        await admin.close();
      }
    };
    // A ZooKeeper-mode controller may not know every broker yet when they are all listed, and a
    // controller busy starting up may time a request out: retry as long as the leaders may take
    // below; a topic an earlier attempt created is done.
    await waitFor(
      () =>
        create().then(
          () => true,
          (error: Error) => (/already exists/i.test(describeError(error)) ? true : Promise.reject(error)),
        ),
      timeoutMs,
      `topic ${topic} created`,
    );
  }
  await waitFor(async () => {
    const partitions = await readPartitions(cluster);
    return partitions.filter((p) => topics.includes(p.topic) && p.leader === p.replicas[0]).length ===
      topics.length * partitionsPerTopic
      ? true
      : undefined;
  }, timeoutMs);
}

/**
 * Replication throttle in bytes/s for leaders and followers (or the sides given), as the cluster-wide
 * default and on each running broker's own config; 0 lifts it. Both, because Kafka 3.7 in ZooKeeper
 * mode ignores the cluster-wide default (measured: a broker caught up 40 MB in a second under a 2 MB/s
 * default), and a ZooKeeper-mode broker takes its own config only from a request sent to itself.
 */
export async function setReplicationThrottle(
  cluster: KafkaCluster,
  bytesPerSecond: number,
  sides: ("leader" | "follower")[] = ["leader", "follower"],
): Promise<void> {
  const names = sides.map((side) => `${side}.replication.throttled.rate`);
  const configs =
    bytesPerSecond > 0
      ? names.map((name) => ({ name, configOperation: 0 as const, value: String(bytesPerSecond) })) // SET
      : names.map((name) => ({ name, configOperation: 1 as const })); // DELETE
  for (const [i, broker] of cluster.runningBrokers().entries()) {
    // BROKER (4): the empty name is the cluster-wide default, the id the broker's own.
    const resources = [String(broker.id), ...(i === 0 ? [""] : [])];
    const connection = new Connection("pacer-test");
    try {
      await connection.connect(broker.host, broker.port);
      const response = await incrementalAlterConfigsV1.api.async(
        connection,
        resources.map((resourceName) => ({ resourceType: 4, resourceName, configs })),
        false,
      );
      const failed = response.responses.filter((r) => r.errorCode !== 0);
      if (failed.length) throw new Error(`setting the throttle failed: ${JSON.stringify(failed)}`);
    } finally {
      await connection.close();
    }
  }
}

/**
 * Produces about `totalBytes` with acks=all, unevenly: partition k of a topic gets a share growing with
 * k % 10, so that a broker catching up under a throttle finishes the small partitions first and
 * rejoins their ISRs one by one rather than all at once.
 */
export async function produceUneven(
  cluster: KafkaCluster,
  topics: string[],
  partitionsPerTopic: number,
  totalBytes: number,
): Promise<void> {
  const recordBytes = 16 * 1024;
  const weights = Array.from({ length: partitionsPerTopic }, (_, k) => (k % 10) + 1);
  const weightSum = weights.reduce((a, b) => a + b, 0) * topics.length;
  const producer = new Producer({
    clientId: "pacer-test-load",
    // The brokers that run: a producer that starts on a crashed one's address never tries the next.
    bootstrapBrokers: cluster.runningBrokers().map((b) => `${b.host}:${b.port}`),
    acks: ProduceAcks.ALL,
    compression: "none",
  });
  const value = Buffer.alloc(recordBytes, 7);
  try {
    const batches: { topic: string; partition: number; records: number }[] = [];
    for (const topic of topics) {
      for (const [partition, weight] of weights.entries()) {
        const records = Math.max(1, Math.round((totalBytes * weight) / weightSum / recordBytes));
        batches.push({ topic, partition, records });
      }
    }
    // A few partitions at a time, 32 records (512 KiB) per request.
    const queue = [...batches];
    const worker = async () => {
      for (let batch = queue.shift(); batch; batch = queue.shift()) {
        for (let sent = 0; sent < batch.records; sent += 32) {
          const n = Math.min(32, batch.records - sent);
          await producer.send({
            messages: Array.from({ length: n }, () => ({
              topic: batch.topic,
              partition: batch.partition,
              value,
            })),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
  } finally {
    await producer.close();
  }
}

export async function readPartitions(cluster: KafkaCluster): Promise<KafkaPartition[]> {
  const client = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
  try {
    return await client.describePartitions();
  } finally {
    await client.close();
  }
}

export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${describeError(lastError)}` : ""}`,
  );
}

/**
 * An error with the errors it gathers and its cause, as the Kafka client nests them (attempts, then
 * the per-topic answers with Kafka's own message), so that a failure in CI says what Kafka answered.
 */
export function describeError(error: unknown, depth = 0): string {
  if (!(error instanceof Error) || depth > 4) return String(error);
  const details = error as Error & { errors?: unknown[]; serverErrorMessage?: unknown; apiId?: unknown };
  const own = [details.apiId, details.message, details.serverErrorMessage].filter(Boolean).join(" ");
  const inner = [...(details.errors ?? []), ...(error.cause ? [error.cause] : [])];
  return inner.length === 0 ? own : `${own} [${inner.map((e) => describeError(e, depth + 1)).join("; ")}]`;
}

export interface LeadershipMove {
  atMs: number;
  topic: string;
  partition: number;
  from: number;
  to: number;
  /** The new leader's preferred partitions out of its ISR, and how many it prefers, at that poll. */
  outOfSync: number;
  preferred: number;
}

export interface Sample {
  atMs: number;
  /** Per broker: preferred partitions it leads, and preferred partitions it is out of the ISR of. */
  leads: Record<number, number>;
  outOfSync: Record<number, number>;
}

/** A broker joining or leaving a partition's ISR, as a poll saw it. */
export interface IsrChange {
  atMs: number;
  topic: string;
  partition: number;
  broker: number;
  joined: boolean;
}

/** Polls the cluster every `intervalMs` and records every leadership change and per-broker counts. */
export class LeadershipWatcher {
  readonly moves: LeadershipMove[] = [];
  readonly samples: Sample[] = [];
  readonly isrChanges: IsrChange[] = [];
  private last = new Map<string, number>();
  private lastIsr = new Map<string, number[]>();
  private running = true;
  private readonly loop: Promise<void>;
  private readonly client: KafkaAdminClient;

  constructor(
    cluster: KafkaCluster,
    private readonly topics: string[],
    intervalMs = 250,
  ) {
    this.client = new KafkaAdminClient({
      bootstrapServers: cluster.bootstrapServers.split(","),
      requestTimeoutMs: 5000,
    });
    this.loop = this.run(intervalMs);
  }

  private async run(intervalMs: number): Promise<void> {
    while (this.running) {
      const started = Date.now();
      try {
        this.observe(started, await this.client.describePartitions());
      } catch {
        // A broker restarting can fail one poll; the next one catches up.
      }
      await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (Date.now() - started))));
    }
  }

  private observe(atMs: number, all: KafkaPartition[]): void {
    const partitions = all.filter((p) => this.topics.includes(p.topic));
    const leads: Record<number, number> = {};
    const outOfSync: Record<number, number> = {};
    const preferred: Record<number, number> = {};
    for (const p of partitions) {
      const b = p.replicas[0] as number;
      preferred[b] = (preferred[b] ?? 0) + 1;
      if (p.leader === b) leads[b] = (leads[b] ?? 0) + 1;
      if (!p.isr.includes(b)) outOfSync[b] = (outOfSync[b] ?? 0) + 1;
    }
    this.samples.push({ atMs, leads, outOfSync });
    for (const p of partitions) {
      const key = `${p.topic}-${p.partition}`;
      const isrBefore = this.lastIsr.get(key);
      if (isrBefore !== undefined) {
        for (const r of p.replicas) {
          const was = isrBefore.includes(r);
          if (was !== p.isr.includes(r))
            this.isrChanges.push({ atMs, topic: p.topic, partition: p.partition, broker: r, joined: !was });
        }
      }
      this.lastIsr.set(key, p.isr);
      const before = this.last.get(key);
      if (before !== undefined && before !== p.leader) {
        this.moves.push({
          atMs,
          topic: p.topic,
          partition: p.partition,
          from: before,
          to: p.leader,
          outOfSync: outOfSync[p.leader] ?? 0,
          preferred: preferred[p.leader] ?? 0,
        });
      }
      this.last.set(key, p.leader);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.client.close();
  }
}

/** Moves onto `broker` grouped into bursts: the most moves within any window of `windowMs`. */
export function largestBurst(moves: LeadershipMove[], windowMs: number, broker?: number): number {
  const times = moves.filter((m) => broker === undefined || m.to === broker).map((m) => m.atMs);
  let best = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[end] as number) - (times[start] as number) >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

/** The pacing the end-to-end recovery runs under (the issue's figures). */
export const RECOVERY_PACING = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
  "leader.imbalance.election.max.per.run": 20,
  "leader.imbalance.election.throttle.interval.ms": 2000,
  "leader.imbalance.check.interval.seconds": 5,
};

export type Pacer =
  | { kind: "agent-embedded" }
  | { kind: "agent-serve"; url: string; clusterId: string }
  | { kind: "kafka-balancer" };

export interface RecoveryOptions {
  cluster: KafkaCluster;
  topics: string[];
  partitionsPerTopic: number;
  restart: number[];
  produceBytes: number;
  throttleBytesPerSecond: number;
  pacer: Pacer;
  /** The agent's pacing config; default {@link RECOVERY_PACING}. */
  pacing?: typeof RECOVERY_PACING;
  timeoutMs?: number;
  /** Runs beside the recovery (a latency probe, say); stopped when it ends. */
  during?: () => { stop(): Promise<void> };
  /** A pause between producing and restarting, so that the brokers' disks settle (and `during` sees a baseline). */
  settleMs?: number;
}

export interface RecoveryResult {
  moves: LeadershipMove[];
  samples: Sample[];
  restartedAtMs: number;
  /** When each restarted broker led all of its preferred partitions. */
  recoveredAtMs: Record<number, number>;
  /** The agent's reports, one per run (none under Kafka's balancer). */
  runs: AgentRunLine[];
  agentOutput: string;
}

export interface AgentRunLine {
  atMs: number;
  decisionId?: string;
  elections: { asked: number; done: number; notNeeded: number; failed: Record<string, number> };
  shares: Record<string, { gated: boolean; eligible: number; elected: number }>;
  heldBack: RunReport["heldBack"];
  nextDelayMs: number;
  error?: string;
  failedStep?: RunReport["failedStep"];
  resumed?: RunReport["resumed"];
  catchUp?: RunReport["catchUp"];
}

/** Stops `restart`, produces while they are down, throttles catch-up, restarts them and waits for the end. */
export async function runRecovery(options: RecoveryOptions): Promise<RecoveryResult> {
  const { cluster, topics, restart } = options;
  // Throttled while all still run, so that each takes it in its own config (only replicas out of the
  // ISR are throttled: nothing is slower until the stopped brokers come back behind).
  await setReplicationThrottle(cluster, options.throttleBytesPerSecond);
  for (const id of restart) await cluster.stopBroker(id, "SIGTERM");
  await produceUneven(cluster, topics, options.partitionsPerTopic, options.produceBytes);
  const watcher = new LeadershipWatcher(cluster, topics);
  const agent =
    options.pacer.kind === "kafka-balancer"
      ? undefined
      : startAgent(cluster, options.pacer, { config: options.pacing });
  const side = options.during?.();
  try {
    if (options.settleMs) await new Promise((r) => setTimeout(r, options.settleMs));
    const restartedAtMs = Date.now();
    await Promise.all(restart.map((id) => cluster.startBroker(id)));
    const preferredPerBroker = (topics.length * options.partitionsPerTopic) / cluster.brokerIds().length;
    const recoveredAtMs: Record<number, number> = {};
    await waitFor(
      async () => {
        for (const sample of watcher.samples) {
          for (const id of restart) {
            if (recoveredAtMs[id] === undefined && (sample.leads[id] ?? 0) >= preferredPerBroker)
              recoveredAtMs[id] = sample.atMs;
          }
        }
        return restart.every((id) => recoveredAtMs[id] !== undefined) ? true : undefined;
      },
      options.timeoutMs ?? 240_000,
      `brokers ${restart.join(",")} to lead all their preferred partitions`,
    ).catch(async (error) => {
      throw new Error(`${(error as Error).message}\nagent output:\n${agent?.output().slice(-3000)}`);
    });
    // A few more polls, so that a late move onto a broker is still seen.
    await new Promise((r) => setTimeout(r, 1000));
    const runs = agent ? await agent.stop() : [];
    return {
      moves: watcher.moves,
      samples: watcher.samples,
      restartedAtMs,
      recoveredAtMs,
      runs,
      agentOutput: agent?.output() ?? "",
    };
  } finally {
    await side?.stop();
    await agent?.stop();
    await watcher.stop();
    await setReplicationThrottle(cluster, 0);
  }
}

/** `pacer wait` for one broker of the cluster, reading once a second, as an operator's script runs it. */
export const startPacerWait = (cluster: KafkaCluster, broker: number, timeout: string) =>
  spawnPacer([
    "wait",
    "--bootstrap-server",
    cluster.bootstrapServers,
    "--broker",
    String(broker),
    "--timeout",
    timeout,
    "--interval",
    "1s",
  ]);

/** `pacer agent` as its own process, one JSON line per run. */
export function startAgent(
  cluster: KafkaCluster,
  pacer: Exclude<Pacer, { kind: "kafka-balancer" }>,
  options: {
    config?: Record<string, string | number>;
    args?: string[];
    dataDir?: string;
    /** Runs the agent under this command prefix (a network namespace of its own). */
    prefix?: string[];
  } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), "pacer-agent-"));
  const dataDir = options.dataDir ?? join(dir, "data");
  const configFile = join(dir, "pacing.properties");
  writeFileSync(
    configFile,
    Object.entries(options.config ?? RECOVERY_PACING)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n"),
  );
  const target =
    pacer.kind === "agent-embedded"
      ? ["--embedded", "--data-dir", dataDir]
      : ["--pacer-url", pacer.url, "--cluster-id", pacer.clusterId, "--data-dir", dataDir];
  const agent = spawnPacer(
    [
      "agent",
      "--bootstrap-server",
      cluster.bootstrapServers,
      ...target,
      "--config",
      configFile,
      "--json",
      ...(options.args ?? []),
    ],
    { prefix: options.prefix },
  );
  const { child, exited } = agent;
  let stopped: Promise<AgentRunLine[]> | undefined;
  return {
    child,
    exited,
    output: () => `${agent.stdout()}${agent.stderr()}`,
    runs: () => parseRuns(agent.stdout()),
    stop(): Promise<AgentRunLine[]> {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        await exited;
        rmSync(dir, { recursive: true, force: true });
        return parseRuns(agent.stdout());
      })();
      return stopped;
    },
  };
}

/** The run lines up to the last newline: what follows it is not yet written whole (or cut by a kill -9). */
function parseRuns(stdout: string): AgentRunLine[] {
  return stdout
    .split("\n")
    .slice(0, -1)
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as AgentRunLine);
}
