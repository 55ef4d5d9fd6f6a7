import { execFile, execFileSync, spawnSync } from "node:child_process";
import { promisify } from "node:util";

/**
 * The recovery bench's network: every Kafka node and the clients in a network namespace of their own,
 * joined by a bridge that lives in a namespace of its own too, on a private /24 that exists only
 * inside those namespaces (the machine's own network is never touched or addressed). One host's links
 * can be shaped with `tc tbf` both ways: its egress inside its namespace, its ingress on the
 * bridge-side end of its veth (`netem` is not in every kernel; `tbf` is).
 *
 * Names start with `pacer-` (namespaces) and `pv-`/`pb-` (veth ends), so that a crashed run is cleaned
 * up by the next one.
 */

export const SUBNET = "10.213.7";
const SWITCH = "pacer-sw";
const BRIDGE = "pacer-br";
const execFileAsync = promisify(execFile);

export interface BedHost {
  /** Short name (≤ 8 characters): namespace `pacer-<name>`, veth ends `pv-<name>` / `pb-<name>`. */
  name: string;
  /** The last octet of its address on {@link SUBNET}. */
  octet: number;
}

export const namespaceOf = (host: string) => `pacer-${host}`;
export const addressOf = (host: BedHost) => `${SUBNET}.${host.octet}`;

/** The command prefix that runs a program inside a host's namespace. */
export const inHost = (host: string) => ["ip", "netns", "exec", namespaceOf(host)];

