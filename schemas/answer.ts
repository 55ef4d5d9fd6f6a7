import * as z from "zod";
import { ConfigOverrides } from "./config.ts";
import { PacerState } from "./state.ts";

/** What one run answers (SPEC §4–§5). */

export const DISPOSITIONS = [
  "elected",
  "skipped-gated",
  "deferred-cap",
  "deferred-internal",
  "deferred-throttle",
  "rebalance-disabled",
  "reassigning",
  "deleting",
  "preferred-unregistered",
  "preferred-fenced",
  "preferred-in-controlled-shutdown",
  "preferred-not-in-isr",
] as const;
export const Disposition = z.enum(DISPOSITIONS).meta({
  id: "Disposition",
  description:
    "What a run did with an imbalanced partition. rebalance-disabled: eligible, but auto.leader.rebalance.enable is false.",
});
export type Disposition = z.infer<typeof Disposition>;

export const GATE_REASONS = [
  "over-threshold",
  "over-max-lag-bytes",
  "hysteresis",
  "released",
  "max-wait-expired",
  "under-threshold",
  "inactive",
  "algorithm-immediate",
  "throttle-deferred",
  "rebalance-disabled",
] as const;
export const GateReason = z.enum(GATE_REASONS).meta({
  id: "GateReason",
  description:
    "Why a broker is or is not gated. The gate holds a broker back for over-threshold, over-max-lag-bytes (extension) and hysteresis only.",
});
export type GateReason = z.infer<typeof GateReason>;

export const BROKER_ACTIVITIES = ["active", "fenced", "in-controlled-shutdown", "unregistered"] as const;

export const Election = z
  .object({ topic: z.string(), partition: z.number().int(), leader: z.number().int() })
  .meta({ id: "Election", description: "A preferred-leader election: leader is the preferred replica." });
export type Election = z.infer<typeof Election>;

export const BrokerRow = z
  .object({
    id: z.number().int(),
    gated: z.boolean(),
    reason: GateReason,
    outOfSync: z.number().int().describe("Partitions of the broker's group where it is not in the ISR"),
    total: z.number().int().describe("The gate's denominator under the configured basis"),
    preferred: z
      .number()
      .int()
      .describe(
        "Its unguarded preferred partitions: brokers[].preferredCount when the snapshot gives it, else those listed",
      ),
    imbalanced: z
      .number()
      .int()
      .describe(
        "Of those, the ones it does not lead: it leads preferred − imbalanced, is in sync on preferred − outOfSync",
      ),
    activity: z
      .enum(BROKER_ACTIVITIES)
      .describe("From the snapshot's broker list: unregistered when it is not listed (offline)"),
    lagBytes: z
      .number()
      .int()
      .optional()
      .describe(
        "Extension: the bytes its out-of-sync replicas still have to fetch, when the snapshot gives it",
      ),
    gatedSinceMs: z.number().int().nullable(),
    clearRuns: z.number().int().nullable(),
    eligible: z.number().int(),
    elected: z.number().int(),
    skippedByGate: z.number().int(),
    deferredByThrottle: z.number().int().describe("Deferred by the cap or the throttle"),
    deferredInternal: z
      .number()
      .int()
      .describe("Extension: internal-topic partitions held until its other eligible partitions are back"),
  })
  .meta({ id: "BrokerRow" });
export type BrokerRow = z.infer<typeof BrokerRow>;

const TopicPartitions = z.array(z.object({ topic: z.string(), partitions: z.array(z.number().int()) }));

export const CatchUpThrottle = z
  .object({
    broker: z.number().int().describe("The broker catching up"),
    rateBytesPerSecond: z
      .number()
      .int()
      .describe("What it may fetch a second for its replicas outside the ISR, from all leaders together"),
    outOfSync: z.number().int().describe("Replicas it hosts outside the ISR: the replicas below, counted"),
    replicas: TopicPartitions.describe("Its replicas outside the ISR, by topic"),
    side: z
      .enum(["leader", "follower"])
      .describe(
        "follower: the rate on this broker (follower.replication.throttled.rate), its replicas as partition:broker in follower.replication.throttled.replicas; leader: on each leader below",
      ),
    leaders: z
      .array(
        z.object({
          broker: z.number().int(),
          rateBytesPerSecond: z
            .number()
            .int()
            .describe("Its share of the rate, by the replicas it leads (leader.replication.throttled.rate)"),
          replicas: TopicPartitions.describe(
            "Those replicas: partition:leader in leader.replication.throttled.replicas",
          ),
        }),
      )
      .describe(
        "Leader side: the brokers leading its replicas outside the ISR, and each one's share; empty on the follower side",
      ),
  })
  .meta({
    id: "CatchUpThrottle",
    description:
      "Extension (catch-up pacing): a broker whose catch-up is throttled, on which replicas, at what rate, and where.",
  });
export type CatchUpThrottle = z.infer<typeof CatchUpThrottle>;

export const RunMetrics = z
  .object({
    outOfSyncPreferredPartitionCount: z
      .record(z.string(), z.number().int())
      .describe("Per broker id with a group; computed under both algorithms"),
    electionsSkippedByGate: z.number().int(),
    electionsDeferredByThrottle: z.number().int().describe("Deferred by the cap or the throttle"),
    gatedBrokerCount: z.number().int(),
    maxWaitExpiredBrokerCount: z.number().int().describe("Brokers let through by the escape hatch this run"),
    electionCount: z.number().int(),
    catchUpThrottledBrokerCount: z
      .number()
      .int()
      .describe("Extension: brokers whose catch-up this run throttles"),
  })
  .meta({ id: "RunMetrics" });
export type RunMetrics = z.infer<typeof RunMetrics>;

export const PartitionDisposition = z
  .object({
    topic: z.string(),
    partition: z.number().int(),
    preferredReplica: z.number().int(),
    disposition: Disposition,
  })
  .meta({ id: "PartitionDisposition" });
export type PartitionDisposition = z.infer<typeof PartitionDisposition>;

export const RunAnswer = z
  .object({
    elections: z.array(Election).describe("In selection order"),
    kafkaLeaderElection: z
      .object({ partitions: z.array(z.object({ topic: z.string(), partition: z.number().int() })) })
      .describe("The file kafka-leader-election.sh --path-to-json-file reads"),
    moreWorkRemains: z.boolean(),
    nextDelayMs: z.number().int(),
    deferred: z
      .enum(["throttle", "rebalance-disabled"])
      .nullable()
      .describe(
        "Why no run happened: the throttle interval after a capped run has not passed, or rebalancing is off",
      ),
    brokers: z.array(BrokerRow),
    catchUpThrottles: z
      .array(CatchUpThrottle)
      .describe(
        "Extension (pacer.catch.up.replication.throttled.rate > 0): every broker whose catch-up to throttle now, in ascending id; a broker not listed has nothing to throttle (lift what was set for it). Empty when off",
      ),
    metrics: RunMetrics,
    config: ConfigOverrides.required().describe("The effective configuration of this run"),
    state: PacerState.describe("The state to pass to the next run"),
    partitions: z.array(PartitionDisposition).optional().describe("With explain: every imbalanced partition"),
  })
  .meta({ id: "RunAnswer" });
export type RunAnswer = z.infer<typeof RunAnswer>;
