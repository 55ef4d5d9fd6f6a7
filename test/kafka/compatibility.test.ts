import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  RECOVERY_PACING,
  readPartitions,
  runRecovery,
  waitFor,
} from "../../devkit/kafka/recovery.ts";
import { describeWithKafkaTools } from "../../devkit/kafka/tools.ts";
import { releaseName, selectedReleases } from "../../devkit/kafka/versions.ts";
import { snapshotOf } from "../../functions/agent/snapshot.ts";
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";

/**
 * The agent's core on every Kafka release of the compatibility matrix (devkit/kafka/versions.ts), each
 * on a cluster of its own: its snapshot against Kafka's own tool, a broker that is down, ElectLeaders'
 * per-partition codes and a paced recovery. Each test leaves what it measured in its `meta.figures`,
 * from which `npm run compat:table` writes the README's table.
 */

const TOPICS = ["orders", "payments"];
const PARTITIONS_PER_TOPIC = 30;
const PREFERRED_PER_BROKER = 20;
const THRESHOLD_PERCENT = RECOVERY_PACING["leader.imbalance.election.wait.for.sync.threshold.percent"];
const PACING = {
  ...RECOVERY_PACING,
  "leader.imbalance.election.max.per.run": 5,
  "leader.imbalance.election.throttle.interval.ms": 1000,
  "leader.imbalance.check.interval.seconds": 2,
};
const MB = 1_000_000;

