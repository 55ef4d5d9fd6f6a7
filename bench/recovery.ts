import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { CONTROLLER_ID, KafkaCluster } from "../devkit/kafka/cluster.ts";
import {
  createEvenTopics,
  type IsrChange,
  LeadershipWatcher,
  largestBurst,
  type Sample,
  startAgent,
  waitFor,
} from "../devkit/kafka/recovery.ts";
import { loadClasspath } from "../devkit/recovery-bed/java.ts";
import {
  bulkProduce,
  type LatencyFigures,
  type LoadReport,
  reportLoad,
  setCatchUpThrottle,
  startLoad,
  waitSettled,
} from "../devkit/recovery-bed/load.ts";
import {
  addressOf,
  type BedHost,
  bedUnavailable,
  createBed,
  destroyBed,
  inHost,
  LinkMonitor,
  type LinkSample,
  shapeHost,
  UnreadMonitor,
  type UnreadSample,
} from "../devkit/recovery-bed/netns.ts";
import { measureTransfer } from "../devkit/recovery-bed/transfer.ts";
import { KafkaAdminClient } from "../functions/kafka/admin.ts";
import { csv, renderReport } from "./recovery-report.ts";

/**
 * `npm run bench:recovery`: the proposal's load test on Apache Kafka 4.4.0. One KRaft controller and
 * three brokers, each in a network namespace of its own, broker 1's link shaped with `tc tbf` both
 * ways, so that catching up competes with client traffic for its link as it would for a NIC. An
 * open-loop acks=all Java producer measures latency from each record's intended send time; broker 1
 * is stopped, misses a bulk of data, and is started again, once per variant, on the same cluster:
 * Kafka's balancer at its defaults and every 5 s, no rebalancing, and `pacer agent`.
 *
 * Runs as root (namespaces); the bed is torn down on exit. `--quick`: a miniature of variants 2 and 4;
 * `--mini`: the CI test's, smaller still.
 */

const { values: args } = parseArgs({
  options: {
    inside: { type: "boolean", default: false },
    /** Draws a finished run's table and charts again from its folder, and runs nothing. */
    render: { type: "string" },
    quick: { type: "boolean", default: false },
    mini: { type: "boolean", default: false },
    partitions: { type: "string" },
    variants: { type: "string" },
    "rate-mbit": { type: "string", default: "50" },
    /** The open-loop load's records of 1 KiB per second, over every partition. */
    "records-per-second": { type: "string", default: "1000" },
    "produce-mb": { type: "string" },
    out: { type: "string" },
    /** Extra broker properties for every variant, `name=value`; written into the report. */
    broker: { type: "string", multiple: true, default: [] },
    "down-s": { type: "string" },
    /** Kafka's follower replication throttle on broker 1 from its stop until it has recovered (every variant). */
    "catch-up-throttle-mbit": { type: "string" },
    /**
     * Variant 6's rates (catch-up pacing), Mbit/s: one run of it per rate, for the trade-off chart;
     * variant 7 (the throttle by hand, the control) runs at the first. Default: 40 % of the link.
     */
    "catch-up-rates-mbit": { type: "string" },
  },
});

/**
 * Sizes: the default run, `--quick` (a miniature of variants 2 and 4 within 6 minutes) and `--mini`
 * (the CI test's: the same two variants in about 30 s of load each, which proves that the bed and the
 * bench work, not what the figures are).
 */
