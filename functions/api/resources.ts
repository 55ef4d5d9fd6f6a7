import { type ConfigOverrides, effectiveConfig } from "../../schemas/config.ts";
import { type ClusterRecord, nextRunDueAtMs } from "../store/store.ts";

/** A stored cluster as the API shows it (SPEC §5), and as the console builds its pages on. */

export function clusterView(
  record: ClusterRecord | null,
  clusterId: string,
  fleetConfig: ConfigOverrides,
  nowMs: number,
) {
  return {
    clusterId,
    stateVersion: record?.version ?? 0,
    config: record?.config ?? {},
    effectiveConfig: effectiveConfig(fleetConfig, record?.config),
    gate: record?.state?.brokers ?? [],
    lastRunAtMs: record?.state?.lastRunAtMs ?? null,
    lastRunCapped: record?.state?.lastRunCapped ?? false,
    lastDecision: record?.lastDecision ?? null,
    snapshot: record?.snapshot ? { ...record.snapshot, ageMs: nowMs - record.snapshot.receivedAtMs } : null,
    lastTick: record?.lastTick ?? null,
    connected: record?.connected ?? false,
    deferredRuns: record?.deferredRuns ?? 0,
    lastDeferred: record?.lastDeferred ?? null,
  };
}

/** A cluster's row in the fleet listing. */
export function fleetRow(record: ClusterRecord, fleetConfig: ConfigOverrides, nowMs: number) {
  const last = record.lastDecision;
  return {
    clusterId: record.clusterId,
    stateVersion: record.version,
    gatedBrokers: last?.gatedBrokers ?? [],
    lastRunAtMs: record.state?.lastRunAtMs ?? null,
    lastElectionCount: last?.electionCount ?? null,
    carriedOut: last?.carriedOut ?? null,
    moreWorkRemains: last?.moreWorkRemains ?? false,
    nextRunDueAtMs: last ? nextRunDueAtMs(last) : null,
    snapshotAgeMs: record.snapshot ? nowMs - record.snapshot.receivedAtMs : null,
    ticking: effectiveConfig(fleetConfig, record.config)["pacer.tick.enabled"],
    connected: record.connected,
    lastTick: record.lastTick,
    recovering: last?.recovering ?? [],
  };
}
