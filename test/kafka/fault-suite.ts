import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Admin } from "@platformatic/kafka";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import {
  type AgentRunLine,
  createEvenTopics,
  describeError,
  evenReplicas,
  type LeadershipMove,
  LeadershipWatcher,
  largestBurst,
  produceUneven,
  startAgent,
  waitFor,
} from "../../devkit/kafka/recovery.ts";
import { freePort, spawnPacer, waitUntilListening } from "../../devkit/processes.ts";
import {
  FOLLOWER_RATE,
  FOLLOWER_REPLICAS,
  LEADER_RATE,
  LEADER_REPLICAS,
} from "../../functions/agent/catch-up-throttle.ts";
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";

/**
 * Faults in the middle of a recovery, on Apache Kafka 4.4.0 in KRaft mode with a quorum of three
 * controllers and four brokers: broker 1 is stopped, data produced while it is down, and restarted
 * with the agent pacing it (and pacing its catch-up); once the ramp has begun (the first move onto
 * broker 1, seen by an independent watcher), the fault is injected. For each: no move onto a broker
 * while more than the threshold of its preferred partitions are out of its ISR, no run over the cap,
 * capped runs spaced as configured (and never more than a cap's worth of moves within an interval,
 * as Kafka saw them), the agent never exits unless told to, every broker leads its preferred
 * partitions again at the end, and no throttle of the pacer's is left. `afterAll` writes the table
 * (report/faults/table.md) the README shows.
 */

const TOPICS = ["orders", "payments"];
const PARTITIONS_PER_TOPIC = 40;
const BROKERS = 4;
const THRESHOLD_PERCENT = 5;
const CAP = 4;
const INTERVAL_MS = 2000;
const MB = 1_000_000;
/** The operator's leader-side throttle that slows every catch-up here, so that there is a ramp to hit. */
const SLOW = 3 * MB;
const PACING = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": THRESHOLD_PERCENT,
  "leader.imbalance.election.max.per.run": CAP,
  "leader.imbalance.election.throttle.interval.ms": INTERVAL_MS,
  "leader.imbalance.check.interval.seconds": 1,
  "pacer.catch.up.replication.throttled.rate": 2 * MB,
  "pacer.catch.up.replication.throttled.side": "follower",
};

interface FaultOutcome {
  fault: string;
  movesWhileBehind: number;
  runsOverCap: number;
  agentExits: number;
  recoverySeconds: number;
  said: string;
}
const outcomes: FaultOutcome[] = [];

let cluster: KafkaCluster;
let kafka: KafkaAdminClient;
let scratch: string;

beforeAll(async () => {
  cluster = await KafkaCluster.start({ brokers: BROKERS, controllers: 3 });
  await createEvenTopics(cluster, TOPICS, PARTITIONS_PER_TOPIC, 60_000, "none");
  kafka = new KafkaAdminClient({ bootstrapServers: cluster.bootstrapServers.split(",") });
  // The operator's throttle on the leaders, every replica: it slows each catch-up to ~3 MB/s, and
  // leaves the follower side (catch-up pacing's) free.
  for (const id of cluster.brokerIds())
    await kafka.alterConfigs(
      [
        {
          resource: { type: "broker", name: String(id) },
          configs: [{ name: LEADER_RATE, op: "set", value: String(SLOW) }],
        },
      ],
      id,
    );
  await kafka.alterConfigs(
    TOPICS.map((topic) => ({
      resource: { type: "topic", name: topic },
      configs: [{ name: LEADER_REPLICAS, op: "set", value: "*" }],
    })),
  );
  scratch = mkdtempSync(join(tmpdir(), "pacer-faults-"));
});

