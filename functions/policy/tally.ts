import { DISPOSITIONS, type Disposition } from "../../schemas/answer.ts";
import type { Broker, Snapshot } from "../../schemas/snapshot.ts";
import {
  activityOf,
  type BrokerActivity,
  guardOf,
  ineligibility,
  isImbalanced,
  preferredReplicaOf,
} from "./eligibility.ts";

/** What one pass over the snapshot learns about each broker as a preferred replica. */
export interface BrokerTally {
  id: number;
  activity: BrokerActivity;
  /** |G(b)|: imbalanced, unguarded partitions whose preferred replica is b. */
  groupSize: number;
  /** Partitions of G(b) whose preferred replica is not in the ISR. */
  outOfSync: number;
  /** Unguarded partitions, balanced or not, listed with preferred replica b. */
  unguardedListed: number;
  /** The broker's own count of its unguarded preferred partitions, when the snapshot gives it. */
  preferredCount: number | undefined;
  /** Extension: the bytes its out-of-sync replicas still have to fetch, when the snapshot gives it. */
  lagBytes: number | undefined;
  /** Snapshot indices of eligible partitions, in snapshot order. */
  eligible: number[];
}

/** Dispositions as small codes (0 = balanced) so that a run allocates one byte per partition, not an object. */
export const BALANCED = 0;
export const dispositionCode = (d: Disposition): number => DISPOSITIONS.indexOf(d) + 1;
export const dispositionOf = (code: number): Disposition => DISPOSITIONS[code - 1] as Disposition;

export interface SnapshotTally {
  /** Every broker that is the preferred replica of some listed partition, by id. */
  brokers: Map<number, BrokerTally>;
  /** Whether a broker is active comes from the snapshot's broker list, whether or not it has a group. */
  activityOf(id: number): BrokerActivity;
  imbalancedCount: number;
  /** Per snapshot index; eligible partitions are left for the run to decide. Only when explaining. */
  codes: Uint8Array | null;
}

export function tallySnapshot(snapshot: Snapshot, explain: boolean): SnapshotTally {
  const listed = new Map<number, Broker>();
  for (const broker of snapshot.brokers) listed.set(broker.id, broker);

  const brokers = new Map<number, BrokerTally>();
  const tallyOf = (id: number): BrokerTally => {
    let tally = brokers.get(id);
    if (tally === undefined) {
      const broker = listed.get(id);
      tally = {
        id,
        activity: activityOf(broker),
        groupSize: 0,
        outOfSync: 0,
        unguardedListed: 0,
        preferredCount: broker?.preferredCount,
        lagBytes: broker?.lagBytes,
        eligible: [],
      };
      brokers.set(id, tally);
    }
    return tally;
  };

  const codes = explain ? new Uint8Array(snapshot.partitions.length) : null;
  let imbalancedCount = 0;
  snapshot.partitions.forEach((partition, index) => {
    const guard = guardOf(partition);
    const imbalanced = isImbalanced(partition);
    if (guard === null && !imbalanced) {
      tallyOf(preferredReplicaOf(partition)).unguardedListed++;
      return;
    }
    if (!imbalanced) return;
    imbalancedCount++;
    if (guard !== null) {
      if (codes) codes[index] = dispositionCode(guard);
      return;
    }

    const tally = tallyOf(preferredReplicaOf(partition));
    tally.unguardedListed++;
    tally.groupSize++;
    const inIsr = partition.isr.includes(tally.id);
    if (!inIsr) tally.outOfSync++;
    const reason = ineligibility(partition, tally.activity, inIsr);
    if (reason === null) tally.eligible.push(index);
    else if (codes) codes[index] = dispositionCode(reason);
  });
  return { brokers, activityOf: (id) => activityOf(listed.get(id)), imbalancedCount, codes };
}
