import type { CatchUpThrottle } from "../../schemas/answer.ts";
import type { ConfigChange, ConfigChangeResult, ConfigValue } from "../kafka/admin.ts";
import type { ThrottleRecord, ThrottleRecordStore } from "./throttle-record.ts";

/**
 * Carries out the answer's catch-up throttles with Kafka's own replication quota, as
 * `ReassignPartitionsCommand` does for a reassignment: the rate on the broker catching up
 * (`follower.replication.throttled.rate`), its replicas still behind in each topic's
 * `follower.replication.throttled.replicas`. What it sets is written down before it is set, so that it
 * can be lifted by the same hand after a crash, and nothing an operator set is raised or removed:
 *
 * - a broker with a rate already in place (its own, the cluster-wide default, or a static one) is left
 *   alone, its replicas not listed either, so its catch-up runs under the operator's rate;
 * - a topic whose list is `*` already throttles every replica; an entry already listed is not ours;
 * - list entries are APPENDed and SUBTRACTed one by one, never overwritten;
 * - a rate is deleted only while it still holds the value set here.
 */

export const FOLLOWER_RATE = "follower.replication.throttled.rate";
export const FOLLOWER_REPLICAS = "follower.replication.throttled.replicas";

/** The Kafka calls this needs, a subset of KafkaAdminClient. */
export interface ThrottleKafka {
  describeBrokerConfigs(brokerId: number, names: string[]): Promise<Map<string, ConfigValue>>;
  describeTopicConfigs(topics: string[], names: string[]): Promise<Map<string, Map<string, ConfigValue>>>;
  alterConfigs(changes: ConfigChange[], brokerId?: number): Promise<ConfigChangeResult[]>;
}

export interface ThrottleReport {
  /** Brokers throttled after this run, by the pacer. */
  throttled: { broker: number; rateBytesPerSecond: number; replicas: number; sinceMs: number }[];
  /** Brokers the answer throttles whose rate was someone else's: left as it is. */
  leftAlone: { broker: number; rate: string; source: string }[];
  /** Brokers whose throttle this run lifted. */
  lifted: number[];
  /** Config changes sent (or, on a dry run, that would have been). */
  changes: string[];
  /** What could not be done this run; it is tried again next run. */
  errors: string[];
}

const ERROR_UNKNOWN_TOPIC = 3;

export class CatchUpThrottler {
  private record: ThrottleRecord | undefined;

