import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  produceUneven,
  RECOVERY_PACING,
  readPartitions,
  startAgent,
  waitFor,
} from "../../devkit/kafka/recovery.ts";
import { type KafkaRelease, NEWEST, releaseName, selectedReleases } from "../../devkit/kafka/versions.ts";
import { spawnPacer, startPacerServe } from "../../devkit/processes.ts";
import {
  CatchUpThrottler,
  FOLLOWER_RATE,
  FOLLOWER_REPLICAS,
  LEADER_RATE,
  LEADER_REPLICAS,
  THROTTLE_CONFIGS,
} from "../../functions/agent/catch-up-throttle.ts";
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";
import type { CatchUpThrottle } from "../../schemas/answer.ts";
import { EMPTY_RECORD, type ThrottleRecord } from "../../schemas/throttle-record.ts";

/**
 * Catch-up pacing on real Kafka, the newest release on both sides of the quota and the oldest (3.7,
 * ZooKeeper mode) on the default follower side: the agent sets Kafka's replication throttle for a
 * restarted broker while it is out of sync, read back with DescribeConfigs, and lifts it once it is in
 * sync, on SIGTERM, or on its next start after a `kill -9`; the operator's own throttles (one on the
 * other side that slows the catch-up, a rate on another broker, a replica list on one topic whose
 * entries overlap the pacer's) are the same after as before, values and sources.
 */

const TOPICS = ["orders", "payments"];
const PARTITIONS_PER_TOPIC = 30;
const MB = 1_000_000;
/** What the pacer holds the restarted broker's catch-up to. */
const CATCH_UP_RATE = 2 * MB;
const OPERATOR_RATE = "7777777";
/** The operator's throttle on the other side, which slows the catch-up enough to be seen. */
const SLOW = 2 * MB;
/** payments-0 is led by 2 and payments-1 by 3: on the leader side, entries the pacer would add too. */
const OPERATOR_LIST = "0:2,1:3";
const ALL_RATES = [FOLLOWER_RATE, LEADER_RATE];
const ALL_LISTS = [FOLLOWER_REPLICAS, LEADER_REPLICAS];

type Side = "leader" | "follower";
const oldest = selectedReleases().find((r) => r.version === "3.7.2" && r.mode === "zookeeper");
const CASES: [string, KafkaRelease, Side][] = [
  ...(selectedReleases().includes(NEWEST)
    ? ([
        [`${releaseName(NEWEST)}, leader side`, NEWEST, "leader"],
        [`${releaseName(NEWEST)}, follower side`, NEWEST, "follower"],
      ] as [string, KafkaRelease, Side][])
    : []),
  ...(oldest
    ? ([[`${releaseName(oldest)}, follower side`, oldest, "follower"]] as [string, KafkaRelease, Side][])
    : []),
];