const PRESETS = {
  full: { partitions: 3000, produceMb: 450, downS: 40, warmupMs: 20_000, steadyMs: 60_000, tailMs: 30_000 },
  quick: { partitions: 300, produceMb: 100, downS: 35, warmupMs: 10_000, steadyMs: 20_000, tailMs: 10_000 },
  mini: { partitions: 60, produceMb: 20, downS: 10, warmupMs: 5_000, steadyMs: 8_000, tailMs: 5_000 },
};
const SIZE = args.mini ? "mini" : args.quick ? "quick" : "full";
const PRESET = PRESETS[SIZE];
const QUICK = SIZE !== "full";
const PARTITIONS = Number(args.partitions ?? PRESET.partitions);
const TOPICS = ["orders", "payments"];
const PER_TOPIC = Math.ceil(PARTITIONS / TOPICS.length);
const RATE_MBIT = Number(args["rate-mbit"]);
const PRODUCE_MB = Number(args["produce-mb"] ?? PRESET.produceMb);
const LOAD = { recordsPerSecond: Number(args["records-per-second"]), recordBytes: 1024 };
const TIMES = { warmupMs: PRESET.warmupMs, steadyMs: PRESET.steadyMs, tailMs: PRESET.tailMs };
/**
 * How long broker 1 stays down (at least; longer if the bulk takes longer). By default longer than
 * replica.lag.time.max.ms (30 s), so that the leaders no longer count it as caught up when it returns.
 */
const DOWN_MS = Number(args["down-s"] ?? PRESET.downS) * 1000;
/** A pause between the steady window and the stop, so that no record of the window waits on the stop. */
const GAP_MS = 5_000;
const CATCH_UP_THROTTLE_MBIT = args["catch-up-throttle-mbit"]
  ? Number(args["catch-up-throttle-mbit"])
  : undefined;
const CATCH_UP_RATES_MBIT = (args["catch-up-rates-mbit"] ?? String(Number(args["rate-mbit"]) * 0.4))
  .split(",")
  .map(Number);
const RECOVERED_SHARE = 0.99;
const THRESHOLD_PERCENT = 5;
/** Broker 1's link counts as saturated at this share of its shaped rate (steady state uses under a fifth). */
const BUSY_SHARE = 0.8;
const OUT = resolve(args.out ?? join("report/recovery", QUICK ? SIZE : String(PARTITIONS)));
const RECOVERING = 1;
const BROKER_EXTRA = Object.fromEntries(
  (args.broker ?? []).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
);

/** The pacing the README recommends, as `pacer agent --config` reads it. */
export const README_PACING = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": THRESHOLD_PERCENT,
  "leader.imbalance.election.max.per.run": 200,
  "leader.imbalance.election.throttle.interval.ms": 15000,
  "leader.imbalance.check.interval.seconds": 5,
};

/**
 * Variant 5: the same pacing with the max-lag-bytes gate (extension) on, at five seconds of broker 1's
 * link: leadership returns once what is left of its catch-up would take the link at most that long.
 */
const LAG_SECONDS = 5;
export const LAG_PACING = {
  ...README_PACING,
  "leader.imbalance.election.wait.for.sync.max.lag.bytes": Math.round(((RATE_MBIT * 1e6) / 8) * LAG_SECONDS),
};

interface Variant {
  /** Its files' and table's number; a variant run at several rates is 6, then 61, 62, … */
  id: number;
  label: string;
  controller: Record<string, string | number | boolean>;
  agent?: Record<string, string | number>;
  /** Kafka's follower throttle set by hand (`*`) on broker 1 at its stop, lifted once it has recovered. */
  handThrottleMbit?: number;
  /** False where leadership never returns: its window ends when the broker is back in the ISRs. */
  leadershipReturns: boolean;
}

