import type { Snapshot } from "../../schemas/snapshot.ts";
import type { KafkaBroker, KafkaPartition, TopicPartition } from "../kafka/admin.ts";

/** What one read of a live cluster returned: the three admin calls of the agent's run. */
export interface ClusterRead {
  brokers: KafkaBroker[];
  partitions: KafkaPartition[];
  reassigning: TopicPartition[];
}

/**
 * The SPEC §3 snapshot of a live Kafka 4.x cluster. No client API shows controlled shutdown and KRaft
 * has no "being deleted" state, so both are sent as false: the controller refuses an election onto a
 * broker in controlled shutdown (error 80), and a deleted topic is simply gone.
 */
export function snapshotOf(read: ClusterRead): Snapshot {
  const reassigning = new Set(read.reassigning.map(keyOf));
  return {
    brokers: read.brokers
      .map((b) => ({ id: b.id, fenced: b.fenced, inControlledShutdown: false }))
      .sort((a, b) => a.id - b.id),
    partitions: read.partitions
      // A partition whose replica list is empty cannot be elected and is not valid in a snapshot.
      .filter((p) => p.replicas.length > 0)
      .map((p) => ({
        topic: p.topic,
        partition: p.partition,
        replicas: p.replicas,
        // Kafka lists only replicas in the ISR and ELR; this keeps the snapshot valid if it ever did not.
        isr: p.isr.filter((id) => p.replicas.includes(id)),
        leader: p.replicas.includes(p.leader) ? p.leader : -1,
        elr: p.elr.filter((id) => p.replicas.includes(id)),
        reassigning: reassigning.has(keyOf(p)),
        deleting: false,
      })),
  };
}

const keyOf = (p: TopicPartition) => `${p.topic}\u0000${p.partition}`;
