import type { CatchUpThrottle } from "../../schemas/answer.ts";
import type { EffectiveConfig } from "../../schemas/config.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { activityOf, guardOf } from "./eligibility.ts";

/**
 * Extension (catch-up pacing): while an active broker hosts replicas outside the ISR, its catch-up is
 * throttled to `pacer.catch.up.replication.throttled.rate` bytes/s, on exactly those replicas.
 *
 * Why these replicas and no others: Kafka's follower throttle (`ReplicaFetcherThread.
 * shouldFollowerThrottle`) leaves a listed partition out of the fetch only while it is not caught up,
 * but every listed partition's bytes count against the quota; listing only the replicas still
 * catching up keeps the partitions the broker is in sync on, whose fetches `acks=all` producers wait
 * for, out of the quota altogether.
 *
 * Only active brokers: a fenced or offline broker fetches nothing, and Kafka takes a broker's own
 * dynamic config only through a request sent to that broker. Partitions being reassigned or deleted
 * are left to whoever moves them (a reassignment sets throttles of its own), and a leaderless one has
 * nobody to fetch from. Pure: the snapshot and the config decide; the agent carries it out and lifts
 * it once a broker is no longer in the answer.
 */
export function catchUpThrottles(snapshot: Snapshot, config: EffectiveConfig): CatchUpThrottle[] {
  const rateBytesPerSecond = config["pacer.catch.up.replication.throttled.rate"];
  if (rateBytesPerSecond === 0) return [];
  const listed = new Map(snapshot.brokers.map((broker) => [broker.id, broker]));
  /** broker → topic → partitions it is catching up on, in snapshot order. */
  const behind = new Map<number, Map<string, number[]>>();
  for (const partition of snapshot.partitions) {
    if (guardOf(partition) !== null || partition.leader === -1) continue;
    for (const replica of partition.replicas) {
      if (partition.isr.includes(replica) || activityOf(listed.get(replica)) !== "active") continue;
      const topics = behind.get(replica) ?? new Map<string, number[]>();
      behind.set(replica, topics);
      const partitions = topics.get(partition.topic) ?? [];
      topics.set(partition.topic, partitions);
      partitions.push(partition.partition);
    }
  }
  return [...behind]
    .sort(([a], [b]) => a - b)
    .map(([broker, topics]) => {
      const replicas = [...topics]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([topic, partitions]) => ({ topic, partitions: partitions.sort((a, b) => a - b) }));
      const outOfSync = replicas.reduce((sum, r) => sum + r.partitions.length, 0);
      return { broker, rateBytesPerSecond, outOfSync, replicas };
    });
}