const VARIANTS: Variant[] = [
  {
    id: 1,
    label: "Kafka's balancer, defaults (check every 300 s)",
    controller: { "auto.leader.rebalance.enable": true, "leader.imbalance.check.interval.seconds": 300 },
    leadershipReturns: true,
  },
  {
    id: 2,
    label: "Kafka's balancer, check every 5 s",
    controller: { "auto.leader.rebalance.enable": true, "leader.imbalance.check.interval.seconds": 5 },
    leadershipReturns: true,
  },
  {
    id: 3,
    label: "no rebalancing",
    controller: { "auto.leader.rebalance.enable": false },
    leadershipReturns: false,
  },
  {
    id: 4,
    label: "pacer agent, the README's configuration",
    controller: { "auto.leader.rebalance.enable": false },
    agent: README_PACING,
    leadershipReturns: true,
  },
  {
    id: 5,
    label: `pacer agent, and the max-lag-bytes gate (${LAG_SECONDS} s of the link)`,
    controller: { "auto.leader.rebalance.enable": false },
    agent: LAG_PACING,
    leadershipReturns: true,
  },
  ...CATCH_UP_RATES_MBIT.map((mbit, i) => ({
    id: i === 0 ? 6 : 60 + i,
    label: `pacer agent, and catch-up pacing at ${mbit} Mbit/s`,
    controller: { "auto.leader.rebalance.enable": false },
    agent: { ...README_PACING, "pacer.catch.up.replication.throttled.rate": Math.round((mbit * 1e6) / 8) },
    leadershipReturns: true,
  })),
  {
    id: 8,
    label: `pacer agent, and catch-up pacing at ${CATCH_UP_RATES_MBIT[0]} Mbit/s on the leader side`,
    controller: { "auto.leader.rebalance.enable": false },
    agent: {
      ...README_PACING,
      "pacer.catch.up.replication.throttled.rate": Math.round(((CATCH_UP_RATES_MBIT[0] as number) * 1e6) / 8),
      "pacer.catch.up.replication.throttled.side": "leader",
    },
    leadershipReturns: true,
  },
  {
    id: 7,
    label: `pacer agent, and the follower throttle by hand at ${CATCH_UP_RATES_MBIT[0]} Mbit/s (\`*\`, the control)`,
    controller: { "auto.leader.rebalance.enable": false },
    agent: README_PACING,
    handThrottleMbit: CATCH_UP_RATES_MBIT[0],
    leadershipReturns: true,
  },
];

/** `6` in --variants is variant 6 at every rate of --catch-up-rates-mbit. */
const chosen = (args.variants ?? (QUICK ? "2,4" : "1,2,3,4,5"))
  .split(",")
  .map(Number)
  .flatMap((id) =>
    id === 6 ? VARIANTS.filter((v) => v.id === 6 || (v.id > 60 && v.id < 70)).map((v) => v.id) : [id],
  );

const HOSTS: BedHost[] = [
  { name: "b1", octet: 1 },
  { name: "b2", octet: 2 },
  { name: "b3", octet: 3 },
  { name: "ctl", octet: 10 },
  { name: "cli", octet: 100 },
];
const hostOfNode = (id: number) => (id === CONTROLLER_ID ? "ctl" : `b${id}`);

interface VariantResult {
  variant: Variant;
  /** How long after its start the load ran steadily (undefined: it never did, and was measured anyway). */
  settledAfterMs?: number;
  steadyFromMs: number;
  stoppedAtMs: number;
  unfencedAtMs: number;
  /** When the broker led ≥ 99 % of its preferred partitions (or, without rebalancing, was back in ≥ 99 % of their ISRs). */
  reachedAtMs?: number;
  /** When it was back in the ISR of every preferred partition: full redundancy again. */
  inSyncAtMs?: number;
  endAtMs: number;
  bulk: { bytes: number; ms: number };
  load: LoadReport;
  samples: Sample[];
  isrChanges: IsrChange[];
  /** Broker 1's link throughput, each way, sampled every second. */
  link: LinkSample[];
  /** Bytes from the load's host unread on brokers 2 and 3, sampled every second. */
  unread: UnreadSample[];
  movesOnto: number;
  movesWhileBehind: number;
  /** Moves onto broker 1 while its incoming link was saturated by its catch-up. */
  movesWhileLinkBusy: number;
  /** When broker 1's incoming link last fell under {@link BUSY_SHARE} of its rate for good. */
  linkFreeAtMs?: number;
  largestBurst1s: number;
  preferred: number;
  agentErrors: number;
  /** The agent's runs that held broker 1 back, by reason. */
  heldBack: Record<string, number>;
}

