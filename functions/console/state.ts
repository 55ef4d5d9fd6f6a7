import {
  type ConfigOverrides,
  DEFAULT_CONFIG,
  type EffectiveConfig,
  effectiveConfig,
} from "../../schemas/config.ts";
import type { ClusterRecord } from "../store/store.ts";

/**
 * What the console says of a cluster at a glance, most urgent first. Whether the service ticks a
 * cluster is not a state: a cluster its own agent runs is as healthy as one the service ticks.
 */
export const CLUSTER_STATES = [
  "unreachable",
  "tick failing",
  "gated",
  "ramping",
  "recovered",
  "stale snapshot",
  "balanced",
] as const;
export type ClusterState = (typeof CLUSTER_STATES)[number];

export function clusterStateOf(record: ClusterRecord, config: EffectiveConfig, nowMs: number): ClusterState {
  const last = record.lastDecision;
  if (record.lastTick?.outcome === "unreachable") return "unreachable";
  if (record.lastTick?.outcome === "failed") return "tick failing";
  if (last && last.gatedBrokers.length > 0) return "gated";
  if (last?.moreWorkRemains) return "ramping";
  // Its last run handed back the rest: the recovery is over.
  if (last && last.electionCount > 0) return "recovered";
  // Only the service's tick reads the stored snapshot: an old one matters only then.
  const ageMs = record.snapshot ? nowMs - record.snapshot.receivedAtMs : Number.POSITIVE_INFINITY;
  if (config["pacer.tick.enabled"] && ageMs > config["pacer.snapshot.max.age.ms"]) return "stale snapshot";
  return "balanced";
}

export type ConfigSource = "default" | "fleet" | "cluster";

/** Each effective value and the layer it comes from. */
export function configWithSources(fleet: ConfigOverrides, cluster: ConfigOverrides) {
  const effective = effectiveConfig(fleet, cluster);
  return Object.keys(DEFAULT_CONFIG).map((key) => {
    const name = key as keyof EffectiveConfig;
    const source: ConfigSource = name in cluster ? "cluster" : name in fleet ? "fleet" : "default";
    return { key: name, value: effective[name], source };
  });
}
