import { Consumer } from "@platformatic/kafka";
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

/**
 * The extension `leader.imbalance.election.internal.topics.last` on a real Kafka cluster (the newest
 * release) with a consumer group whose coordinator lives on the recovering broker: the group's
 * `__consumer_offsets` partition, like the broker's other internal ones, moves back only after every
 * data partition it prefers, and the group goes through at most one rebalance while it does.
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

/** A consumer in `groupId` reading `orders`, counting the times it joins the group. */
async function startConsumer(groupId: string) {
  const consumer = new Consumer({
    groupId,
    clientId: "pacer-test-consumer",
    bootstrapBrokers: cluster.bootstrapServers.split(","),
  });
  const joins: number[] = [];
  consumer.on("consumer:group:join", () => joins.push(Date.now()));
  let received = 0;
  const stream = await consumer.consume({
    topics: ["orders"],
    mode: "latest",
    sessionTimeout: 10_000,
    heartbeatInterval: 500,
  });
  stream.on("data", () => {
    received++;
  });
  stream.on("error", () => undefined);
  return {
    joins,
    received: () => received,
    async close() {
      await stream.close().catch(() => undefined);
      await new Promise<void>((resolve) => consumer.close(true, () => resolve()));
    },
  };
}

describe("internal topics last, on a real cluster with a consumer group", () => {
  it("the group coordinator's partition moves back after all of the broker's data partitions; the group rebalances at most once", async () => {
    // The first group creates __consumer_offsets; then a group is picked whose coordinator broker 1 prefers.
    const probe = await startConsumer("pacer-probe");
    await waitFor(async () => (probe.joins.length > 0 ? true : undefined), 60_000, "the probe group joined");
    await probe.close();
    const offsets = (await readPartitions(cluster)).filter((p) => p.topic === OFFSETS);
    expect(offsets.length).toBe(OFFSETS_PARTITIONS);
    const preferredByOne = new Set(offsets.filter((p) => p.replicas[0] === 1).map((p) => p.partition));
    expect(preferredByOne.size).toBeGreaterThan(0);
    const groupId = Array.from({ length: 100 }, (_, i) => `pacer-e2e-${i}`).find((g) =>
      preferredByOne.has(offsetsPartitionOf(g)),
    ) as string;
    const coordinatorPartition = offsetsPartitionOf(groupId);
    const consumer = await startConsumer(groupId);
    await waitFor(async () => (consumer.joins.length > 0 ? true : undefined), 60_000, "the group joined");

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
      const joinsBeforeRestart = consumer.joins.length;
      const receivedAtRestart = consumer.received();
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
      expect(consumer.joins.length - joinsBeforeRestart).toBeLessThanOrEqual(1);
      // And it went on reading through the recovery.
      expect(consumer.received()).toBeGreaterThan(receivedAtRestart);
    } finally {
      await agent?.stop();
      await watcher.stop();
      await consumer.close();
      await setReplicationThrottle(cluster, 0);
    }
  });
});