// ---------------------------------------------------------------------------------------------------
// Outside: build the bed, check the shaping, run the bench inside the clients' namespace, tear down.

async function outside(): Promise<number> {
  const unavailable = bedUnavailable();
  if (unavailable) {
    console.error(`bench:recovery needs network namespaces: ${unavailable}`);
    return 2;
  }
  // Maven needs the machine's network, which the namespaces do not have: resolve and compile first.
  const classpath = loadClasspath();
  const cleanUp = () => destroyBed();
  let child: ChildProcess | undefined;
  // Stopped: the inside stops its cluster first (its JVMs would outlive the namespaces), then the bed goes.
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const)
    process.once(signal, () => {
      if (child && child.exitCode === null) child.kill(signal);
      else {
        cleanUp();
        process.exit(code);
      }
    });
  createBed(HOSTS);
  try {
    shapeHost("b1", RATE_MBIT);
    const ctl = { name: "ctl", address: addressOf(HOSTS[3] as BedHost) };
    const b1 = { name: "b1", address: addressOf(HOSTS[0] as BedHost) };
    const egress = await measureTransfer("b1", ctl, 4);
    const ingress = await measureTransfer("ctl", b1, 4);
    console.log(
      `bed: 5 namespaces on ${addressOf({ name: "", octet: 0 }).replace(/\.0$/, ".0/24")}; broker 1 shaped to ${RATE_MBIT} Mbit/s: measured ${egress} out, ${ingress} in`,
    );
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, "shaping.json"), JSON.stringify({ setMbit: RATE_MBIT, egress, ingress }));
    const [exe, ...prefix] = inHost("cli");
    child = spawn(
      exe as string,
      [
        ...prefix,
        process.execPath,
        "--import",
        "tsx",
        "bench/recovery.ts",
        ...process.argv.slice(2),
        "--inside",
      ],
      { stdio: "inherit", env: { ...process.env, PACER_BED_CLASSPATH: classpath } },
    );
    const running = child;
    return await new Promise<number>((done) => running.once("exit", (code) => done(code ?? 1)));
  } finally {
    cleanUp();
  }
}

// ---------------------------------------------------------------------------------------------------
// Inside: the cluster, the variants one after another, the report.

async function inside(): Promise<number> {
  // Exiting (rather than dying of the signal) runs the launcher's exit hook, which kills every broker.
  process.once("SIGINT", () => process.exit(130));
  process.once("SIGTERM", () => process.exit(143));
  const classpath = process.env.PACER_BED_CLASSPATH as string;
  const heapMb = PARTITIONS > 5000 ? 2048 : 1024;
  const cluster = await KafkaCluster.start({
    brokers: 3,
    classpath,
    brokerHeapMb: heapMb,
    placement: {
      host: (id) => addressOf(HOSTS.find((h) => h.name === hostOfNode(id)) as BedHost),
      prefix: (id) => inHost(hostOfNode(id)),
    },
    broker: {
      "min.insync.replicas": 2,
      // Kafka's defaults (the tests' cluster runs with fewer threads).
      "num.network.threads": 3,
      "num.io.threads": 8,
      // Thousands of small logs: keep their preallocated indexes small.
      "log.index.size.max.bytes": 1048576,
      ...BROKER_EXTRA,
    },
  });
  const target = {
    classpath,
    bootstrap: cluster.bootstrapServers,
    topics: TOPICS,
    partitionsPerTopic: PER_TOPIC,
  };
  mkdirSync(OUT, { recursive: true });
  const results: VariantResult[] = [];
  try {
    console.log(`cluster up: Apache Kafka 4.4.0, ${cluster.bootstrapServers}`);
    await createEvenTopics(cluster, TOPICS, PER_TOPIC, 300_000);
    console.log(`${TOPICS.length * PER_TOPIC} partitions, RF 3, preferred leaders spread evenly`);
    for (const id of chosen) {
      const variant = VARIANTS.find((v) => v.id === id);
      if (!variant) throw new Error(`no variant ${id}`);
      // Each record's latency, kept beside the report: intended time (ms), latency (µs), error, partition.
      const result = await runVariant(cluster, target, variant, join(OUT, `load-${id}.csv`));
      results.push(result);
      printRow(result);
    }
  } finally {
    await cluster.close();
  }
  await writeReport(results);
  return 0;
}

