import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Admin, Connection, metadataV12 } from "@platformatic/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  LeadershipWatcher,
  produceUneven,
  readPartitions,
  setReplicationThrottle,
  startAgent,
  startPacerWait,
  waitFor,
} from "../../devkit/kafka/recovery.ts";
import { describeWithKafkaTools } from "../../devkit/kafka/tools.ts";
import { spawnPacer, startPacerServe } from "../../devkit/processes.ts";
import type { ClusterRead } from "../../functions/agent/snapshot.ts";
import { snapshotOf } from "../../functions/agent/snapshot.ts";
import { KafkaAdminClient, parseHostPort } from "../../functions/kafka/admin.ts";

/**
 * The agent's contact with a real Apache Kafka cluster (the newest release, devkit/kafka/versions.ts): its snapshot against Kafka's own tool,
 * its elections through ElectLeaders and through Kafka's LeaderElectionCommand, and what it does
 * when the pacer cannot be reached.
 */

const TOPICS = ["orders", "payments"];
let cluster: KafkaCluster;
let kafka: KafkaAdminClient;
let scratch: string;

const readCluster = async (): Promise<ClusterRead> => ({
  brokers: (await kafka.describeCluster()).brokers,
  partitions: await kafka.describePartitions(),
  reassigning: await kafka.listReassignments(),
});

/** Stops a broker with a controlled shutdown and starts it again: leadership stays on the others. */
async function bounce(id: number): Promise<void> {
  await cluster.stopBroker(id, "SIGTERM");
  await cluster.startBroker(id);
  await waitFor(
    async () =>
      (await readPartitions(cluster)).every((p) => !TOPICS.includes(p.topic) || p.isr.length === 3)
        ? true
        : undefined,
    60_000,
    `broker ${id} back in every ISR`,
  );
}

const ledBy = async (id: number) =>
  (await readPartitions(cluster)).filter((p) => TOPICS.includes(p.topic) && p.leader === id).length;

const imbalanced = async () =>
  (await readPartitions(cluster)).filter((p) => TOPICS.includes(p.topic) && p.leader !== p.replicas[0])
    .length;

