import type { Snapshot } from "../../schemas/snapshot.ts";
import {
  type KafkaAdminClient,
  type KafkaBroker,
  type KafkaPartition,
  partitionKey,
  type ReplicaSizes,
  type TopicPartition,
} from "../kafka/admin.ts";

/** What one read of a live cluster returned: the three admin calls of the agent's run. */
export interface ClusterRead {
  brokers: KafkaBroker[];
  partitions: KafkaPartition[];
  reassigning: TopicPartition[];
  /** Read only for the max-lag-bytes gate (extension). */
  replicaSizes?: ReplicaSizes;
}

/** One read of the cluster: three admin calls, four with the replicas' sizes (the max-lag-bytes gate). */
export async function readCluster(kafka: KafkaAdminClient, withReplicaSizes = false): Promise<ClusterRead> {
  const { brokers } = await kafka.describeCluster();
  const partitions = await kafka.describePartitions();
  const reassigning = await kafka.listReassignments();
  const replicaSizes = withReplicaSizes ? await kafka.replicaSizes() : undefined;
  return { brokers, partitions, reassigning, replicaSizes };
}

/**
 * Per broker, the bytes its out-of-sync replicas still have to fetch: for each partition where it is a
 * replica outside the ISR, the leader's log size less its own (its whole log when it has none yet). A
 * broker is left out — the gate then holds it — when it, or the leader of one of those partitions, did
 * not answer: a lag that cannot be measured is not taken to be zero.
 */
export function lagBytesOf(partitions: KafkaPartition[], sizes: ReplicaSizes): Map<number, number> {
  const lag = new Map<number, number>([...sizes.answered].map((id) => [id, 0]));
  const unknown = new Set<number>();
  for (const p of partitions) {
    if (p.leader < 0) continue; // nothing to fetch from: no lag to count, and no leadership to give
    const perBroker = sizes.bytes.get(partitionKey(p));
    for (const id of p.replicas) {
      if (p.isr.includes(id)) continue;
      const leaderBytes = perBroker?.get(p.leader);
      if (!sizes.answered.has(p.leader) || leaderBytes === undefined || !sizes.answered.has(id)) {
        unknown.add(id);
        continue;
      }
      lag.set(id, (lag.get(id) ?? 0) + Math.max(0, leaderBytes - (perBroker?.get(id) ?? 0)));
    }
  }
  for (const id of unknown) lag.delete(id);
  return lag;
}

/**
 * The SPEC §3 snapshot of a live Kafka 4.x cluster. No client API shows controlled shutdown and KRaft
 * has no "being deleted" state, so both are sent as false: the controller refuses an election onto a
 * broker in controlled shutdown (error 80), and a deleted topic is simply gone. A partition carries
 * `elr` and `reassigning` only when they say something (both are optional): at 30,000 partitions the
 * snapshot is a third smaller, and encoding and parsing it were most of a run's decision.
 */
export function snapshotOf(read: ClusterRead): Snapshot {
  const reassigning = new Set(read.reassigning.map(partitionKey));
  const lag = read.replicaSizes ? lagBytesOf(read.partitions, read.replicaSizes) : undefined;
  return {
    brokers: read.brokers
      .map((b) => ({
        id: b.id,
        fenced: b.fenced,
        inControlledShutdown: false,
        ...(lag?.has(b.id) ? { lagBytes: lag.get(b.id) } : {}),
      }))
      .sort((a, b) => a.id - b.id),
    partitions: read.partitions
      // A partition whose replica list is empty cannot be elected and is not valid in a snapshot.
      .filter((p) => p.replicas.length > 0)
      .map((p) => {
        // Kafka lists only replicas in the ISR and ELR; this keeps the snapshot valid if it ever did not.
        const elr = p.elr.filter((id) => p.replicas.includes(id));
        return {
          topic: p.topic,
          partition: p.partition,
          replicas: p.replicas,
          isr: p.isr.filter((id) => p.replicas.includes(id)),
          leader: p.replicas.includes(p.leader) ? p.leader : -1,
          ...(elr.length > 0 ? { elr } : {}),
          ...(reassigning.has(partitionKey(p)) ? { reassigning: true } : {}),
        };
      }),
  };
}