  constructor(
    private readonly kafka: ThrottleKafka,
    private readonly store: ThrottleRecordStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether anything set by the pacer is still in place (as far as its record knows). */
  async holdsAny(): Promise<boolean> {
    const record = await this.loaded();
    return Object.keys(record.brokers).length > 0 || Object.keys(record.replicas).length > 0;
  }

  /** Lifts everything the record holds: SIGTERM, or catch-up pacing turned off. */
  liftAll(): Promise<ThrottleReport> {
    return this.apply([], false);
  }

  /** Makes the cluster hold exactly the wanted throttles, as far as they are the pacer's to set. */
  async apply(wanted: CatchUpThrottle[], dryRun: boolean): Promise<ThrottleReport> {
    const record = structuredClone(await this.loaded());
    const report: ThrottleReport = { throttled: [], leftAlone: [], lifted: [], changes: [], errors: [] };
    const step = new Steps(report, dryRun, this.kafka, async () => {
      if (!dryRun) await this.store.save(record);
    });

    const ours = new Map<number, CatchUpThrottle>();
    for (const throttle of wanted) {
      if (await step.run(`broker ${throttle.broker}`, () => this.setRate(throttle, record, step)))
        ours.set(throttle.broker, throttle);
    }
    await step.run("replica lists", () => this.setReplicas(ours, record, step));
    for (const id of Object.keys(record.brokers).map(Number)) {
      if (ours.has(id)) continue;
      await step.run(`lifting broker ${id}`, () => this.liftRate(id, record, step));
    }
    for (const throttle of ours.values()) {
      const set = record.brokers[throttle.broker];
      report.throttled.push({
        broker: throttle.broker,
        rateBytesPerSecond: throttle.rateBytesPerSecond,
        replicas: throttle.outOfSync,
        sinceMs: set?.sinceMs ?? this.clock(),
      });
    }
    if (!dryRun) this.record = record;
    return report;
  }

  /** The broker's rate: set unless someone else's is in place. Returns whether the broker is ours. */
  private async setRate(throttle: CatchUpThrottle, record: ThrottleRecord, step: Steps): Promise<boolean> {
    const { broker, rateBytesPerSecond } = throttle;
    const mine = record.brokers[broker];
    if (mine === undefined) {
      const current = (await this.kafka.describeBrokerConfigs(broker, [FOLLOWER_RATE])).get(FOLLOWER_RATE);
      if (current && current.source !== "default") {
        step.report.leftAlone.push({ broker, rate: current.value ?? "", source: current.source });
        return false;
      }
    } else if (mine.rateBytesPerSecond === rateBytesPerSecond) return true;
    // Written down before it is set: a crash in between leaves a record of a change that may not
    // have happened, which lifting finds out (the value is not ours) rather than a throttle nobody knows.
    record.brokers[broker] = { rateBytesPerSecond, sinceMs: mine?.sinceMs ?? this.clock() };
    const change: ConfigChange = {
      resource: { type: "broker", name: String(broker) },
      configs: [{ name: FOLLOWER_RATE, op: "set", value: String(rateBytesPerSecond) }],
    };
    await step.alter([change], broker);
    return true;
  }

  /** Each topic's list holds exactly our brokers' replicas still behind, beside whatever else it holds. */
  private async setReplicas(
    ours: Map<number, CatchUpThrottle>,
    record: ThrottleRecord,
    step: Steps,
  ): Promise<void> {
    const wanted = new Map<string, Set<string>>();
    for (const throttle of ours.values())
      for (const { topic, partitions } of throttle.replicas) {
        const entries = wanted.get(topic) ?? new Set<string>();
        for (const partition of partitions) entries.add(`${partition}:${throttle.broker}`);
        wanted.set(topic, entries);
      }
    const appends = new Map<string, string[]>();
    const subtracts = new Map<string, string[]>();
    for (const [topic, entries] of wanted) {
      const mine = new Set(record.replicas[topic] ?? []);
      const added = [...entries].filter((e) => !mine.has(e));
      if (added.length) appends.set(topic, added);
    }
    for (const [topic, mine] of Object.entries(record.replicas)) {
      const entries = wanted.get(topic);
      const removed = mine.filter((e) => !entries?.has(e));
      if (removed.length) subtracts.set(topic, removed);
    }
    if (appends.size === 0 && subtracts.size === 0) return;

    // Current lists: where entries are added (to skip what is there), and where all of ours go (a
    // list left empty was ours alone, and is deleted rather than left set to "").
    const emptied = [...subtracts].filter(
      ([topic, removed]) => removed.length === record.replicas[topic]?.length,
    );
    const read = [...new Set([...appends.keys(), ...emptied.map(([topic]) => topic)])];
    const lists = read.length ? await this.kafka.describeTopicConfigs(read, [FOLLOWER_REPLICAS]) : new Map();
    const deletes = new Set<string>();
    for (const [topic, removed] of emptied) {
      const listed = entriesOf(lists.get(topic)?.get(FOLLOWER_REPLICAS)?.value);
      if (!appends.has(topic) && [...listed].every((e) => removed.includes(e))) deletes.add(topic);
    }
    for (const [topic, added] of appends) {
      const listed = entriesOf(lists.get(topic)?.get(FOLLOWER_REPLICAS)?.value);
      // `*` throttles every replica already; an entry already there is someone else's.
      const fresh = listed.has("*") ? [] : added.filter((e) => !listed.has(e));
      if (fresh.length) {
        appends.set(topic, fresh);
        record.replicas[topic] = [...(record.replicas[topic] ?? []), ...fresh];
      } else appends.delete(topic);
    }
    const topics = [...new Set([...appends.keys(), ...subtracts.keys()])].sort();
    const changes: ConfigChange[] = topics.map((topic) => ({
      resource: { type: "topic", name: topic },
      configs: deletes.has(topic)
        ? [{ name: FOLLOWER_REPLICAS, op: "delete" as const }]
        : [
            ...(appends.has(topic)
              ? [{ name: FOLLOWER_REPLICAS, op: "append" as const, value: appends.get(topic)?.join(",") }]
              : []),
            ...(subtracts.has(topic)
              ? [{ name: FOLLOWER_REPLICAS, op: "subtract" as const, value: subtracts.get(topic)?.join(",") }]
              : []),
          ],
    }));
    const results = await step.alter(changes);
    for (const result of results) {
      const topic = result.resource.name;
      // A topic deleted since holds nothing of ours any more.
      const gone = result.errorCode === ERROR_UNKNOWN_TOPIC;
      if (result.errorCode !== 0 && !gone) continue;
      const removed = new Set(gone ? (record.replicas[topic] ?? []) : (subtracts.get(topic) ?? []));
      const left = (record.replicas[topic] ?? []).filter((e) => !removed.has(e));
      if (left.length) record.replicas[topic] = left;
      else delete record.replicas[topic];
    }
    if (!step.dryRun) await step.save();
  }

  /** Deletes a rate set here, if it still holds the value set here; then forgets it either way. */
  private async liftRate(broker: number, record: ThrottleRecord, step: Steps): Promise<void> {
    const mine = record.brokers[broker] as ThrottleRecord["brokers"][string];
    const current = (await this.kafka.describeBrokerConfigs(broker, [FOLLOWER_RATE])).get(FOLLOWER_RATE);
    if (current?.source === "broker" && Number(current.value) === mine.rateBytesPerSecond) {
      const change: ConfigChange = {
        resource: { type: "broker", name: String(broker) },
        configs: [{ name: FOLLOWER_RATE, op: "delete" }],
      };
      const [result] = await step.alter([change], broker);
      if (result && result.errorCode !== 0) return;
    }
    delete record.brokers[broker];
    step.report.lifted.push(broker);
    if (!step.dryRun) await step.save();
  }

  private async loaded(): Promise<ThrottleRecord> {
    this.record ??= await this.store.load();
    return this.record;
  }
}

/** The entries of a throttled-replicas list ("0:1,3:2" or "*"). */
function entriesOf(value: string | null | undefined): Set<string> {
  return new Set(
    (value ?? "")
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== ""),
  );
}