/** `pacer <args>` to completion. */
async function pacer(
  args: string[],
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = spawnPacer(args, { input: input ?? "" });
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

beforeAll(async () => {
  cluster = await KafkaCluster.start({
    brokers: 3,
    saslUser: { username: "pacer", password: "pacer-secret" },
  });
  await createEvenTopics(cluster, TOPICS, 30);
  kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
  scratch = mkdtempSync(join(tmpdir(), "pacer-agent-e2e-"));
});

afterAll(async () => {
  await kafka?.close();
  await cluster?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("the agent's snapshot", () => {
  it("equals what Kafka's own kafka-topics --describe reports for every partition", async () => {
    const snapshot = snapshotOf(await readCluster());
    const described = await describeWithKafkaTools(cluster);
    expect(described.filter((p) => TOPICS.includes(p.topic)).length).toBe(60);
    const ours = snapshot.partitions.map(({ topic, partition, leader, replicas, isr }) => ({
      topic,
      partition,
      leader,
      replicas,
      isr,
    }));
    const key = (p: { topic?: string; partition: number }) =>
      `${p.topic}/${String(p.partition).padStart(5, "0")}`;
    const sort = <T extends { topic?: string; partition: number }>(list: T[]) =>
      [...list].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sort(ours)).toEqual(sort(described));
    expect(snapshot.brokers).toEqual(
      [1, 2, 3].map((id) => ({ id, fenced: false, inControlledShutdown: false })),
    );
  });

  it("shows a stopped broker as fenced, while Kafka's Metadata no longer lists it, and its partition leaderless", async () => {
    // A topic whose only replica is broker 3: without it, its partition has no leader.
    const admin = new Admin({
      clientId: "pacer-test",
      bootstrapBrokers: cluster.bootstrapServers.split(","),
    });
    await admin.createTopics({ topics: ["solo"], assignments: [{ partition: 0, brokers: [3] }] });
    await admin.close();
    await cluster.stopBroker(3, "SIGKILL");
    try {
      // The controller fences a broker that stopped heartbeating after broker.session.timeout.ms.
      const snapshot = await waitFor(
        async () => {
          const s = snapshotOf(await readCluster());
          return s.brokers.find((b) => b.id === 3)?.fenced ? s : undefined;
        },
        60_000,
        "broker 3 fenced",
      );
      expect(snapshot.brokers.map((b) => [b.id, b.fenced])).toEqual([
        [1, false],
        [2, false],
        [3, true],
      ]);
      const solo = await waitFor(
        async () => {
          const p = snapshotOf(await readCluster()).partitions.find((q) => q.topic === "solo");
          return p?.leader === -1 ? p : undefined;
        },
        30_000,
        "solo-0 without a leader",
      );
      expect(solo).toMatchObject({ replicas: [3], leader: -1 });
      const connection = new Connection("pacer-test");
      const { host, port } = parseHostPort(cluster.bootstrapServers.split(",")[0] as string);
      await connection.connect(host, port);
      try {
        const metadata = await metadataV12.api.async(connection, [], false, false);
        expect([...metadata.brokers.values()].map((b) => b.nodeId).sort()).toEqual([1, 2]);
      } finally {
        await connection.close();
      }
    } finally {
      await cluster.startBroker(3);
    }
    await waitFor(
      async () =>
        (await readPartitions(cluster)).every((p) => !TOPICS.includes(p.topic) || p.isr.length === 3)
          ? true
          : undefined,
      60_000,
      "broker 3 back in every ISR",
    );
  });

  it("gives a broker that is catching up its bytes still to fetch, from each broker's own DescribeLogDirs", async () => {
    const lagOf = async (id: number) => {
      const read = { ...(await readCluster()), replicaSizes: await kafka.replicaSizes() };
      expect([...read.replicaSizes.answered].sort()).toEqual(
        read.brokers
          .filter((b) => !b.fenced)
          .map((b) => b.id)
          .sort(),
      );
      return snapshotOf(read).brokers.find((b) => b.id === id)?.lagBytes;
    };
    expect(await lagOf(2)).toBe(0);
    await setReplicationThrottle(cluster, 1_000_000);
    try {
      await cluster.stopBroker(2, "SIGTERM");
      // 40 MB, of which broker 2 holds replicas of about two thirds: at 1 MB/s it is still well behind
      // by the first read that sees it answer (on CI, beside the other part's clusters, that took ~10 s).
      await produceUneven(cluster, TOPICS, 30, 40_000_000);
      await cluster.startBroker(2);
      // Back and registered, fetching at 1 MB/s: much of what it missed is still to fetch.
      const behind = await waitFor(async () => {
        const lag = await lagOf(2);
        return lag !== undefined && lag > 0 ? lag : undefined;
      }, 30_000);
      expect(behind).toBeGreaterThan(5_000_000);
      expect(behind).toBeLessThan(45_000_000);
      expect(await lagOf(1)).toBe(0);
    } finally {
      await setReplicationThrottle(cluster, 0);
    }
    await waitFor(async () => ((await lagOf(2)) === 0 ? true : undefined), 60_000, "broker 2 caught up");
  });
});

describe("the agent's connection", () => {
  const clientProperties = (mechanism: string, password: string) => {
    const module = mechanism === "PLAIN" ? "plain.PlainLoginModule" : "scram.ScramLoginModule";
    const file = join(scratch, `${mechanism}-${password}.properties`);
    writeFileSync(
      file,
      [
        "security.protocol=SASL_PLAINTEXT",
        `sasl.mechanism=${mechanism}`,
        `sasl.jaas.config=org.apache.kafka.common.security.${module} required username="pacer" password="${password}";`,
      ].join("\n"),
    );
    return file;
  };
  const dryRunOver = (commandConfig: string) =>
    pacer([
      "agent",
      "--bootstrap-server",
      cluster.saslBootstrapServers,
      "--command-config",
      commandConfig,
      "--embedded",
      "--data-dir",
      join(scratch, "sasl"),
      "--cluster-id",
      "sasl",
      "--once",
      "--dry-run",
    ]);

  it.each(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])(
    "authenticates with SASL %s from --command-config",
    async (mechanism) => {
      const run = await dryRunOver(clientProperties(mechanism, "pacer-secret"));
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/asked \d+ \(dry run: nothing elected\)/);
    },
  );

  it("with a wrong password stops at start: reads nothing, elects nothing, exits 1", async () => {
    const run = await dryRunOver(clientProperties("SCRAM-SHA-256", "wrong"));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^pacer agent: cannot connect .*(SASL|[Aa]uthentication).*; nothing elected$/m,
    );
    expect(run.stdout).toBe("");
  });
});

