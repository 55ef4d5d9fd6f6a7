import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  LeadershipWatcher,
  produceUneven,
  RECOVERY_PACING,
  readPartitions,
  setReplicationThrottle,
  startAgent,
  waitFor,
} from "../../devkit/kafka/recovery.ts";
import { collectOutput } from "../../devkit/processes.ts";

/**
 * The extension `leader.imbalance.election.internal.topics.last` on a real Kafka cluster (the newest
 * release) with a consumer group (Kafka's own console consumer) whose coordinator the recovering
 * broker prefers: the group's `__consumer_offsets` partition, like the broker's other internal ones,
 * moves back only after every data partition it prefers, and the group goes through at most one
 * rebalance while it does.
 */

const TOPICS = ["orders", "payments"];
const PARTITIONS_PER_TOPIC = 30;
const OFFSETS_PARTITIONS = 6;
const OFFSETS = "__consumer_offsets";
const MB = 1_000_000;

let cluster: KafkaCluster;

beforeAll(async () => {
  cluster = await KafkaCluster.start({
    brokers: 3,
    broker: {
      "offsets.topic.replication.factor": 3,
      "offsets.topic.num.partitions": OFFSETS_PARTITIONS,
    },
  });
  await createEvenTopics(cluster, TOPICS, PARTITIONS_PER_TOPIC);
});

afterAll(async () => {
  await cluster?.close();
});

/** The `__consumer_offsets` partition of a group, as Kafka picks it: abs(String.hashCode) % partitions. */
function offsetsPartitionOf(groupId: string): number {
  let hash = 0;
  for (const char of groupId) hash = (Math.imul(31, hash) + (char.codePointAt(0) as number)) | 0;
  return (hash & 0x7fffffff) % OFFSETS_PARTITIONS;
}

/** The consumer's own log of the group: each generation it synced in, at INFO. */
const CONSUMER_LOG = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_ERR
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %m%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.group.name = org.apache.kafka.clients.consumer.internals
logger.group.level = info
`;

/**
 * Kafka's own console consumer (the Java client, classic group protocol) in `groupId`, reading
 * `orders`: the records it printed (offsets only) and the generations it synced in, from its log.
 */
function startConsumer(groupId: string) {
  const child = cluster.spawnTool(
    "org.apache.kafka.tools.consumer.ConsoleConsumer",
    [
      "--bootstrap-server",
      cluster.bootstrapServers,
      "--topic",
      "orders",
      "--group",
      groupId,
      "--property",
      "print.value=false",
      "--property",
      "print.offset=true",
      "--consumer-property",
      "session.timeout.ms=10000",
    ],
    CONSUMER_LOG,
  );
  const output = collectOutput(child);
  return {
    /** When each generation was synced, in order. */
    generations: () =>
      [
        ...output
          .stderr()
          .matchAll(/Successfully synced group in generation Generation\{generationId=(\d+)/g),
      ].map((m) => Number(m[1])),
    received: () => (output.stdout().match(/Offset:\d+/g) ?? []).length,
    log: () => output.stderr().slice(-3000),
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await output.exited;
    },
  };
}

describe("internal topics last, on a real cluster with a consumer group", () => {
  it("the group coordinator's partition moves back after all of the broker's data partitions; the group rebalances at most once", async ({
    task,
  }) => {
    // The first group creates __consumer_offsets; then a group is picked whose coordinator broker 1 prefers.
    const probe = startConsumer("pacer-probe");
    await waitFor(
      async () => (probe.generations().length > 0 ? true : undefined),
      90_000,
      "the probe group joined",
    );
    await probe.close();
    const offsets = (await readPartitions(cluster)).filter((p) => p.topic === OFFSETS);
    expect(offsets.length).toBe(OFFSETS_PARTITIONS);
    const preferredByOne = new Set(offsets.filter((p) => p.replicas[0] === 1).map((p) => p.partition));
    expect(preferredByOne.size).toBeGreaterThan(0);
    const groupId = Array.from({ length: 100 }, (_, i) => `pacer-e2e-${i}`).find((g) =>
      preferredByOne.has(offsetsPartitionOf(g)),
    ) as string;
    const coordinatorPartition = offsetsPartitionOf(groupId);
    const consumer = startConsumer(groupId);
    await waitFor(
      async () => (consumer.generations().length > 0 ? true : undefined),
      90_000,
      "the group joined",
    );

    const watcher = new LeadershipWatcher(cluster, [...TOPICS, OFFSETS]);
    let agent: ReturnType<typeof startAgent> | undefined;
    try {
      await setReplicationThrottle(cluster, 2 * MB);
      await cluster.stopBroker(1, "SIGTERM");
      await produceUneven(cluster, TOPICS, PARTITIONS_PER_TOPIC, 60 * MB);
      agent = startAgent(
        cluster,
        { kind: "agent-embedded" },
        {
          config: {
            ...RECOVERY_PACING,
            "leader.imbalance.election.max.per.run": 5,
            "leader.imbalance.election.throttle.interval.ms": 1000,
            "leader.imbalance.check.interval.seconds": 2,
            "leader.imbalance.election.internal.topics.last": "true",
          },
        },
      );
      const generationsBeforeRestart = consumer.generations().length;
      await cluster.startBroker(1);
      const preferred = (await readPartitions(cluster)).filter((p) => p.replicas[0] === 1);
      await waitFor(
        async () => {
          const now = await readPartitions(cluster);
          return preferred.every((p) =>
            now.some((q) => q.topic === p.topic && q.partition === p.partition && q.leader === 1),
          )
            ? true
            : undefined;
        },
        240_000,
        "broker 1 leading all its preferred partitions",
      );
      await new Promise((r) => setTimeout(r, 1000));
      await agent.stop();

      const onto = watcher.moves.filter((m) => m.to === 1);
      const data = onto.filter((m) => m.topic !== OFFSETS);
      const internal = onto.filter((m) => m.topic === OFFSETS);
      expect(data.length).toBe(TOPICS.length * (PARTITIONS_PER_TOPIC / 3));
      expect(internal.map((m) => m.partition).sort()).toEqual([...preferredByOne].sort());
      const lastData = Math.max(...data.map((m) => m.atMs));
      expect(Math.min(...internal.map((m) => m.atMs))).toBeGreaterThan(lastData);
      expect(internal.some((m) => m.partition === coordinatorPartition)).toBe(true);
      // At most one rebalance from the broker's restart to the end: when the coordinator moved back.
      const rebalances = consumer.generations().length - generationsBeforeRestart;
      expect(rebalances, consumer.log()).toBeLessThanOrEqual(1);
      // It reads on after the recovery.
      await produceUneven(cluster, ["orders"], PARTITIONS_PER_TOPIC, 1 * MB);
      const atEnd = consumer.received();
      await waitFor(
        async () => (consumer.received() > atEnd ? true : undefined),
        30_000,
        "the group reading on",
      );
      task.meta.figures = { rebalances, coordinatorPartition, generations: consumer.generations().join(",") };
    } finally {
      await agent?.stop();
      await watcher.stop();
      await consumer.close();
      await setReplicationThrottle(cluster, 0);
    }
  });
});
