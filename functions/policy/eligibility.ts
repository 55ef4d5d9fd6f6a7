import type { BROKER_ACTIVITIES, Disposition } from "../../schemas/answer.ts";
import type { Broker, Partition } from "../../schemas/snapshot.ts";

/** Imbalanced: the preferred replica (replicas[0]) is not the leader; a leaderless partition is imbalanced. */
export function preferredReplicaOf(partition: Partition): number {
  return partition.replicas[0] as number;
}

export function isImbalanced(partition: Partition): boolean {
  return partition.leader !== preferredReplicaOf(partition);
}

/** The reassignment and deletion guards apply before the gate; such partitions are outside every group. */
export function guardOf(partition: Partition): "reassigning" | "deleting" | null {
  if (partition.reassigning) return "reassigning";
  if (partition.deleting) return "deleting";
  return null;
}

export type BrokerActivity = (typeof BROKER_ACTIVITIES)[number];

export function activityOf(broker: Broker | undefined): BrokerActivity {
  if (broker === undefined) return "unregistered";
  if (broker.fenced) return "fenced";
  if (broker.inControlledShutdown) return "in-controlled-shutdown";
  return "active";
}

const INACTIVE_PREFERRED: Record<Exclude<BrokerActivity, "active">, Disposition> = {
  fenced: "preferred-fenced",
  "in-controlled-shutdown": "preferred-in-controlled-shutdown",
  unregistered: "preferred-unregistered",
};

/**
 * Kafka parity for an imbalanced, unguarded partition: the preferred replica must be active and in the
 * ISR, or, when the ISR is empty, in the ELR. Returns why it is not eligible, or null when it is.
 */
export function ineligibility(
  partition: Partition,
  preferredActivity: BrokerActivity,
  preferredInIsr: boolean,
): Disposition | null {
  if (preferredActivity !== "active") return INACTIVE_PREFERRED[preferredActivity];
  if (preferredInIsr) return null;
  const preferred = preferredReplicaOf(partition);
  if (partition.isr.length === 0 && partition.elr?.includes(preferred)) return null;
  return "preferred-not-in-isr";
}
