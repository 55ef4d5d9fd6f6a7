import { parseArgs } from "node:util";
import { FOLLOWER_RATE, LEADER_RATE } from "../agent/catch-up-throttle.ts";
import { ClientPropertiesError } from "../agent/client-properties.ts";
import { type ProgressSample, type Readiness, readinessOf, timeLeftMs } from "../agent/readiness.ts";
import type { ClusterRead } from "../agent/snapshot.ts";
import { readCluster } from "../agent/snapshot.ts";
import { formatRate, formatSpan } from "../format/text.ts";
import { type KafkaAdminClient, KafkaConnectError } from "../kafka/admin.ts";
import { adminClientOf, bootstrapServersOf, UsageError } from "./kafka-args.ts";

export const WAIT_USAGE = `usage: pacer wait --bootstrap-server HOST:PORT[,…] --broker N [options]
  Exits 0 once broker N is registered and unfenced, in the ISR of every partition it hosts, and leads
  at least --leading percent of its preferred partitions: the moment a rolling restart may stop the
  next broker. Prints its progress while it waits; exits 1 at --timeout, saying what is missing.
  --broker N                the broker's id
  --leading PERCENT         the share of its preferred partitions it must lead (default 99)
  --timeout DURATION        e.g. 30m, 90s, 1h (default 30m)
  --interval DURATION       how often it reads the cluster (default 5s)
  --command-config FILE     Kafka client properties, as for pacer agent`;

/** "30m", "90s", "1h", "500ms", or a number of milliseconds. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(text.trim());
  if (!match) return null;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? "ms") as "ms"];
  return Math.round(Number(match[1]) * unit);
}

/**
 * One progress line: where the broker stands, what it waits for, the replication throttle its
 * catch-up runs under (the pacer's or anyone's), and the time left at its pace.
 */
export function progressLine(
  r: Readiness,
  leftMs: number | null,
  throttle?: { bytesPerSecond: number; side: "follower" | "leader" },
): string {
  const standing = !r.registered ? "not registered" : r.fenced ? "fenced" : "unfenced";
  const stage =
    !r.registered || r.fenced
      ? "waiting for it to start and register"
      : r.inSync < r.hosted
        ? "catching up (its leadership waits)"
        : r.leading < r.leadingNeeded
          ? "ramping"
          : "ready";
  const percent = r.preferred > 0 ? ` (${((100 * r.leading) / r.preferred).toFixed(1)} %)` : "";
  const left = leftMs === null || stage === "ready" ? "" : `, ~${formatSpan(leftMs)} left`;
  const throttled =
    throttle === undefined
      ? ""
      : `, throttled at ${formatRate(throttle.bytesPerSecond)}${throttle.side === "leader" ? " by its leaders" : ""}`;
  return `broker ${r.broker}: ${standing}, in sync ${r.inSync} / ${r.hosted}, leading ${r.leading} / ${r.preferred}${percent}, needs ${r.leadingNeeded}: ${stage}${throttled}${left}`;
}

export async function waitCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "bootstrap-server": { type: "string" },
      "command-config": { type: "string" },
      broker: { type: "string" },
      leading: { type: "string", default: "99" },
      timeout: { type: "string", default: "30m" },
      interval: { type: "string", default: "5s" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(WAIT_USAGE);
    return 0;
  }
  try {
    const servers = bootstrapServersOf(values["bootstrap-server"]);
    const broker = Number(values.broker);
    if (values.broker === undefined || !Number.isInteger(broker) || broker < 0)
      throw new UsageError("--broker must be a broker id (an integer ≥ 0)");
    const leading = Number(values.leading);
    if (!(leading >= 0 && leading <= 100)) throw new UsageError("--leading must be a percent, 0–100");
    const timeoutMs = parseDuration(values.timeout);
    const intervalMs = parseDuration(values.interval);
    if (timeoutMs === null) throw new UsageError("--timeout must be a duration such as 30m, 90s or 1h");
    if (intervalMs === null || intervalMs < 100)
      throw new UsageError("--interval must be a duration of at least 100ms");
    const kafka = adminClientOf(servers, values["command-config"]);
    try {
      return await waitForBroker(kafka, { broker, leading, timeoutMs, intervalMs });
    } finally {
      await kafka.close().catch(() => undefined);
    }
  } catch (error) {
    if (!(error instanceof UsageError || error instanceof ClientPropertiesError)) throw error;
    console.error(`pacer wait: ${(error as Error).message}\n${WAIT_USAGE}`);
    return 2;
  }
}

/**
 * The replication throttle the broker's catch-up runs under, whoever set it: its own follower rate, or
 * else the leader rates of the brokers leading its replicas behind, added up. A broker that cannot say
 * has none to show.
 */
async function catchUpThrottle(
  kafka: KafkaAdminClient,
  read: ClusterRead,
  broker: number,
): Promise<{ bytesPerSecond: number; side: "follower" | "leader" } | undefined> {
  const rateOf = async (id: number, name: string) => {
    const rate = (await kafka.describeBrokerConfigs(id, [name])).get(name);
    return rate && rate.source !== "default" && rate.value !== null ? Number(rate.value) : undefined;
  };
  try {
    const own = await rateOf(broker, FOLLOWER_RATE);
    if (own !== undefined) return { bytesPerSecond: own, side: "follower" };
    const leaders = new Set(
      read.partitions
        .filter((p) => p.replicas.includes(broker) && !p.isr.includes(broker) && p.leader >= 0)
        .map((p) => p.leader),
    );
    let total = 0;
    for (const leader of leaders) total += (await rateOf(leader, LEADER_RATE)) ?? 0;
    return total > 0 ? { bytesPerSecond: total, side: "leader" } : undefined;
  } catch {
    return undefined;
  }
}

async function waitForBroker(
  kafka: KafkaAdminClient,
  options: { broker: number; leading: number; timeoutMs: number; intervalMs: number },
): Promise<number> {
  const startedAt = Date.now();
  const samples: ProgressSample[] = [];
  let last: Readiness | null = null;
  let lastFailure = "";
  for (;;) {
    try {
      const read = await readCluster(kafka);
      last = readinessOf(read, options.broker, options.leading);
      lastFailure = "";
      samples.push({ atMs: Date.now(), inSync: last.inSync, leading: last.leading });
      const catchingUp = last.registered && !last.fenced && last.inSync < last.hosted;
      const throttle = catchingUp ? await catchUpThrottle(kafka, read, options.broker) : undefined;
      console.log(progressLine(last, timeLeftMs(samples, last), throttle));
      if (last.ready) return 0;
    } catch (error) {
      // A certificate that fails the handshake will fail it again: say so now, not at the timeout.
      if (error instanceof KafkaConnectError && error.kind === "tls") {
        console.error(`pacer wait: ${error.message}`);
        return 1;
      }
      // A broker restarting may take the bootstrap server with it for a moment: keep asking.
      lastFailure = `cannot read the cluster: ${(error as Error).message}`;
      console.log(lastFailure);
    }
    const elapsedMs = Date.now() - startedAt;
    if (elapsedMs + options.intervalMs > options.timeoutMs) {
      const missing = last ? last.missing.join("; ") : lastFailure;
      console.error(
        `pacer wait: broker ${options.broker} is not ready after ${formatSpan(elapsedMs)}: ${lastFailure || missing}`,
      );
      return 1;
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
  }
}
