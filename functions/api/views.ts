import * as z from "zod";
import { RunAnswer } from "../../schemas/answer.ts";
import { ConfigOverrides } from "../../schemas/config.ts";
import { GateEntry } from "../../schemas/state.ts";
import { REACH_FAILURES, RECOVERY_PHASES } from "../store/store.ts";

/** The shapes of the cluster resources (SPEC §5), for the OpenAPI document and the tests. */

export const ManagedAnswer = RunAnswer.extend({
  decisionId: z.string(),
  evaluatedAtMs: z.number().int(),
  stateVersion: z.number().int().describe("The stored version after this run; +1 per saved run"),
}).meta({ id: "ManagedAnswer" });

export const BrokerRecovery = z
  .object({
    id: z.number().int(),
    preferred: z.number().int().describe("Its unguarded preferred partitions"),
    inSync: z.number().int().describe("Of those, where it is in the ISR"),
    leading: z.number().int().describe("Of those, the ones it leads after this run's elections"),
    phase: z.enum(RECOVERY_PHASES),
    timeLeftMs: z
      .number()
      .int()
      .nullable()
      .describe(
        "Until it leads all, at this run's pace (moves per run, delay between runs); null while gated or while nothing moves",
      ),
  })
  .meta({ id: "BrokerRecovery", description: "How far along a recovering broker is after a run" });

export const CarriedOut = z
  .object({
    asked: z.number().int(),
    done: z.number().int(),
    notNeeded: z.number().int(),
    failed: z.record(z.string(), z.number().int()).describe("Per Kafka error code"),
    requestError: z.string().optional(),
    notCarriedOut: z
      .string()
      .optional()
      .describe("Why nothing was asked of Kafka: the read had grown too old"),
    throttledBrokers: z.array(z.number().int()).optional().describe("Catch-up throttled after the run"),
    throttleErrors: z.array(z.string()).optional(),
  })
  .meta({
    id: "CarriedOut",
    description: "A cluster the worker reaches itself: what it carried out of the run's batch",
  });

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
    recovering: z.array(BrokerRecovery).optional().describe("Up to 8 recovering brokers"),
    snapshotId: z.string().optional().describe("The stored snapshot a tick ran on"),
    tickKey: z.string().optional().describe("The tick job that ran it: <scheduled time>#<run>"),
    carriedOut: CarriedOut.optional(),
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
      "unreachable",
      "failed",
    ]),
    detail: z.string().optional(),
    decisionId: z.string().optional(),
    reach: z
      .enum(REACH_FAILURES)
      .optional()
      .describe(
        "With unreachable: no broker answered (unreachable), the TLS handshake failed (tls), SASL refused the credentials (authentication), Kafka refused an operation (authorization), or the connection could not be set up from what is registered (setup: a secret missing or not in its shape)",
      ),
    carriedOut: CarriedOut.optional(),
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
    connected: z
      .boolean()
      .describe("A connection is registered: the worker reads the cluster and elects itself"),
    deferredRuns: z
      .number()
      .int()
      .describe("Runs deferred by the throttle or with rebalancing off: they save no state and no decision"),
    lastDeferred: z
      .object({ atMs: z.number().int(), reason: z.enum(["throttle", "rebalance-disabled"]) })
      .nullable(),
  })
  .meta({ id: "ClusterView" });

export const BrokerReadinessView = z
  .object({
    clusterId: z.string(),
    broker: z.number().int(),
    ready: z
      .boolean()
      .describe(
        "Back, as far as the last run saw: active, in sync on its preferred partitions, leading 99 % of them, and the run no older than pacer.snapshot.max.age.ms",
      ),
    reasons: z.array(z.string()).describe("What is missing, in words; empty when ready"),
    recovery: BrokerRecovery.nullable().describe(
      "null: the last run had nothing for it to take back and nothing holding it",
    ),
    lastRun: z
      .object({ decisionId: z.string(), evaluatedAtMs: z.number().int(), ageMs: z.number().int() })
      .nullable(),
  })
  .meta({ id: "BrokerReadiness" });

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
    carriedOut: CarriedOut.nullable().describe(
      "A cluster the worker reaches itself: what became of the last run's batch",
    ),
    moreWorkRemains: z.boolean(),
    nextRunDueAtMs: z.number().int().nullable(),
    snapshotAgeMs: z.number().int().nullable(),
    ticking: z.boolean(),
    connected: z
      .boolean()
      .describe("A connection is registered: the worker reads the cluster and elects itself"),
    lastTick: TickOutcome.nullable(),
    recovering: z.array(BrokerRecovery).describe("From the last run: up to 8 recovering brokers"),
  })
  .meta({ id: "FleetRow" });

export const FleetListing = z
  .object({ clusters: z.array(FleetRow), cursor: z.string().optional() })
  .meta({ id: "FleetListing" });

export const DecisionList = z
  .object({ decisions: z.array(ManagedAnswer.omit({ partitions: true })) })
  .meta({ id: "DecisionList" });