describe.each(selectedReleases().map((r) => [releaseName(r), r] as const))("%s", (_, release) => {
  let cluster: KafkaCluster;
  let kafka: KafkaAdminClient;
  /** Kafka 4.0 lists fenced brokers; before, a broker that is down is only missing from the list. */
  const listsFenced = Number(release.version.split(".")[0]) >= 4;

  const snapshot = async () =>
    snapshotOf({
      brokers: (await kafka.describeCluster()).brokers,
      partitions: (await kafka.describePartitions()).filter((p) => TOPICS.includes(p.topic)),
      reassigning: await kafka.listReassignments(),
    });

  const allInSync = async () =>
    (await readPartitions(cluster)).every((p) => !TOPICS.includes(p.topic) || p.isr.length === 3)
      ? true
      : undefined;

  beforeAll(async () => {
    const startedAt = Date.now();
    cluster = await KafkaCluster.start({ release, brokers: 3 });
    await createEvenTopics(cluster, TOPICS, PARTITIONS_PER_TOPIC);
    kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
    console.log(`${releaseName(release)}: cluster up in ${Date.now() - startedAt} ms`);
  });

  afterAll(async () => {
    await kafka?.close();
    await cluster?.close();
  });

  it("the snapshot equals kafka-topics --describe", async ({ task }) => {
    const ours = (await snapshot()).partitions.map(({ topic, partition, leader, replicas, isr }) => ({
      topic,
      partition,
      leader,
      replicas,
      isr,
    }));
    const theirs = (await describeWithKafkaTools(cluster)).filter((p) => TOPICS.includes(p.topic));
    const key = (p: { topic: string; partition: number }) => `${p.topic}/${p.partition}`;
    const sort = <T extends { topic: string; partition: number }>(list: T[]) =>
      [...list].sort((a, b) => key(a).localeCompare(key(b)));
    expect(theirs.length).toBe(TOPICS.length * PARTITIONS_PER_TOPIC);
    expect(sort(ours)).toEqual(sort(theirs));
    const reads = await kafka.readsWith();
    task.meta.figures = {
      partitions: ours.length,
      brokersReadWith: reads.brokers,
      partitionsReadWith: reads.partitions,
    };
  });

  it("a broker that is down is not active: fenced from 4.0, not listed before", async ({ task }) => {
    await cluster.stopBroker(3, "SIGTERM");
    try {
      const seen = await waitFor(
        async () => {
          const s = await snapshot();
          const three = s.brokers.find((b) => b.id === 3);
          const inactive = listsFenced ? three?.fenced === true : three === undefined;
          // Its partitions have moved their leadership to the others by then.
          return inactive && s.partitions.every((p) => p.leader !== 3) ? s : undefined;
        },
        60_000,
        "broker 3 seen as down",
      );
      expect(seen.brokers.filter((b) => !b.fenced).map((b) => b.id)).toEqual([1, 2]);
      // ElectLeaders on a partition whose preferred leader is down: 80, and nothing moves.
      const preferredOnThree = seen.partitions.find((p) => p.replicas[0] === 3) as {
        topic: string;
        partition: number;
      };
      const [result] = await kafka.electPreferred([preferredOnThree]);
      expect(result?.errorCode).toBe(80);
      task.meta.figures = {
        seenAs: listsFenced ? "fenced" : "not listed",
        electOntoIt: result?.errorCode ?? -1,
      };
    } finally {
      await cluster.startBroker(3);
    }
    await waitFor(allInSync, 60_000, "broker 3 back in every ISR");
  });

  it("ElectLeaders answers 0 done, 84 not needed, 3 unknown, per partition", async ({ task }) => {
    // Broker 3 came back without its leadership: one of its partitions can be elected.
    const partitions = await readPartitions(cluster);
    const mine = (p: { topic: string }) => TOPICS.includes(p.topic);
    const away = partitions.find((p) => mine(p) && p.replicas[0] === 3 && p.leader !== 3);
    const led = partitions.find((p) => mine(p) && p.leader === p.replicas[0]);
    expect(away).toBeDefined();
    expect(led).toBeDefined();
    const asked = [away, led, { topic: "no-such-topic", partition: 0 }].map((p) => ({
      topic: p?.topic as string,
      partition: p?.partition as number,
    }));
    const results = await kafka.electPreferred(asked);
    const codeOf = (i: number) =>
      results.find((r) => r.topic === asked[i]?.topic && r.partition === asked[i]?.partition)?.errorCode;
    expect([codeOf(0), codeOf(1), codeOf(2)]).toEqual([0, 84, 3]);
    // The controller has elected it; the broker read here learns of it a moment later.
    await waitFor(
      async () =>
        (await readPartitions(cluster)).some(
          (p) => p.topic === away?.topic && p.partition === away?.partition && p.leader === 3,
        )
          ? true
          : undefined,
      10_000,
      "the elected partition led by broker 3",
    );
    task.meta.figures = { codes: "0, 84, 3" };
    // Leadership balanced again for the recovery that follows.
    await kafka.electPreferred(partitions.filter((p) => mine(p) && p.leader !== p.replicas[0]));
  });

  it("the agent paces a recovery: nothing onto the broker while it is behind, then capped runs", async ({
    task,
  }) => {
    const result = await runRecovery({
      cluster,
      topics: TOPICS,
      partitionsPerTopic: PARTITIONS_PER_TOPIC,
      restart: [1],
      // Broker 1 holds two thirds of it: about 13 s of catch-up at 2 MB/s, several runs of the gate.
      produceBytes: 40 * MB,
      throttleBytesPerSecond: 2 * MB,
      pacer: { kind: "agent-embedded" },
      pacing: PACING,
    });
    const onto = result.moves.filter((m) => m.to === 1);
    const whileBehind = onto.filter((m) => m.outOfSync * 100 > THRESHOLD_PERCENT * m.preferred);
    const runs = result.runs.filter((r) => r.error === undefined);
    const gatedRuns = runs.filter((r) => r.heldBack.some((b) => b.id === 1 && b.reason === "over-threshold"));
    const cap = PACING["leader.imbalance.election.max.per.run"];
    expect(whileBehind).toEqual([]);
    expect(onto.length).toBe(PREFERRED_PER_BROKER);
    expect(gatedRuns.length, result.agentOutput.slice(-4000)).toBeGreaterThan(0);
    for (const run of runs) {
      expect(run.elections.asked).toBeLessThanOrEqual(cap);
      expect(run.elections.done + run.elections.notNeeded).toBe(run.elections.asked);
    }
    task.meta.figures = {
      movesOnto: onto.length,
      movesWhileBehind: whileBehind.length,
      gatedRuns: gatedRuns.length,
      electingRuns: runs.filter((r) => r.elections.asked > 0).length,
      recoverySeconds: Math.round(((result.recoveredAtMs[1] ?? 0) - result.restartedAtMs) / 100) / 10,
    };
  });
});