function ip(...args: string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

function tc(namespace: string, ...args: string[]): void {
  execFileSync("ip", ["netns", "exec", namespace, "tc", ...args], { stdio: ["ignore", "ignore", "pipe"] });
}

/** Why the bed cannot be built here (not root, no `ip netns`), or undefined when it can. */
export function bedUnavailable(): string | undefined {
  if (process.platform !== "linux") return "network namespaces need Linux";
  if (process.getuid?.() !== 0) return "network namespaces need root (run as root, as CI does)";
  const probe = "pacer-probe";
  const add = spawnSync("ip", ["netns", "add", probe], { encoding: "utf8" });
  if (add.status !== 0) return `\`ip netns add\` failed: ${(add.stderr || add.error?.message || "").trim()}`;
  const qdisc = spawnSync(
    "ip",
    [
      "netns",
      "exec",
      probe,
      "tc",
      "qdisc",
      "add",
      "dev",
      "lo",
      "root",
      "tbf",
      "rate",
      "1mbit",
      "burst",
      "32kb",
      "latency",
      "50ms",
    ],
    { encoding: "utf8" },
  );
  spawnSync("ip", ["netns", "del", probe]);
  if (qdisc.status !== 0)
    return `\`tc ... tbf\` failed: ${(qdisc.stderr || qdisc.error?.message || "").trim()}`;
  return undefined;
}

/** Removes every namespace this module ever made (and so their veths), from this run or a crashed one. */
export function destroyBed(): void {
  const listed = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout ?? "";
  for (const line of listed.split("\n")) {
    const name = line.split(" ")[0] ?? "";
    if (name.startsWith("pacer-")) spawnSync("ip", ["netns", "del", name]);
  }
  const links = spawnSync("ip", ["-o", "link", "show"], { encoding: "utf8" }).stdout ?? "";
  for (const match of links.matchAll(/^\d+: (p[vb]-[^@:]+)/gm))
    spawnSync("ip", ["link", "del", match[1] as string]);
}

/** Builds the switch and one namespace per host, each with its address, and loopback up everywhere. */
export function createBed(hosts: BedHost[]): void {
  destroyBed();
  ip("netns", "add", SWITCH);
  ip("-n", SWITCH, "link", "add", BRIDGE, "type", "bridge");
  ip("-n", SWITCH, "link", "set", BRIDGE, "up");
  for (const host of hosts) {
    const ns = namespaceOf(host.name);
    const hostEnd = `pv-${host.name}`;
    const switchEnd = `pb-${host.name}`;
    ip("netns", "add", ns);
    ip("link", "add", hostEnd, "type", "veth", "peer", "name", switchEnd);
    ip("link", "set", hostEnd, "netns", ns);
    ip("link", "set", switchEnd, "netns", SWITCH);
    ip("-n", SWITCH, "link", "set", switchEnd, "master", BRIDGE);
    ip("-n", SWITCH, "link", "set", switchEnd, "up");
    ip("-n", ns, "addr", "add", `${addressOf(host)}/24`, "dev", hostEnd);
    ip("-n", ns, "link", "set", hostEnd, "up");
    ip("-n", ns, "link", "set", "lo", "up");
  }
}

/**
 * Shapes a host's link to `mbit` Mbit/s both ways with a token bucket. The queue holds at most
 * `latencyMs` of traffic at that rate, as a NIC's ring and a switch port's buffer do, so a saturated
 * link delays a small request by about that much rather than by seconds.
 */
export function shapeHost(host: string, mbit: number, latencyMs = 50): void {
  const params = ["rate", `${mbit}mbit`, "burst", "64kb", "latency", `${latencyMs}ms`];
  tc(namespaceOf(host), "qdisc", "replace", "dev", `pv-${host}`, "root", "tbf", ...params);
  tc(SWITCH, "qdisc", "replace", "dev", `pb-${host}`, "root", "tbf", ...params);
}

/** Bytes a shaped host's links have carried so far: out of it, and into it (its bridge-side end). */
async function linkBytes(host: string): Promise<{ outBytes: number; inBytes: number }> {
  const sent = async (namespace: string, dev: string) => {
    const { stdout } = await execFileAsync("ip", [
      "netns",
      "exec",
      namespace,
      "tc",
      "-s",
      "qdisc",
      "show",
      "dev",
      dev,
    ]);
    const match = /Sent (\d+) bytes/.exec(stdout);
    if (!match) throw new Error(`no byte count for ${dev}: ${stdout}`);
    return Number(match[1]);
  };
  const [outBytes, inBytes] = await Promise.all([
    sent(namespaceOf(host), `pv-${host}`),
    sent(SWITCH, `pb-${host}`),
  ]);
  return { outBytes, inBytes };
}

export interface LinkSample {
  atMs: number;
  outMbit: number;
  inMbit: number;
}

/**
 * Samples a shaped host's throughput both ways every `intervalMs`, from the shapers' own byte counts:
 * how busy the recovering broker's link is while it catches up, and when it stops being.
 */
export class LinkMonitor {
  readonly samples: LinkSample[] = [];
  private readonly timer: NodeJS.Timeout;
  private last: { atMs: number; outBytes: number; inBytes: number } | undefined;

  constructor(
    private readonly host: string,
    intervalMs = 1000,
  ) {
    this.timer = setInterval(() => void this.sample(), intervalMs);
  }

  private async sample(): Promise<void> {
    const atMs = Date.now();
    const bytes = await linkBytes(this.host).catch(() => undefined);
    if (!bytes) return;
    const last = this.last;
    this.last = { atMs, ...bytes };
    if (!last) return;
    const mbit = (delta: number) => (delta * 8) / 1000 / (atMs - last.atMs);
    this.samples.push({
      atMs,
      outMbit: mbit(bytes.outBytes - last.outBytes),
      inMbit: mbit(bytes.inBytes - last.inBytes),
    });
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * Bytes that have reached a host's sockets from `peer` and that its process has not read yet (the sum
 * of Recv-Q). Kafka handles one request per connection at a time, so a produce request waiting for its
 * acks leaves the client's next requests unread on the broker's socket: this shows it.
 */
export async function unreadBytesFrom(host: string, peer: string): Promise<number> {
  const { stdout } = await execFileAsync("ip", [
    "netns",
    "exec",
    namespaceOf(host),
    "ss",
    "-tnH",
    "state",
    "established",
    "dst",
    peer,
  ]);
  return stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[0]), 0);
}

export interface UnreadSample {
  atMs: number;
  /** Per host: unread bytes from the peer. */
  bytes: Record<string, number>;
}

/** Samples {@link unreadBytesFrom} for some hosts every `intervalMs`. */
export class UnreadMonitor {
  readonly samples: UnreadSample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(hosts: string[], peer: string, intervalMs = 1000) {
    this.timer = setInterval(async () => {
      const atMs = Date.now();
      const counts = await Promise.all(hosts.map((h) => unreadBytesFrom(h, peer).catch(() => Number.NaN)));
      this.samples.push({ atMs, bytes: Object.fromEntries(hosts.map((h, i) => [h, counts[i] as number])) });
    }, intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