describe.each(CASES)("%s", (_, release, side) => {
  const pacing = {
    ...RECOVERY_PACING,
    "leader.imbalance.check.interval.seconds": 2,
    "pacer.catch.up.replication.throttled.rate": CATCH_UP_RATE,
    "pacer.catch.up.replication.throttled.side": side,
  };
  const { rate: RATE, replicas: REPLICAS } = THROTTLE_CONFIGS[side];
  /** Where the operator's own rate is: a broker the pacer has no reason to throttle on this side. */
  const operatorBroker = side === "follower" ? 2 : 1;
  /**
   * The operator's throttle on the other side slows every catch-up here to 2 MB/s, so that there is
   * one to see on loopback: 60 MB behind take about 20 s (the quota is an average over 11 s, so the
   * first 22 MB pass at once). In ZooKeeper mode a restarted broker fetches before the agent first
   * sees it, from two leaders each passing their first 22 MB at once: it comes back further behind.
   */
  const other = THROTTLE_CONFIGS[side === "leader" ? "follower" : "leader"];
  const behindBytes = (release.mode === "zookeeper" ? 100 : 60) * MB;
  let cluster: KafkaCluster;
  let kafka: KafkaAdminClient;
  let scratch: string;
  let before: unknown;

  /** Every replication-throttle config of the cluster, with where its value comes from. */
  async function throttleConfigs() {
    const brokers: Record<number, unknown> = {};
    for (const id of cluster.brokerIds())
      brokers[id] = Object.fromEntries(await kafka.describeBrokerConfigs(id, ALL_RATES));
    const topics = await kafka.describeTopicConfigs(TOPICS, ALL_LISTS);
    return {
      brokers,
      topics: Object.fromEntries([...topics].map(([topic, values]) => [topic, Object.fromEntries(values)])),
    };
  }

  /**
   * The cluster's throttles are as they were before the test. Waited for: in ZooKeeper mode a broker
   * learns a config change from ZooKeeper a moment after the change was accepted.
   */
  async function expectAsBefore(): Promise<void> {
    await waitFor(
      async () => (JSON.stringify(await throttleConfigs()) === JSON.stringify(before) ? true : undefined),
      30_000,
    ).catch(() => undefined);
    expect(await throttleConfigs()).toEqual(before);
  }

  const allInSync = async () =>
    (await readPartitions(cluster)).every((p) => !TOPICS.includes(p.topic) || p.isr.length === 3)
      ? true
      : undefined;

  const outOfSyncOn1 = async () =>
    (await readPartitions(cluster)).filter((p) => TOPICS.includes(p.topic) && !p.isr.includes(1));

  /** The brokers holding a rate the pacer set on this side: broker 1 (follower), its leaders (leader). */
  const pacerRates = async () => {
    const held: number[] = [];
    for (const id of cluster.brokerIds()) {
      if (id === operatorBroker) continue;
      const rate = (await kafka.describeBrokerConfigs(id, [RATE])).get(RATE);
      if (rate?.source === "broker" && Number(rate.value) > 0 && Number(rate.value) <= CATCH_UP_RATE)
        held.push(id);
    }
    const expected = side === "follower" ? [1] : [2, 3];
    return held.length > 0 && held.every((id) => expected.includes(id)) ? held : undefined;
  };

  /** Broker 1 stopped, data produced while it is down, started again: it comes back behind. */
  async function restartBehind(): Promise<void> {
    await cluster.stopBroker(1, "SIGTERM");
    await produceUneven(cluster, TOPICS, PARTITIONS_PER_TOPIC, behindBytes);
    await cluster.startBroker(1);
  }

  /** Waits for `probe`, saying what the agent printed if it never comes. */
  const waitWithAgent = <T>(agent: { output(): string }, probe: () => Promise<T | undefined>, what: string) =>
    waitFor(probe, 60_000, what).catch((error: Error) => {
      // The runs that had something to say: a broker with partitions to take back, or a throttle.
      const telling = agent
        .output()
        .split("\n")
        .filter((line) => !line.includes('"shares":{}') || !line.includes('"changes":[],"errors":[]'));
      throw new Error(`${error.message}\nagent output:\n${telling.join("\n").slice(-6000)}`);
    });

  const configFile = (overrides: Record<string, string | number> = {}) => {
    const file = join(scratch, "pacing.properties");
    writeFileSync(
      file,
      Object.entries({ ...pacing, ...overrides })
        .map(([k, v]) => `${k}=${v}`)
        .join("\n"),
    );
    return file;
  };

  /**
   * `pacer agent --once` on this suite's pacing (with `overrides`), its own data directory; embedded
   * unless `extra` names a service.
   */
  const agentOnce = (dataDir: string, extra: string[] = [], overrides: Record<string, string> = {}) =>
    spawnPacer([
      "agent",
      "--bootstrap-server",
      cluster.bootstrapServers,
      ...(extra.includes("--pacer-url") ? [] : ["--embedded"]),
      "--data-dir",
      dataDir,
      "--config",
      configFile(overrides),
      "--once",
      ...extra,
    ]);

  beforeAll(async () => {
    cluster = await KafkaCluster.start({ release, brokers: 3 });
    await createEvenTopics(cluster, TOPICS, PARTITIONS_PER_TOPIC, 60_000, "none");
    kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
    // The operator's slowing throttle, on the other side: every replica, every broker.
    for (const id of cluster.brokerIds())
      await kafka.alterConfigs(
        [
          {
            resource: { type: "broker", name: String(id) },
            configs: [{ name: other.rate, op: "set", value: String(SLOW) }],
          },
        ],
        id,
      );
    await kafka.alterConfigs(
      TOPICS.map((topic) => ({
        resource: { type: "topic", name: topic },
        configs: [{ name: other.replicas, op: "set", value: "*" }],
      })),
    );
    // The operator's own on this side: a rate on a broker, a replica list on one topic.
    await kafka.alterConfigs(
      [
        {
          resource: { type: "broker", name: String(operatorBroker) },
          configs: [{ name: RATE, op: "set", value: OPERATOR_RATE }],
        },
      ],
      operatorBroker,
    );
    await kafka.alterConfigs([
      {
        resource: { type: "topic", name: "payments" },
        configs: [{ name: REPLICAS, op: "set", value: OPERATOR_LIST }],
      },
    ]);
    before = await waitFor(
      async () => {
        const configs = await throttleConfigs();
        const payments = (configs.topics.payments as Record<string, { value: string }>)[REPLICAS];
        const rate = (configs.brokers[operatorBroker] as Record<string, { value: string }>)[RATE];
        // Each broker applies a config change on its own, a moment after the request: all of them, here.
        const slow = cluster
          .brokerIds()
          .every(
            (id) =>
              (configs.brokers[id] as Record<string, { value: string }>)[other.rate]?.value === String(SLOW),
          );
        const lists = TOPICS.every(
          (topic) =>
            (configs.topics[topic] as Record<string, { value: string }>)[other.replicas]?.value === "*",
        );
        return payments?.value === OPERATOR_LIST && rate?.value === OPERATOR_RATE && slow && lists
          ? configs
          : undefined;
      },
      30_000,
      "the operator's throttles in place",
    );
    scratch = mkdtempSync(join(tmpdir(), "pacer-catch-up-"));
  });

  afterAll(async () => {
    await kafka?.close();
    await cluster?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("sets the throttle while the restarted broker is out of sync, and lifts it once in sync", async () => {
    const agent = startAgent(
      cluster,
      { kind: "agent-embedded" },
      { config: pacing, dataDir: join(scratch, "recovery") },
    );
    try {
      await restartBehind();
      // The agent sets the rates, then the lists: both seen, while broker 1 is still behind. The lists
      // are read first: a replica still behind after them was behind when they were read.
      const entries = (lists: Map<string, Map<string, { value: string | null }>>, topic: string) =>
        (lists.get(topic)?.get(REPLICAS)?.value ?? "").split(",").filter(Boolean);
      const seen = await waitWithAgent(
        agent,
        async () => {
          if (!(await pacerRates())) return undefined;
          const lists = await kafka.describeTopicConfigs(TOPICS, [REPLICAS]);
          const ours = [...entries(lists, "orders"), ...entries(lists, "payments").slice(2)];
          const behind = await outOfSyncOn1();
          return ours.length > 0 && behind.length > 0 ? { lists, ours } : undefined;
        },
        "the pacer's throttle set while broker 1 is behind",
      );
      // partition:broker entries naming broker 1 (follower side) or the partition's leader (leader
      // side). The operator's stay first.
      const named = side === "follower" ? /^\d+:1$/ : /^\d+:[23]$/;
      for (const entry of seen.ours) expect(entry).toMatch(named);
      expect(entries(seen.lists, "payments").slice(0, 2).join(",")).toBe(OPERATOR_LIST);

      await waitFor(allInSync, 180_000, "broker 1 back in every ISR");
      await expectAsBefore();
    } finally {
      await agent.stop();
    }
    const runs = agent.runs() as { catchUp?: { throttled: { broker: number }[]; lifted: number[] } }[];
    expect(runs.some((r) => r.catchUp?.throttled.some((t) => t.broker === 1))).toBe(true);
    expect(runs.some((r) => r.catchUp?.lifted.includes(1))).toBe(true);
  });

  it("--dry-run says what it would set and sets nothing; SIGTERM lifts the throttle before the agent exits", async () => {
    await restartBehind();
    await waitFor(
      async () => ((await outOfSyncOn1()).length > 0 ? true : undefined),
      60_000,
      "broker 1 behind",
    );
    const dry = agentOnce(join(scratch, "dry"), ["--dry-run"]);
    expect(await dry.exited, dry.stderr()).toBe(0);
    expect(dry.stdout()).toMatch(
      side === "follower"
        ? /would change broker 1: set follower\.replication\.throttled\.rate=2000000/
        : /would change broker [23]: set leader\.replication\.throttled\.rate=\d+/,
    );
    expect(await throttleConfigs()).toEqual(before);

    const agent = startAgent(
      cluster,
      { kind: "agent-embedded" },
      { config: pacing, dataDir: join(scratch, "sigterm") },
    );
    await waitWithAgent(agent, pacerRates, "the pacer's throttle set");
    await agent.stop();
    expect(agent.output()).toMatch(/stopping: catch-up throttle lifted \(broker 1\)/);
    await expectAsBefore();
    await waitFor(allInSync, 120_000, "broker 1 back in every ISR");
  });

  /**
   * Where the record lives: the embedded store under the data directory, or the service's store in
   * managed runs (the newest release's follower side), where the next agent starts with another data
   * directory, as on a replaced host.
   */
  const managed = side === "follower" && release === NEWEST;
  it(`after a kill -9 while the throttle is set, its next start lifts it within one run (${managed ? "managed, on another host" : "embedded"})`, async () => {
    const serve = managed ? await startPacerServe() : undefined;
    const dataDir = join(scratch, "killed");
    const target = serve
      ? ({ kind: "agent-serve", url: serve.url, clusterId: "killed" } as const)
      : ({ kind: "agent-embedded" } as const);
    try {
      const agent = startAgent(cluster, target, { config: pacing, dataDir });
      try {
        await restartBehind();
        await waitWithAgent(agent, pacerRates, "the pacer's throttle set");
        agent.child.kill("SIGKILL");
        await agent.exited;
      } finally {
        await agent.stop();
      }
      // Nobody lifted it: the catch-up finishes under it.
      expect(await pacerRates()).toBeDefined();
      await waitFor(allInSync, 180_000, "broker 1 back in every ISR");
      expect(await pacerRates()).toBeDefined();

      const restarted = serve
        ? agentOnce(join(scratch, "another-host"), ["--pacer-url", serve.url, "--cluster-id", "killed"])
        : agentOnce(dataDir);
      expect(await restarted.exited, restarted.stderr()).toBe(0);
      expect(restarted.stdout()).toMatch(/catch-up throttle lifted: broker 1/);
      await expectAsBefore();
    } finally {
      await serve?.stop();
    }
  });

  it.runIf(side === "leader" && release === NEWEST)(
    "leaves a broker alone whose rate on that side is an operator's, and lists none of its replicas",
    async () => {
      // Asked for the follower side, where broker 1's rate is the operator's (the slowing one here).
      await restartBehind();
      await waitFor(
        async () => ((await outOfSyncOn1()).length > 0 ? true : undefined),
        60_000,
        "broker 1 behind",
      );
      const run = agentOnce(join(scratch, "left-alone"), [], {
        "pacer.catch.up.replication.throttled.side": "follower",
      });
      expect(await run.exited, run.stderr()).toBe(0);
      expect(run.stdout()).toMatch(
        /broker 1: its own follower\.replication\.throttled\.rate \(2000000 B\/s, broker\) left as it is/,
      );
      expect(await throttleConfigs()).toEqual(before);
      await waitFor(allInSync, 180_000, "broker 1 back in every ISR");
    },
  );

  it.runIf(side === "follower")(
    "moves a throttle from one broker to another in one run: each list loses one's entries and gains the other's",
    async () => {
      let stored: ThrottleRecord = structuredClone(EMPTY_RECORD);
      const throttler = new CatchUpThrottler(kafka, {
        load: async () => structuredClone(stored),
        save: async (record) => {
          stored = structuredClone(record);
        },
      });
      const partitions = [2, 3, 4];
      const throttle = (broker: number): CatchUpThrottle => ({
        broker,
        rateBytesPerSecond: CATCH_UP_RATE,
        outOfSync: partitions.length * TOPICS.length,
        replicas: TOPICS.map((topic) => ({ topic, partitions })),
        side: "follower",
        leaders: [],
      });
      const listed = async () => {
        const lists = await kafka.describeTopicConfigs(TOPICS, [REPLICAS]);
        return TOPICS.map((topic) => lists.get(topic)?.get(REPLICAS)?.value ?? "");
      };
      // Broker 2 holds the operator's rate: broker 1 and then broker 3 are the pacer's to throttle.
      const first = await throttler.apply([throttle(1)], false);
      expect(first.errors).toEqual([]);
      const moved = await throttler.apply([throttle(3)], false);
      expect(moved.errors).toEqual([]);
      expect(moved.lifted).toEqual([1]);
      expect(await listed()).toEqual([
        "2:3,3:3,4:3",
        // payments holds the operator's entries first, as before.
        `${OPERATOR_LIST},2:3,3:3,4:3`,
      ]);
      // A broker learns its own config change a moment after it was accepted in ZooKeeper mode.
      await waitFor(
        async () =>
          (await kafka.describeBrokerConfigs(3, [RATE])).get(RATE)?.value === String(CATCH_UP_RATE)
            ? true
            : undefined,
        30_000,
        "broker 3's rate set",
      );
      const lifted = await throttler.liftAll();
      expect(lifted.errors).toEqual([]);
      await expectAsBefore();
    },
  );
});