async function runVariant(
  cluster: KafkaCluster,
  target: Parameters<typeof bulkProduce>[0],
  variant: Variant,
  loadFile: string,
): Promise<VariantResult> {
  const log = (text: string) =>
    console.log(`[${variant.id}] ${new Date().toISOString().slice(11, 19)} ${text}`);
  log(`${variant.label}: restarting the controller with ${JSON.stringify(variant.controller)}`);
  await cluster.restartController(variant.controller);
  await restorePreferredLeadership(cluster);
  const kafka = new KafkaAdminClient({
    bootstrapServers: cluster.bootstrapServers.split(","),
    requestTimeoutMs: 10_000,
  });
  const preferred = (await kafka.describePartitions()).filter((p) => p.replicas[0] === RECOVERING).length;
  await kafka.close();
  const watcher = new LeadershipWatcher(cluster, TOPICS, PARTITIONS > 5000 ? 1000 : 500);
  const link = new LinkMonitor("b1");
  const unread = new UnreadMonitor(["b2", "b3"], addressOf(HOSTS[4] as BedHost));
  const agent = variant.agent
    ? startAgent(cluster, { kind: "agent-embedded" }, { config: variant.agent })
    : undefined;
  const load = await startLoad(target, LOAD.recordsPerSecond, LOAD.recordBytes, loadFile);
  try {
    await sleep(TIMES.warmupMs);
    const settledAfterMs = await waitSettled(loadFile, LOAD.recordsPerSecond).catch((error) => {
      log(`measuring anyway: ${(error as Error).message}`);
      return undefined;
    });
    if (settledAfterMs !== undefined)
      log(`load steady after ${((TIMES.warmupMs + settledAfterMs) / 1000).toFixed(0)} s`);
    const steadyFromMs = Date.now();
    await sleep(TIMES.steadyMs);
    const steadyToMs = Date.now();
    await sleep(GAP_MS);
    // Set before the stop, as an operator would: a broker's own configs are altered through it.
    const handMbit = variant.handThrottleMbit ?? CATCH_UP_THROTTLE_MBIT;
    if (handMbit) await setCatchUpThrottle(target, RECOVERING, (handMbit * 1e6) / 8);
    const stoppedAtMs = Date.now();
    await cluster.stopBroker(RECOVERING, "SIGTERM");
    log("broker 1 stopped; producing while it is down");
    const bulk = await bulkProduce(target, PRODUCE_MB * 1_000_000);
    await sleep(Math.max(0, stoppedAtMs + DOWN_MS - Date.now()));
    log(
      `produced ${(bulk.bytes / 1e6).toFixed(0)} MB in ${(bulk.ms / 1000).toFixed(1)} s; starting broker 1 after ${((Date.now() - stoppedAtMs) / 1000).toFixed(0)} s down`,
    );
    await cluster.startBroker(RECOVERING);
    const unfencedAtMs = Date.now();
    log("broker 1 unfenced");
    const reached = (s: Sample) =>
      variant.leadershipReturns
        ? (s.leads[RECOVERING] ?? 0) >= RECOVERED_SHARE * preferred
        : preferred - (s.outOfSync[RECOVERING] ?? 0) >= RECOVERED_SHARE * preferred;
    const reachedAtMs = await waitFor(
      async () => watcher.samples.find((s) => s.atMs >= unfencedAtMs && reached(s))?.atMs,
      QUICK ? 180_000 : 900_000,
      "broker 1 to recover",
    ).catch((error) => {
      log(`not recovered: ${(error as Error).message}`);
      return undefined;
    });
    if (handMbit) await setCatchUpThrottle(target, RECOVERING, 0);
    log(`recovered after ${reachedAtMs ? ((reachedAtMs - unfencedAtMs) / 1000).toFixed(1) : "–"} s`);
    await sleep(TIMES.tailMs);
    const endAtMs = Date.now();
    await load.stop();
    const runs = (await agent?.stop()) ?? [];
    if (agent)
      writeFileSync(join(OUT, `agent-${variant.id}.ndjson`), runs.map((r) => JSON.stringify(r)).join("\n"));
    await watcher.stop();
    link.stop();
    unread.stop();
    const report = await reportLoad(
      target.classpath,
      loadFile,
      { steady: [steadyFromMs, steadyToMs], recovery: [unfencedAtMs, endAtMs] },
      { originMs: unfencedAtMs, fromMs: steadyFromMs, toMs: endAtMs, bucketMs: 5000 },
    );
    const onto = watcher.moves.filter((m) => m.to === RECOVERING && m.atMs >= unfencedAtMs);
    const busyAt = (atMs: number) => {
      // The sample whose second covers the move.
      const sample = link.samples.find((s) => s.atMs >= atMs);
      return sample !== undefined && sample.inMbit >= BUSY_SHARE * RATE_MBIT;
    };
    const lastBusy = link.samples.findLast(
      (s) => s.atMs >= unfencedAtMs && s.inMbit >= BUSY_SHARE * RATE_MBIT,
    );
    return {
      variant,
      settledAfterMs: settledAfterMs === undefined ? undefined : TIMES.warmupMs + settledAfterMs,
      steadyFromMs,
      stoppedAtMs,
      unfencedAtMs,
      reachedAtMs,
      inSyncAtMs: backInEveryIsrAtMs(watcher.isrChanges, unfencedAtMs),
      endAtMs,
      bulk,
      load: report,
      samples: watcher.samples.filter((s) => s.atMs >= steadyFromMs),
      isrChanges: watcher.isrChanges.filter((c) => c.atMs >= steadyFromMs),
      link: link.samples.filter((s) => s.atMs >= steadyFromMs),
      unread: unread.samples.filter((s) => s.atMs >= steadyFromMs),
      movesOnto: onto.length,
      movesWhileLinkBusy: onto.filter((m) => busyAt(m.atMs)).length,
      linkFreeAtMs: lastBusy?.atMs,
      movesWhileBehind: onto.filter((m) => m.outOfSync * 100 > THRESHOLD_PERCENT * m.preferred).length,
      largestBurst1s: largestBurst(onto, 1000, RECOVERING),
      preferred,
      agentErrors: runs.filter((r) => r.error).length,
      heldBack: countBy(runs.flatMap((r) => r.heldBack.map((b) => b.reason))),
    };
  } finally {
    await load.stop().catch(() => {});
    await agent?.stop();
    await watcher.stop().catch(() => {});
    link.stop();
    unread.stop();
  }
}

