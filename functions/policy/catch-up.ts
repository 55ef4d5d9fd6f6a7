import type { CatchUpThrottle } from "../../schemas/answer.ts";
import type { EffectiveConfig } from "../../schemas/config.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { activityOf, guardOf } from "./eligibility.ts";

/**
 * Extension (catch-up pacing): while an active broker hosts replicas outside the ISR, its catch-up is
 * held to `pacer.catch.up.replication.throttled.rate` bytes/s with Kafka's replication quota, on
 * exactly those replicas, on the side `pacer.catch.up.replication.throttled.side` names: the broker
 * itself by default, which on the load-test bed held producers back far less than its leaders did.
 *
 * Why these replicas and no others: every listed partition's bytes count against the quota, so
 * listing `*` would let the partitions the broker is in sync on, whose fetches `acks=all` producers
 * wait for, use it up.
 *
 * Either side spares the partitions the broker is in sync on: the leader withholds a partition's data
 * only from a follower outside its ISR (`ReplicaManager.shouldLeaderThrottle`), and the follower leaves
 * out of its fetch only a partition it is behind on by the last answer's high watermark
 * (`ReplicaFetcherThread.shouldFollowerThrottle`), which an ISR member never is. On the leader side the
 * rate is per leader: the broker's rate is shared among the leaders of its replicas behind, by how
 * many of them each leads.
 *
 * Only active brokers: a fenced or offline broker fetches nothing, and Kafka takes a broker's own
 * dynamic config only through a request sent to that broker. Partitions being reassigned or deleted
 * are left to whoever moves them (a reassignment sets throttles of its own), and a leaderless one has
 * nobody to fetch from. Pure: the snapshot and the config decide; the agent carries it out and lifts
 * it once a broker is no longer in the answer. `awaited`: some broker that is not active hosts replicas
 * behind (a restart in progress), for which the next run comes within {@link CATCH_UP_WATCH_MS}.
 */
export function catchUpPacing(
  snapshot: Snapshot,
  config: EffectiveConfig,
): { throttles: CatchUpThrottle[]; awaited: boolean } {
  const rateBytesPerSecond = config["pacer.catch.up.replication.throttled.rate"];
  if (rateBytesPerSecond === 0) return { throttles: [], awaited: false };
  const side = config["pacer.catch.up.replication.throttled.side"];
  const listed = new Map(snapshot.brokers.map((broker) => [broker.id, broker]));
  /** broker behind → its replicas behind, each with the partition's leader, in snapshot order. */
  const behind = new Map<number, { topic: string; partition: number; leader: number }[]>();
  let awaited = false;
  for (const partition of snapshot.partitions) {
    if (guardOf(partition) !== null || partition.leader === -1) continue;
    for (const replica of partition.replicas) {
      if (partition.isr.includes(replica)) continue;
      if (activityOf(listed.get(replica)) !== "active") {
        awaited = true;
        continue;
      }
      const replicas = behind.get(replica) ?? [];
      behind.set(replica, replicas);
      replicas.push({ topic: partition.topic, partition: partition.partition, leader: partition.leader });
    }
  }
  const throttles = [...behind]
    .sort(([a], [b]) => a - b)
    .map(([broker, replicas]) => ({
      broker,
      rateBytesPerSecond,
      outOfSync: replicas.length,
      replicas: byTopic(replicas),
      side,
      leaders: side === "leader" ? leaderShares(replicas, rateBytesPerSecond) : [],
    }));
  return { throttles, awaited };
}

/** Each leader's share of the rate, by how many of the replicas behind it leads (at least 1 byte/s). */
function leaderShares(
  replicas: { topic: string; partition: number; leader: number }[],
  rateBytesPerSecond: number,
): CatchUpThrottle["leaders"] {
  const byLeader = new Map<number, { topic: string; partition: number }[]>();
  for (const replica of replicas) {
    const led = byLeader.get(replica.leader) ?? [];
    byLeader.set(replica.leader, led);
    led.push(replica);
  }
  return [...byLeader]
    .sort(([a], [b]) => a - b)
    .map(([broker, led]) => ({
      broker,
      rateBytesPerSecond: Math.max(1, Math.floor((rateBytesPerSecond * led.length) / replicas.length)),
      replicas: byTopic(led),
    }));
}

/** Partitions grouped by topic: topics in ordinal order, partitions ascending. */
function byTopic(replicas: { topic: string; partition: number }[]): CatchUpThrottle["replicas"] {
  const topics = new Map<string, number[]>();
  for (const { topic, partition } of replicas) {
    const partitions = topics.get(topic) ?? [];
    topics.set(topic, partitions);
    partitions.push(partition);
  }
  return [...topics]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([topic, partitions]) => ({ topic, partitions: partitions.sort((a, b) => a - b) }));
}

/**
 * While a broker is down with replicas behind (a restart in progress), the next run comes within this
 * long, so that its throttle is set as soon as it is back rather than a check interval later: the
 * catch-up's first seconds are the ones at the link's full speed.
 */
export const CATCH_UP_WATCH_MS = 1000;
