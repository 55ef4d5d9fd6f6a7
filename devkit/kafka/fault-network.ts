import { execFileSync, spawnSync } from "node:child_process";

/**
 * The fault suite's network, for cutting the agent off from the cluster: every Kafka node listens on
 * an address of its own (added to the loopback device for the suite and removed after),
 * and the agent runs in a network namespace of its own joined to this one by a veth pair. Taking the
 * namespace's end of the pair down cuts the agent off (its packets go nowhere, its connections hang
 * until their timeouts), while the test, the watcher and the brokers still reach each other.
 *
 * Each suite running at the same time takes a slot of its own (its own namespace, veth pair and
 * addresses: 10.214.<2·slot>.<id> for the nodes, 10.214.<2·slot+1>.0/30 for the link). Names start
 * with `pfault-` (namespace) and `pf-` (veth ends), so that a crashed run is cleaned up by the next one.
 */

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

/** Why the network cannot be built here (not root, no `ip netns`), or undefined when it can. */
export function faultNetworkUnavailable(): string | undefined {
  if (process.platform !== "linux") return "network namespaces need Linux";
  if (process.getuid?.() !== 0) return "network namespaces need root (run as root, as CI does)";
  const name = `pfault-probe${process.pid}`;
  const probe = spawnSync("ip", ["netns", "add", name], { encoding: "utf8" });
  if (probe.status !== 0)
    return `\`ip netns add\` failed: ${(probe.stderr || probe.error?.message || "").trim()}`;
  spawnSync("ip", ["netns", "del", name]);
  return undefined;
}

export class FaultNetwork {
  private readonly namespace: string;
  private readonly rootEnd: string;
  private readonly agentEnd: string;
  private readonly nodes: string;
  private readonly link: { root: string; agent: string };

  private constructor(
    private readonly nodeIds: number[],
    slot: number,
  ) {
    this.namespace = `pfault-agent${slot}`;
    this.rootEnd = `pf-root${slot}`;
    this.agentEnd = `pf-agent${slot}`;
    this.nodes = `10.214.${2 * slot}`;
    this.link = { root: `10.214.${2 * slot + 1}.1`, agent: `10.214.${2 * slot + 1}.2` };
  }

  private inAgent(...args: string[]): void {
    ip("netns", "exec", this.namespace, "ip", ...args);
  }

  /** Builds it for these node ids (each below 255), after removing whatever a crashed run left. */
  static build(nodeIds: number[], slot = 0): FaultNetwork {
    const network = new FaultNetwork(nodeIds, slot);
    network.destroy();
    const { namespace, rootEnd, agentEnd, nodes, link } = network;
    for (const id of nodeIds) ip("addr", "add", `${nodes}.${id}/32`, "dev", "lo");
    ip("netns", "add", namespace);
    ip("link", "add", rootEnd, "type", "veth", "peer", "name", agentEnd, "netns", namespace);
    ip("addr", "add", `${link.root}/30`, "dev", rootEnd);
    ip("link", "set", rootEnd, "up");
    network.inAgent("link", "set", "lo", "up");
    network.inAgent("addr", "add", `${link.agent}/30`, "dev", agentEnd);
    network.inAgent("link", "set", agentEnd, "up");
    network.inAgent("route", "add", `${nodes}.0/24`, "via", link.root);
    return network;
  }

  /** Where each node listens, and how it is started (here, in this namespace). */
  readonly placement = {
    host: (id: number) => `${this.nodes}.${id}`,
    prefix: (_id: number): string[] => [],
  };

  /** The command prefix that runs the agent in its namespace. */
  get agentPrefix(): string[] {
    return ["ip", "netns", "exec", this.namespace];
  }

  /** The agent's link down: nothing it sends arrives. */
  cut(): void {
    this.inAgent("link", "set", this.agentEnd, "down");
  }

  restore(): void {
    this.inAgent("link", "set", this.agentEnd, "up");
    this.inAgent("route", "replace", `${this.nodes}.0/24`, "via", this.link.root);
  }

  destroy(): void {
    spawnSync("ip", ["netns", "del", this.namespace]);
    spawnSync("ip", ["link", "del", this.rootEnd]);
    for (const id of this.nodeIds) spawnSync("ip", ["addr", "del", `${this.nodes}.${id}/32`, "dev", "lo"]);
  }
}