/**
 * One run's steps: each may fail on its own (a broker down, a refused change) without stopping the
 * others; what failed is reported and tried again next run. On a dry run nothing is altered.
 */
class Steps {
  constructor(
    readonly report: ThrottleReport,
    readonly dryRun: boolean,
    private readonly kafka: ThrottleKafka,
    readonly save: () => Promise<void>,
  ) {}

  async run<T>(what: string, body: () => Promise<T>): Promise<T | undefined> {
    try {
      return await body();
    } catch (error) {
      this.report.errors.push(`${what}: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** Saves the record, then sends the changes (or lists them, on a dry run); per-resource errors reported. */
  async alter(changes: ConfigChange[], brokerId?: number): Promise<ConfigChangeResult[]> {
    for (const change of changes)
      for (const config of change.configs)
        this.report.changes.push(
          `${change.resource.type} ${change.resource.name}: ${config.op} ${config.name}${config.value === undefined ? "" : `=${config.value}`}`,
        );
    if (this.dryRun) return changes.map(({ resource }) => ({ resource, errorCode: 0, errorMessage: null }));
    await this.save();
    const results = await this.kafka.alterConfigs(changes, brokerId);
    for (const r of results)
      if (r.errorCode !== 0 && !(r.resource.type === "topic" && r.errorCode === ERROR_UNKNOWN_TOPIC))
        this.report.errors.push(
          `${r.resource.type} ${r.resource.name}: Kafka error ${r.errorCode}${r.errorMessage ? ` (${r.errorMessage})` : ""}`,
        );
    return results;
  }
}