afterAll(async () => {
  if (outcomes.length > 0) {
    const dir = join(process.cwd(), "report", "faults");
    mkdirSync(dir, { recursive: true });
    const rows = outcomes.map(
      (o) =>
        `| ${o.fault} | ${o.movesWhileBehind} | ${o.runsOverCap} | ${o.agentExits} | ${o.recoverySeconds} s | ${o.said} |`,
    );
    const table = [
      "| fault | moves onto a broker behind | runs over the cap | agent exits | full recovery | what the agent said |",
      "| --- | --- | --- | --- | --- | --- |",
      ...rows,
    ].join("\n");
    writeFileSync(join(dir, "table.md"), `${table}\n`);
    console.log(`\n${table}\n`);
  }
  await kafka?.close();
  await cluster?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/**
 * Before each fault, the cluster as the suite started it, whatever the last one left: every broker
 * running, every preferred leader leading (elected here, by the test), none of the pacer's throttles.
 * A fault that fails says so in its own test and does not fail the ones after it.
 */
beforeEach(async () => {
  const running = new Set(cluster.runningBrokers().map((b) => b.id));
  for (const id of cluster.brokerIds()) if (!running.has(id)) await cluster.startBroker(id);
  await waitFor(
    async () => {
      const partitions = await kafka.describePartitions();
      if (!partitions.every((p) => p.isr.length === p.replicas.length)) return undefined;
      const off = partitions.filter((p) => p.leader !== p.replicas[0]);
      if (off.length > 0) await kafka.electPreferred(off);
      return off.length === 0 ? true : undefined;
    },
    240_000,
    "the cluster back in balance before the next fault",
  );
  for (const id of cluster.brokerIds()) {
    if ((await kafka.describeBrokerConfigs(id, [FOLLOWER_RATE])).get(FOLLOWER_RATE)?.source === "broker")
      await kafka.alterConfigs(
        [
          {
            resource: { type: "broker", name: String(id) },
            configs: [{ name: FOLLOWER_RATE, op: "delete" }],
          },
        ],
        id,
      );
  }
});

/** When each broker was down, so that a failover move (leadership leaving a broker that died) is told apart. */
class Downtime {
  private readonly spans: { broker: number; fromMs: number; toMs: number }[] = [];
  private readonly open = new Map<number, number>();
  down(broker: number) {
    this.open.set(broker, Date.now());
  }
  up(broker: number) {
    this.spans.push({ broker, fromMs: this.open.get(broker) ?? 0, toMs: Date.now() });
    this.open.delete(broker);
  }
  /** A move that left a broker which was down then (or had just come back and was not yet seen). */
  isFailover(move: LeadershipMove): boolean {
    const was = (b: number, atMs: number) =>
      (this.open.has(b) && atMs >= (this.open.get(b) as number)) ||
      this.spans.some((s) => s.broker === b && atMs >= s.fromMs && atMs <= s.toMs + 2000);
    return was(move.from, move.atMs) || move.from === -1;
  }
}

interface Ramp {
  watcher: LeadershipWatcher;
  downtime: Downtime;
  /** The agent processes, in order: a fault may kill one and start the next. */
  agents: ReturnType<typeof startAgent>[];
  dataDir: string;
  startAgent(): ReturnType<typeof startAgent>;
}

interface FaultResult {
  moves: LeadershipMove[];
  runs: AgentRunLine[];
  output: string;
  unexpectedExits: number;
  recoveredMs: number;
}

const brokerBehind = async (
  downtime: Downtime,
  id: number,
  produceMb: number,
  signal: "SIGTERM" | "SIGKILL",
) => {
  downtime.down(id);
  await cluster.stopBroker(id, signal);
  // After a crash its partitions keep it as leader until the controller fences it (the broker's
  // session timeout): produce once they have moved, as a client gets through only then.
  await waitFor(
    async () => ((await kafka.describePartitions()).every((p) => p.leader !== id) ? true : undefined),
    60_000,
    `leadership off broker ${id}`,
  );
  await produceUneven(cluster, TOPICS, PARTITIONS_PER_TOPIC, produceMb * MB).catch((error) => {
    throw new Error(`producing while broker ${id} is down: ${describeError(error)}`);
  });
};
const brokerBack = async (downtime: Downtime, id: number) => {
  await cluster.startBroker(id);
  downtime.up(id);
};

/** Every broker leads every one of its preferred partitions. */
async function balanced(): Promise<boolean> {
  const partitions = (await kafka.describePartitions()).filter(
    (p) => TOPICS.includes(p.topic) || p.topic === "late",
  );
  return partitions.every((p) => p.leader === p.replicas[0] && p.isr.length === p.replicas.length);
}

/**
 * Broker 1 stopped, 60 MB produced, restarted under the agent; `fault` once the ramp has begun; then
 * until every broker leads all its preferred partitions again. The agent is stopped with SIGTERM.
 */
async function recoveryWithFault(
  fault: (ramp: Ramp) => Promise<void>,
  target: () =>
    | { kind: "agent-embedded" }
    | { kind: "agent-serve"; url: string; clusterId: string } = () => ({
    kind: "agent-embedded",
  }),
): Promise<FaultResult> {
  const downtime = new Downtime();
  await brokerBehind(downtime, 1, 60, "SIGTERM");
  const watcher = new LeadershipWatcher(cluster, [...TOPICS, "late"]);
  // One data directory for every embedded agent of the suite, as one agent's for its cluster: what a
  // fault leaves in its store (a throttle to lift, the gate's state) is the next agent's to find.
  const dataDir = join(scratch, "agent-data");
  const ramp: Ramp = {
    watcher,
    downtime,
    agents: [],
    dataDir,
    startAgent() {
      const agent = startAgent(cluster, target(), { config: PACING, dataDir });
      ramp.agents.push(agent);
      return agent;
    },
  };
  ramp.startAgent();
  const startedAtMs = Date.now();
  try {
    await brokerBack(downtime, 1);
    await waitFor(
      async () => (watcher.moves.some((m) => m.to === 1 && !downtime.isFailover(m)) ? true : undefined),
      180_000,
      "the ramp onto broker 1 to begin",
    );
    await fault(ramp);
    await waitFor(
      async () => ((await balanced()) ? true : undefined),
      300_000,
      "every broker leading its preferred partitions",
    );
    const recoveredMs = Date.now() - startedAtMs;
    // A few more polls, so that a late move is still seen.
    await new Promise((r) => setTimeout(r, 1500));
    const last = ramp.agents.at(-1) as ReturnType<typeof startAgent>;
    const unexpectedExits =
      ramp.agents.filter((a) => a !== last && a.child.signalCode !== "SIGKILL" && a.child.exitCode !== null)
        .length + (last.child.exitCode !== null || last.child.signalCode !== null ? 1 : 0);
    await last.stop();
    return {
      moves: watcher.moves,
      runs: ramp.agents.flatMap((a) => a.runs()),
      output: ramp.agents.map((a) => a.output()).join("\n"),
      unexpectedExits,
      recoveredMs,
    };
  } finally {
    for (const agent of ramp.agents) await agent.stop();
    await watcher.stop();
  }
}

/** The checks every fault is held to; returns what the table shows. */
async function expectSafe(name: string, result: FaultResult, downtime: Downtime | undefined, quiet: string) {
  const said = saidOf(result, quiet);
  const paced = result.moves.filter((m) => !downtime?.isFailover(m));
  const behind = paced.filter((m) => m.outOfSync * 100 > THRESHOLD_PERCENT * m.preferred);
  const electing = result.runs.filter((r) => r.error === undefined && r.elections.asked > 0);
  const overCap = electing.filter((r) => r.elections.asked > CAP);
  outcomes.push({
    fault: name,
    movesWhileBehind: behind.length,
    runsOverCap: overCap.length,
    agentExits: result.unexpectedExits,
    recoverySeconds: Math.round(result.recoveredMs / 1000),
    said,
  });
  expect(behind, "moves onto a broker while over the threshold").toEqual([]);
  expect(overCap).toEqual([]);
  expect(result.unexpectedExits).toBe(0);
  // Capped runs at least the interval apart, across agent processes too.
  const capped = electing.filter((r) => r.elections.asked === CAP).sort((a, b) => a.atMs - b.atMs);
  for (let i = 1; i < capped.length; i++)
    expect((capped[i] as AgentRunLine).atMs - (capped[i - 1] as AgentRunLine).atMs).toBeGreaterThanOrEqual(
      INTERVAL_MS,
    );
  // As Kafka saw it: never more than a cap's worth of moves onto a broker within an interval (less the
  // watcher's 250 ms between polls, and a margin).
  for (const id of cluster.brokerIds())
    expect(largestBurst(paced, INTERVAL_MS - 300, id)).toBeLessThanOrEqual(CAP);
  // Nothing of the pacer's left on the follower side, the operator's leader side untouched.
  await waitFor(
    async () => {
      for (const id of cluster.brokerIds()) {
        const rates = await kafka.describeBrokerConfigs(id, [FOLLOWER_RATE, LEADER_RATE]);
        if (rates.get(FOLLOWER_RATE)?.source === "broker") return undefined;
        if (rates.get(LEADER_RATE)?.value !== String(SLOW))
          throw new Error(`broker ${id}'s leader rate changed`);
      }
      const lists = await kafka.describeTopicConfigs(TOPICS, [FOLLOWER_REPLICAS]);
      return TOPICS.every((t) => !lists.get(t)?.get(FOLLOWER_REPLICAS)?.value) ? true : undefined;
    },
    30_000,
    `no catch-up throttle left behind after "${name}"`,
  );
}

/**
 * What the agent's runs said of the fault, for the table: the distinct reasons a run elected nothing,
 * the Kafka error codes its elections met, and what catch-up pacing could not do; else `quiet`.
 */
function saidOf(result: FaultResult, quiet: string): string {
  const errors = new Map<string, number>();
  const codes = new Map<string, number>();
  for (const run of result.runs as (AgentRunLine & { catchUp?: { errors: string[] } })[]) {
    if (run.error) {
      const key = run.error.replace(/\d+(\.\d+)* ?ms/g, "…").slice(0, 90);
      errors.set(key, (errors.get(key) ?? 0) + 1);
    }
    for (const [code, n] of Object.entries(run.elections.failed)) codes.set(code, (codes.get(code) ?? 0) + n);
    for (const error of run.catchUp?.errors ?? []) {
      const key = `catch-up: ${error.slice(0, 80)}`;
      errors.set(key, (errors.get(key) ?? 0) + 1);
    }
  }
  const parts = [
    ...[...errors].map(([e, n]) => `${n} run${n === 1 ? "" : "s"}: "${e}"`),
    ...[...codes].map(([code, n]) => `${n} election${n === 1 ? "" : "s"} answered Kafka error ${code}`),
  ];
  return parts.length > 0 ? parts.slice(0, 3).join("; ") : quiet;
}

describe("faults during a recovery on Apache Kafka 4.4.0 (three controllers, four brokers)", () => {
  it("the active controller killed mid-ramp: a new one is elected and the ramp goes on, paced", async () => {
    let killed = -1;
    let downtime: Downtime | undefined;
    const result = await recoveryWithFault(async (ramp) => {
      downtime = ramp.downtime;
      killed = await cluster.activeController();
      await cluster.stopController(killed, "SIGKILL");
      const next = await waitFor(
        async () => {
          const id = await cluster.activeController();
          return id !== killed ? id : undefined;
        },
        60_000,
        "a new active controller",
      );
      expect(next).not.toBe(killed);
    });
    cluster.startController(killed);
    await expectSafe(
      "the active controller killed (SIGKILL)",
      result,
      downtime,
      "nothing: every run went through",
    );
  });

  it("the recovering broker killed again mid-ramp: the gate closes again and hysteresis starts over", async () => {
    let downtime: Downtime | undefined;
    let againAtMs = 0;
    const result = await recoveryWithFault(async (ramp) => {
      downtime = ramp.downtime;
      await brokerBehind(ramp.downtime, 1, 60, "SIGKILL");
      againAtMs = Date.now();
      await brokerBack(ramp.downtime, 1);
    });
    // After its second start: held back while behind, then a hysteresis run, before any election onto it.
    const after = result.runs.filter((r) => r.atMs > againAtMs).sort((a, b) => a.atMs - b.atMs);
    const seen = after
      .map((r) => `${r.heldBack.find((b) => b.id === 1)?.reason ?? "-"}/${r.shares["1"]?.elected ?? 0}`)
      .join(" ");
    const firstElecting = after.findIndex((r) => (r.shares["1"]?.elected ?? 0) > 0);
    expect(firstElecting, seen).toBeGreaterThan(0);
    const before = after.slice(0, firstElecting);
    expect(
      before.some((r) => r.heldBack.some((b) => b.id === 1 && b.reason === "over-threshold")),
      seen,
    ).toBe(true);
    expect(
      before.some((r) => r.heldBack.some((b) => b.id === 1 && b.reason === "hysteresis")),
      seen,
    ).toBe(true);
    await expectSafe(
      "the recovering broker killed again (SIGKILL) and restarted",
      result,
      downtime,
      "held back again, nothing failed",
    );
  });

  it("a second broker stopped while the first is ramping: each gated on its own, both led again", async () => {
    let downtime: Downtime | undefined;
    const result = await recoveryWithFault(async (ramp) => {
      downtime = ramp.downtime;
      await brokerBehind(ramp.downtime, 2, 30, "SIGTERM");
      await brokerBack(ramp.downtime, 2);
    });
    expect(result.runs.some((r) => r.heldBack.some((b) => b.id === 2 && b.reason === "over-threshold"))).toBe(
      true,
    );
    await expectSafe(
      "a second broker stopped and restarted during the ramp",
      result,
      downtime,
      "each broker held back on its own",
    );
  });

  it("the agent kill -9ed again and again during the ramp: no batch twice, the spacing kept", async () => {
    let downtime: Downtime | undefined;
    const result = await recoveryWithFault(async (ramp) => {
      downtime = ramp.downtime;
      // Killed at odd moments for five intervals: some kills land between an ElectLeaders request
      // and its answer, where the run is saved and the elections sent, not yet answered.
      const until = Date.now() + 5 * INTERVAL_MS;
      while (Date.now() < until) {
        await new Promise((r) => setTimeout(r, 700 + Math.random() * 900));
        const agent = ramp.agents.at(-1) as ReturnType<typeof startAgent>;
        agent.child.kill("SIGKILL");
        await agent.exited;
        ramp.startAgent();
      }
    });
    await expectSafe(
      "the agent kill -9ed every 0.7–1.6 s during the ramp",
      result,
      downtime,
      "each start went on from the saved state",
    );
  });

  it("topics created, deleted and given more partitions during the ramp", async () => {
    let downtime: Downtime | undefined;
    const admin = new Admin({
      clientId: "pacer-faults",
      bootstrapBrokers: cluster.bootstrapServers.split(","),
    });
    try {
      await admin.createTopics({
        topics: ["doomed"],
        assignments: Array.from({ length: 8 }, (_, partition) => ({
          partition,
          brokers: evenReplicas(cluster.brokerIds(), 2, partition),
        })),
      });
      const result = await recoveryWithFault(async (ramp) => {
        downtime = ramp.downtime;
        await admin.createTopics({
          topics: ["late"],
          assignments: Array.from({ length: 8 }, (_, partition) => ({
            partition,
            brokers: evenReplicas(cluster.brokerIds(), 3, partition),
          })),
        });
        await admin.deleteTopics({ topics: ["doomed"] });
        await admin.createPartitions({
          topics: [
            {
              name: "payments",
              count: PARTITIONS_PER_TOPIC + 4,
              assignments: Array.from({ length: 4 }, (_, k) => ({
                brokerIds: evenReplicas(cluster.brokerIds(), 1, PARTITIONS_PER_TOPIC + k),
              })),
            },
          ],
        });
      });
      await expectSafe(
        "a topic created, one deleted, partitions added during the ramp",
        result,
        downtime,
        "nothing failed",
      );
    } finally {
      await admin.deleteTopics({ topics: ["late"] }).catch(() => undefined);
      await admin.close();
    }
  });

  it("managed: the pacer service killed mid-ramp and started again on its store", async () => {
    let downtime: Downtime | undefined;
    const port = await freePort();
    const dataDir = join(scratch, "serve-data");
    const url = `http://127.0.0.1:${port}`;
    const serve = () => {
      const process = spawnPacer(["serve"], {
        env: { PORT: String(port), PACER_DATA_DIR: dataDir, PACER_TICK_SECONDS: "0" },
      });
      return process;
    };
    let service = serve();
    await waitUntilListening("pacer serve", `${url}/healthz`, service.child);
    try {
      const result = await recoveryWithFault(
        async (ramp) => {
          downtime = ramp.downtime;
          service.child.kill("SIGKILL");
          await service.exited;
          await new Promise((r) => setTimeout(r, 3 * INTERVAL_MS));
          service = serve();
          await waitUntilListening("pacer serve", `${url}/healthz`, service.child);
        },
        () => ({ kind: "agent-serve", url, clusterId: "faults" }),
      );
      const failed = result.runs.filter((r) => r.error !== undefined);
      expect(failed.length).toBeGreaterThan(0);
      for (const run of failed) expect(run.elections.asked).toBe(0);
      await expectSafe(
        "managed: the pacer service killed (SIGKILL) for 6 s, then started again",
        result,
        downtime,
        "nothing failed",
      );
    } finally {
      service.child.kill("SIGTERM");
      await service.exited;
    }
  });
});