describe("elections on the real cluster", () => {
  it("an answer's kafkaLeaderElection file is accepted by Kafka's LeaderElectionCommand and elects exactly those", async () => {
    await bounce(2);
    expect(await ledBy(2)).toBe(0);
    const snapshot = snapshotOf(await readCluster());
    const request = { snapshot, config: { "leader.imbalance.election.max.per.run": 7 } };
    const evaluated = await pacer(["evaluate", "-"], JSON.stringify(request));
    expect(evaluated.code).toBe(0);
    const answer = JSON.parse(evaluated.stdout) as {
      elections: { topic: string; partition: number; leader: number }[];
      kafkaLeaderElection: { partitions: { topic: string; partition: number }[] };
    };
    expect(answer.elections.length).toBe(7);
    const file = join(scratch, "election.json");
    writeFileSync(file, JSON.stringify(answer.kafkaLeaderElection));
    const tool = await cluster.runTool("org.apache.kafka.tools.LeaderElectionCommand", [
      "--bootstrap-server",
      cluster.bootstrapServers,
      "--election-type",
      "preferred",
      "--path-to-json-file",
      file,
    ]);
    expect(tool.output).toContain("Successfully completed leader election (PREFERRED) for partitions");
    expect(tool.code).toBe(0);
    const after = await readPartitions(cluster);
    const elected = new Set(answer.elections.map((e) => `${e.topic}-${e.partition}`));
    for (const p of after.filter((p) => TOPICS.includes(p.topic) && p.replicas[0] === 2)) {
      expect(p.leader === 2).toBe(elected.has(`${p.topic}-${p.partition}`));
    }
  });

  it("ElectLeaders reports done, not needed and not available per partition", async () => {
    const partitions = await readPartitions(cluster);
    const led = partitions.find((p) => TOPICS.includes(p.topic) && p.leader === p.replicas[0]) as {
      topic: string;
      partition: number;
    };
    const results = await kafka.electPreferred([
      { topic: led.topic, partition: led.partition },
      { topic: "no-such-topic", partition: 0 },
    ]);
    expect(results.find((r) => r.topic === led.topic)?.errorCode).toBe(84);
    expect(results.find((r) => r.topic === "no-such-topic")?.errorCode).toBe(3);
  });

  it("with the pacer unreachable, the agent elects nothing and leadership does not move", async () => {
    await bounce(1);
    expect(await ledBy(1)).toBe(0);
    const watcher = new LeadershipWatcher(cluster, TOPICS);
    // A port nothing listens on.
    const closed = await startPacerServe();
    await closed.stop();
    const agent = startAgent(
      cluster,
      { kind: "agent-serve", url: closed.url, clusterId: "e2e" },
      { args: ["--metrics-port", "0"] },
    );
    try {
      await waitFor(
        async () => (agent.runs().filter((r) => r.error).length >= 3 ? true : undefined),
        60_000,
        "3 failed runs",
      );
      // Its metrics say so too.
      const metricsUrl = /metrics on (http:\S+)/.exec(agent.output())?.[1] as string;
      const metrics = await (await fetch(metricsUrl)).text();
      expect(metrics).toMatch(/leadership_pacer_agent_runs_total\{outcome="failed"\} ([3-9]|\d\d)/);
    } finally {
      await agent.stop();
      await watcher.stop();
    }
    expect(agent.runs().every((r) => r.error !== undefined && r.elections.asked === 0)).toBe(true);
    expect(watcher.moves).toEqual([]);
    expect(await ledBy(1)).toBe(0);
    // --once reports the failure in its exit status, for cron.
    const once = await pacer([
      "agent",
      "--bootstrap-server",
      cluster.bootstrapServers,
      "--pacer-url",
      closed.url,
      "--cluster-id",
      "e2e",
      "--once",
    ]);
    expect(once.code).toBe(1);
    expect(once.stdout).toContain("run failed, nothing elected");
  });

  it("--dry-run prints the batch and elects nothing; --once then elects it", async () => {
    const dataDir = join(scratch, "dry");
    const args = [
      "agent",
      "--bootstrap-server",
      cluster.bootstrapServers,
      "--embedded",
      "--data-dir",
      dataDir,
      "--once",
    ];
    const before = await imbalanced();
    expect(before).toBeGreaterThanOrEqual(20);
    const dry = await pacer([...args, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`asked ${before} (dry run: nothing elected)`);
    expect(dry.stdout).toMatch(/would elect (orders|payments)-\d+ -> \d/);
    expect(await imbalanced()).toBe(before);
    const real = await pacer(args);
    expect(real.code).toBe(0);
    expect(real.stdout).toContain(`asked ${before}, done ${before}, not needed 0, failed 0`);
    expect(await imbalanced()).toBe(0);
  });

  it("--scheduled stores snapshots and carries out each of the service's tick decisions once", async () => {
    await bounce(3);
    expect(await ledBy(3)).toBe(0);
    const before = await imbalanced();
    const serve = await startPacerServe({ PACER_TICK_SECONDS: "2" });
    const agent = startAgent(
      cluster,
      { kind: "agent-serve", url: serve.url, clusterId: "e2e-scheduled" },
      {
        config: {
          "leader.imbalance.election.max.per.run": 4,
          "leader.imbalance.election.throttle.interval.ms": 1000,
        },
        args: ["--scheduled", "--snapshot-interval-ms", "500"],
      },
    );
    try {
      await waitFor(
        async () => ((await ledBy(3)) === 20 ? true : undefined),
        120_000,
        "broker 3 leading its 20",
      );
    } finally {
      await agent.stop();
      await serve.stop();
    }
    const runs = agent.runs().filter((r) => r.decisionId);
    const ids = runs.map((r) => r.decisionId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(runs.reduce((n, r) => n + r.elections.done, 0)).toBe(before);
    // Paced by the service's config: at most 4 per decision.
    for (const run of runs) expect(run.elections.asked).toBeLessThanOrEqual(4);
    expect(runs.filter((r) => r.elections.asked > 0).length).toBeGreaterThanOrEqual(Math.ceil(before / 4));
  });
});

describe("pacer wait, the check between two brokers of a rolling restart", () => {
  const wait = (broker: number, timeout: string) => startPacerWait(cluster, broker, timeout);
  /** Every partition whose preferred replica is `id`, in every topic. */
  const preferredBy = async (id: number) =>
    (await readPartitions(cluster))
      .filter((p) => p.replicas[0] === id)
      .map(({ topic, partition }) => ({ topic, partition }));

  it("exits 0 for a broker that is back, 1 at its timeout for a stopped one, 0 once a restarted one is in sync and leads", async () => {
    await kafka.electPreferred(await preferredBy(1));
    const back = wait(1, "30s");
    expect(await back.exited).toBe(0);
    expect(back.stdout()).toMatch(
      /^broker 1: unfenced, in sync (\d+) \/ \1, leading (\d+) \/ \2 .*: ready$/m,
    );

    await cluster.stopBroker(3, "SIGTERM");
    const down = wait(3, "3s");
    expect(await down.exited).toBe(1);
    // KRaft keeps a stopped broker registered and fenced.
    expect(down.stderr()).toMatch(
      /broker 3 is not ready after .*: fenced \(down, or not yet caught up with the metadata\); out of the ISR of (\d+) of its \1 partitions; leads 0 of its \d+ preferred partitions/,
    );

    // The operator's script: start it, then wait. Kafka hands it no leadership back by itself here
    // (the balancer checks every 300 s); the elections below stand in for the pacer's ramp.
    const restarted = wait(3, "120s");
    await cluster.startBroker(3);
    await waitFor(
      async () =>
        (await readPartitions(cluster)).every((p) => !p.replicas.includes(3) || p.isr.includes(3))
          ? true
          : undefined,
      60_000,
      "broker 3 back in every ISR",
    );
    await waitFor(
      async () => (/: ramping/.test(restarted.stdout()) ? true : undefined),
      10_000,
      "pacer wait seeing broker 3 in sync but not leading",
    );
    expect(restarted.stdout()).not.toMatch(/: ready$/m);
    await kafka.electPreferred(await preferredBy(3));
    expect(await restarted.exited).toBe(0);
    expect(restarted.stdout()).toMatch(/: ready$/m);
  });
});