/**
 * When broker 1 was back in the ISR of every partition it hosts, from the ISR changes the watcher saw
 * (the cluster was whole when it started watching): undefined while some partition was still without it.
 */
function backInEveryIsrAtMs(changes: IsrChange[], unfencedAtMs: number): number | undefined {
  const out = new Set<string>();
  let atMs: number | undefined;
  for (const c of changes) {
    if (c.broker !== RECOVERING) continue;
    const key = `${c.topic}\u0000${c.partition}`;
    if (c.joined) out.delete(key);
    else out.add(key);
    if (c.atMs >= unfencedAtMs) atMs = out.size === 0 ? (atMs ?? c.atMs) : undefined;
  }
  return out.size === 0 ? atMs : undefined;
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/** Every partition led by its preferred replica again, so each variant starts from the same place. */
async function restorePreferredLeadership(cluster: KafkaCluster): Promise<void> {
  const kafka = new KafkaAdminClient({
    bootstrapServers: cluster.bootstrapServers.split(","),
    requestTimeoutMs: 30_000,
  });
  try {
    await waitFor(
      async () => {
        const partitions = await kafka.describePartitions();
        const off = partitions.filter((p) => TOPICS.includes(p.topic) && p.leader !== p.replicas[0]);
        if (off.length === 0 && partitions.every((p) => p.isr.length === p.replicas.length)) return true;
        for (let i = 0; i < off.length; i += 1000) await kafka.electPreferred(off.slice(i, i + 1000));
        await sleep(2000);
        return undefined;
      },
      600_000,
      "every partition to be led by its preferred replica with a full ISR",
    );
  } finally {
    await kafka.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// The report: a table, CSV and charts.

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

function rowOf(r: VariantResult) {
  const steady = r.load.windows.steady as LatencyFigures;
  const recovery = r.load.windows.recovery as LatencyFigures;
  return {
    variant: `${r.variant.id}. ${r.variant.label}`,
    "steady P99 ms": ms(steady.p99Ms),
    "recovery P50 ms": ms(recovery.p50Ms),
    "recovery P99 ms": ms(recovery.p99Ms),
    "recovery P99.9 ms": ms(recovery.p999Ms),
    "recovery max ms": ms(recovery.maxMs),
    "P99 ÷ steady": (recovery.p99Ms / steady.p99Ms).toFixed(2),
    "errors / timeouts": `${recovery.errors} / ${recovery.timeouts}`,
    "recovery time": r.reachedAtMs
      ? `${seconds(r.reachedAtMs - r.unfencedAtMs)}${r.variant.leadershipReturns ? "" : " (in ISR; leads none)"}`
      : "not reached",
    "catch-up time (back in every ISR)": r.inSyncAtMs ? seconds(r.inSyncAtMs - r.unfencedAtMs) : "–",
    "link saturated for": r.linkFreeAtMs ? seconds(r.linkFreeAtMs - r.unfencedAtMs) : "–",
    "moves onto broker 1": r.movesOnto,
    "while > 5 % behind": r.movesWhileBehind,
    "while its link was saturated": r.movesWhileLinkBusy,
    "largest 1 s burst": r.largestBurst1s,
  };
}

function printRow(r: VariantResult): void {
  console.table([rowOf(r)]);
}

async function writeReport(results: VariantResult[]): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const rows = results.map(rowOf);
  console.log(
    `\nApache Kafka 4.4.0, KRaft, 1 controller + 3 brokers; ${TOPICS.length * PER_TOPIC} partitions, RF 3, min.insync.replicas 2; broker 1 (${rows.length ? results[0]?.preferred : 0} preferred) shaped to ${RATE_MBIT} Mbit/s each way; load ${LOAD.recordsPerSecond} × ${LOAD.recordBytes} B/s acks=all open loop; ${PRODUCE_MB} MB produced while broker 1 was down; steady = ${TIMES.steadyMs / 1000} s before the stop, recovery = unfenced → 99 % + ${TIMES.tailMs / 1000} s.\n`,
  );
  console.table(rows);
  writeFileSync(
    join(OUT, "p99-per-5s.csv"),
    csv(
      ["variant", "seconds_since_unfenced", "count", "p99_ms", "max_ms", "errors"],
      results.flatMap((r) =>
        r.load.buckets.map((b) => [r.variant.id, b.fromMs / 1000, b.count, b.p99Ms, b.maxMs, b.errors]),
      ),
    ),
  );
  /** One CSV of a time series per variant: the variant, seconds since its unfencing, the series' own columns. */
  const writeSeries = <T extends { atMs: number }>(
    file: string,
    columns: string[],
    seriesOf: (r: VariantResult) => T[],
    cellsOf: (x: T) => (string | number)[],
  ) =>
    writeFileSync(
      join(OUT, file),
      csv(
        ["variant", "seconds_since_unfenced", ...columns],
        results.flatMap((r) =>
          seriesOf(r).map((x) => [r.variant.id, (x.atMs - r.unfencedAtMs) / 1000, ...cellsOf(x)]),
        ),
      ),
    );
  writeSeries(
    "leadership.csv",
    ["leads", "out_of_sync", "preferred"],
    (r) => r.samples.map((s) => ({ ...s, preferred: r.preferred })),
    (s) => [s.leads[RECOVERING] ?? 0, s.outOfSync[RECOVERING] ?? 0, s.preferred],
  );
  writeSeries(
    "isr-changes.csv",
    ["topic", "partition", "broker", "joined"],
    (r) => r.isrChanges,
    (c) => [c.topic, c.partition, c.broker, c.joined ? 1 : 0],
  );
  writeSeries(
    "link.csv",
    ["in_mbit", "out_mbit"],
    (r) => r.link,
    (l) => [l.inMbit.toFixed(2), l.outMbit.toFixed(2)],
  );
  writeSeries(
    "unread.csv",
    ["unread_bytes_on_broker_2", "unread_bytes_on_broker_3"],
    (r) => r.unread,
    (u) => [u.bytes.b2 ?? "", u.bytes.b3 ?? ""],
  );
  writeFileSync(
    join(OUT, "results.json"),
    `${JSON.stringify(
      {
        kafka: "4.4.0",
        partitions: TOPICS.length * PER_TOPIC,
        rateMbit: RATE_MBIT,
        produceMb: PRODUCE_MB,
        load: LOAD,
        times: { ...TIMES, downMs: DOWN_MS, gapMs: GAP_MS },
        brokerConfig: BROKER_EXTRA,
        catchUpThrottleMbit: CATCH_UP_THROTTLE_MBIT ?? null,
        catchUpRatesMbit: CATCH_UP_RATES_MBIT,
        pacing: README_PACING,
        lagPacing: LAG_PACING,
        rows,
        variants: results.map((r) => ({
          id: r.variant.id,
          label: r.variant.label,
          loadSteadyAfterMs: r.settledAfterMs ?? null,
          windows: r.load.windows,
          unfencedAtMs: r.unfencedAtMs,
          recoveryMs: r.reachedAtMs ? r.reachedAtMs - r.unfencedAtMs : null,
          catchUpMs: r.inSyncAtMs ? r.inSyncAtMs - r.unfencedAtMs : null,
          catchUpRateMbit:
            r.variant.handThrottleMbit ??
            (r.variant.agent?.["pacer.catch.up.replication.throttled.rate"]
              ? (Number(r.variant.agent["pacer.catch.up.replication.throttled.rate"]) * 8) / 1e6
              : (CATCH_UP_THROTTLE_MBIT ?? null)),
          movesOnto: r.movesOnto,
          movesWhileBehind: r.movesWhileBehind,
          movesWhileLinkBusy: r.movesWhileLinkBusy,
          linkSaturatedMs: r.linkFreeAtMs ? r.linkFreeAtMs - r.unfencedAtMs : null,
          largestBurst1s: r.largestBurst1s,
          agentErrors: r.agentErrors,
          agentRunsHeldBack: r.heldBack,
          bulk: r.bulk,
        })),
      },
      null,
      2,
    )}\n`,
  );
  await renderReport(OUT, LAYOUT);
  console.log(
    `report: ${OUT}/{results.json,table.md,p99-per-5s.csv,leadership.csv,link.csv,p99.svg,leadership.svg}`,
  );
}

const LAYOUT = { topics: TOPICS, brokers: [1, 2, 3], recovering: RECOVERING };
if (args.render) await renderReport(resolve(args.render), LAYOUT);
else process.exitCode = await (args.inside ? inside() : outside());
