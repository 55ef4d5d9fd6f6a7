import type { CatchUpModel, Scenario } from "../../schemas/scenario.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { seededRandom } from "./random.ts";

/**
 * A cluster on a virtual clock: brokers 1..N, replication factor 3, preferred replicas spread evenly
 * (partition i prefers broker i mod N + 1, followed by the next two). Restarted brokers are fenced while
 * down and out of every ISR, then re-enter each partition's ISR at a time the catch-up model draws.
 */
export class ClusterModel {
  readonly brokerCount: number;
  readonly partitionCount: number;
  /** Per partition: the leader now (-1 for none). */
  private readonly leaders: Int32Array;
  /** Per restarted broker, per partition it replicates: when it is back in that partition's ISR. */
  private readonly backInSyncAtMs = new Map<number, Float64Array>();
  private readonly restarts: Map<number, { downAtMs: number; upAtMs: number }>;
  private readonly pendingFailovers: { atMs: number; broker: number }[];

  constructor(private readonly scenario: Scenario) {
    const { brokers, partitionsPerBroker } = scenario.cluster;
    this.brokerCount = brokers;
    this.partitionCount = brokers * partitionsPerBroker;
    this.leaders = new Int32Array(this.partitionCount);
    for (let i = 0; i < this.partitionCount; i++) this.leaders[i] = this.replicasOf(i)[0] as number;
    this.restarts = new Map(
      scenario.restarts.map(({ broker, downAtMs, upAtMs }) => [broker, { downAtMs, upAtMs }]),
    );
    this.pendingFailovers = scenario.restarts
      .map(({ broker, downAtMs }) => ({ atMs: downAtMs, broker }))
      .sort((a, b) => a.atMs - b.atMs);
    const random = seededRandom(scenario.seed);
    for (const { broker, upAtMs } of scenario.restarts) {
      this.backInSyncAtMs.set(broker, this.drawCatchUp(broker, upAtMs, scenario.catchUp, random));
    }
  }

  replicasOf(partition: number): [number, number, number] {
    const preferred = (partition % this.brokerCount) + 1;
    const next = (id: number) => (id % this.brokerCount) + 1;
    return [preferred, next(preferred), next(next(preferred))];
  }

  /** Preferred replicas are spread evenly: every broker is the preferred replica of as many partitions. */
  get preferredPerBroker(): number {
    return this.partitionCount / this.brokerCount;
  }

  isDown(broker: number, atMs: number): boolean {
    const restart = this.restarts.get(broker);
    return restart !== undefined && atMs >= restart.downAtMs && atMs < restart.upAtMs;
  }

  unfencedAtMs(broker: number): number {
    return this.restarts.get(broker)?.upAtMs ?? 0;
  }

  inIsr(broker: number, partition: number, atMs: number): boolean {
    const restart = this.restarts.get(broker);
    if (restart === undefined || atMs < restart.downAtMs) return true;
    if (atMs < restart.upAtMs) return false;
    return atMs >= (this.backInSyncAtMs.get(broker)?.[partition] ?? 0);
  }

  /** The controller's own failover: a broker going down loses its leaderships to the next in-sync replica. */
  advanceTo(atMs: number): void {
    while (this.pendingFailovers.length > 0 && (this.pendingFailovers[0]?.atMs ?? Infinity) <= atMs) {
      const { atMs: downAtMs, broker } = this.pendingFailovers.shift() as { atMs: number; broker: number };
      for (let i = 0; i < this.partitionCount; i++) {
        if (this.leaders[i] !== broker) continue;
        this.leaders[i] = this.replicasOf(i).find((r) => r !== broker && this.inIsr(r, i, downAtMs)) ?? -1;
      }
    }
  }

  /** What a controller would send: the brokers, and only the imbalanced partitions (with preferredCount). */
  snapshotAt(atMs: number): Snapshot {
    const brokers = Array.from({ length: this.brokerCount }, (_, k) => ({
      id: k + 1,
      fenced: this.isDown(k + 1, atMs),
      preferredCount: this.preferredPerBroker,
    }));
    const partitions: Snapshot["partitions"] = [];
    const perTopic = this.scenario.cluster.partitionsPerTopic;
    for (let i = 0; i < this.partitionCount; i++) {
      const replicas = this.replicasOf(i);
      const leader = this.leaders[i] as number;
      if (leader === replicas[0]) continue;
      partitions.push({
        topic: `topic-${String(Math.floor(i / perTopic)).padStart(4, "0")}`,
        partition: i % perTopic,
        replicas,
        isr: replicas.filter((r) => this.inIsr(r, i, atMs)),
        leader,
      });
    }
    return { brokers, partitions };
  }

  /** Carries out preferred-leader elections, as `kafka-leader-election.sh` would. */
  elect(elections: { topic: string; partition: number; leader: number }[]): void {
    const perTopic = this.scenario.cluster.partitionsPerTopic;
    for (const { topic, partition, leader } of elections) {
      this.leaders[Number(topic.slice("topic-".length)) * perTopic + partition] = leader;
    }
  }

  /** How many of the broker's preferred partitions it leads, and how many it is not in sync on. */
  standingOf(broker: number, atMs: number): { leading: number; outOfSync: number } {
    let leading = 0;
    let outOfSync = 0;
    for (let i = broker - 1; i < this.partitionCount; i += this.brokerCount) {
      if (this.leaders[i] === broker) leading++;
      if (!this.inIsr(broker, i, atMs)) outOfSync++;
    }
    return { leading, outOfSync };
  }

  private drawCatchUp(
    broker: number,
    upAtMs: number,
    model: CatchUpModel,
    random: () => number,
  ): Float64Array {
    const times = new Float64Array(this.partitionCount);
    for (let i = 0; i < this.partitionCount; i++) times[i] = upAtMs + drawDelayMs(model, random);
    // Stuck stragglers: a fixed draw of the broker's preferred partitions never catches up.
    const preferred = Array.from(
      { length: this.preferredPerBroker },
      (_, k) => broker - 1 + k * this.brokerCount,
    );
    const stuck = Math.round(model.stuckShare * preferred.length) + model.stuckCount;
    for (let k = 0; k < stuck && preferred.length > 0; k++) {
      const [partition] = preferred.splice(Math.floor(random() * preferred.length), 1);
      times[partition as number] = Infinity;
    }
    return times;
  }
}

/** Pareto shape of the long tail: most partitions are quick, a few take many times the median. */
const TAIL_SHAPE = 1.5;

function drawDelayMs(model: CatchUpModel, random: () => number): number {
  if (model.kind === "staggered-uniform") {
    const maxMs = model.maxMs ?? model.minMs;
    return model.minMs + random() * (maxMs - model.minMs);
  }
  const medianMs = model.medianMs ?? 60_000;
  const scale = medianMs / (2 ** (1 / TAIL_SHAPE) - 1);
  const tail = scale * ((1 - random()) ** (-1 / TAIL_SHAPE) - 1);
  return model.minMs + Math.min(tail, medianMs * 100);
}
