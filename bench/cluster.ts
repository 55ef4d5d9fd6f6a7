import { seededRandom } from "../functions/simulate/random.ts";
import type { Snapshot } from "../schemas/snapshot.ts";

export interface RecoveringClusterOptions {
  brokers: number;
  partitions: number;
  partitionsPerTopic: number;
  /** Share of all preferred replicas that the recovering broker (id 0) owns. */
  recoveringShare: number;
  /** Of the recovering broker's preferred partitions, the share already back in ISR. */
  caughtUpShare: number;
  seed: number;
}

/**
 * A cluster the moment after broker 0 restarted: leadership of its preferred partitions moved to the
 * second replica; some of them are back in ISR, the rest still catching up. Elsewhere a few followers lag.
 */
export function recoveringCluster(options: RecoveringClusterOptions): Snapshot {
  const random = seededRandom(options.seed);
  const brokers = Array.from({ length: options.brokers }, (_, id) => ({ id, fenced: false }));
  const partitions: Snapshot["partitions"] = [];
  for (let i = 0; i < options.partitions; i++) {
    const recovering = random() < options.recoveringShare;
    const preferred = recovering ? 0 : 1 + Math.floor(random() * (options.brokers - 1));
    const second = 1 + ((preferred + Math.floor(random() * (options.brokers - 2))) % (options.brokers - 1));
    let third = 1 + Math.floor(random() * (options.brokers - 1));
    while (third === second || third === preferred) third = 1 + ((third + 1) % (options.brokers - 1));
    const replicas = [preferred, second, third];
    let isr = replicas;
    let leader = preferred;
    if (recovering) {
      leader = second;
      isr = random() < options.caughtUpShare ? [second, third, preferred] : [second, third];
    } else if (random() < 0.01) {
      isr = [preferred, second];
    }
    partitions.push({
      topic: `topic-${Math.floor(i / options.partitionsPerTopic)}`,
      partition: i % options.partitionsPerTopic,
      replicas,
      isr,
      leader,
    });
  }
  return { brokers, partitions };
}
