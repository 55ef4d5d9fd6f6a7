import * as z from "zod";
import { RunAnswer } from "../../schemas/answer.ts";
import { ConfigOverrides } from "../../schemas/config.ts";
import { GateEntry } from "../../schemas/state.ts";

/** The shapes of the cluster resources (SPEC §5), for the OpenAPI document and the tests. */

export const ManagedAnswer = RunAnswer.extend({
  decisionId: z.string(),
  evaluatedAtMs: z.number().int(),
  stateVersion: z.number().int().describe("The stored version after this run; +1 per saved run"),
}).meta({ id: "ManagedAnswer" });

export const DecisionSummary = z
  .object({
    decisionId: z.string(),
    evaluatedAtMs: z.number().int(),
    electionCount: z.number().int(),
    moreWorkRemains: z.boolean(),
    nextDelayMs: z.number().int(),
    deferred: z.enum(["throttle", "rebalance-disabled"]).nullable(),
    gatedBrokers: z.array(z.number().int()),
    maxWaitExpiredBrokers: z.array(z.number().int()),
    snapshotId: z.string().optional().describe("The stored snapshot a tick ran on"),
    tickKey: z.string().optional().describe("The tick job that ran it: <scheduled time>#<run>"),
  })
  .meta({ id: "DecisionSummary" });

export const SnapshotMeta = z
  .object({
    snapshotId: z.string(),
    receivedAtMs: z.number().int(),
    partitionCount: z.number().int(),
    compressedBytes: z.number().int(),
    chunks: z.number().int().describe("Items the gzip'd snapshot is split across (at most 16 of 350 KB)"),
  })
  .meta({ id: "SnapshotMeta" });

export const TickOutcome = z
  .object({
    atMs: z.number().int(),
    outcome: z.enum([
      "ran",
      "not-enabled",
      "not-due",
      "no-snapshot",
      "stale-snapshot",
      "snapshot-unchanged",
      "failed",
    ]),
    detail: z.string().optional(),
    decisionId: z.string().optional(),
  })
  .meta({ id: "TickOutcome" });

export const ClusterView = z
  .object({
    clusterId: z.string(),
    stateVersion: z.number().int(),
    config: ConfigOverrides.describe("The cluster's stored overrides"),
    effectiveConfig: ConfigOverrides.required(),
    gate: z.array(GateEntry).describe("Brokers inside a gating episode"),
    lastRunAtMs: z.number().int().nullable(),
    lastRunCapped: z.boolean(),
    lastDecision: DecisionSummary.nullable(),
    snapshot: SnapshotMeta.extend({ ageMs: z.number().int() }).nullable(),
    lastTick: TickOutcome.nullable(),
  })
  .meta({ id: "ClusterView" });

export const FleetConfigView = z
  .object({ config: ConfigOverrides, effectiveConfig: ConfigOverrides.required() })
  .meta({ id: "FleetConfigView" });

export const FleetRow = z
  .object({
    clusterId: z.string(),
    stateVersion: z.number().int(),
    gatedBrokers: z.array(z.number().int()),
    lastRunAtMs: z.number().int().nullable(),
    lastElectionCount: z.number().int().nullable(),
    moreWorkRemains: z.boolean(),
    nextRunDueAtMs: z.number().int().nullable(),
    snapshotAgeMs: z.number().int().nullable(),
    ticking: z.boolean(),
    lastTick: TickOutcome.nullable(),
  })
  .meta({ id: "FleetRow" });

export const FleetListing = z
  .object({ clusters: z.array(FleetRow), cursor: z.string().optional() })
  .meta({ id: "FleetListing" });

export const DecisionList = z
  .object({ decisions: z.array(ManagedAnswer.omit({ partitions: true })) })
  .meta({ id: "DecisionList" });
