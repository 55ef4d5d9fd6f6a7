import type { CatchUpThrottle } from "../../schemas/answer.ts";
import type { ThrottleRecord } from "../../schemas/throttle-record.ts";
import {
  BrokerDownError,
  type ConfigChange,
  type ConfigChangeResult,
  type ConfigValue,
} from "../kafka/admin.ts";
import type { ThrottleRecordStore } from "./throttle-record.ts";

/**
 * Carries out the answer's catch-up throttles with Kafka's own replication quota, as
 * `ReassignPartitionsCommand` does for a reassignment: a rate on each broker the quota holds
 * (`leader.` or `follower.replication.throttled.rate`), and the replicas it holds in each topic's
 * `….replication.throttled.replicas`. What it sets is written down before it is sent, so that it can be
 * lifted by the same hand after a crash, and nothing an operator set is raised or removed:
 *
 * - a broker with a rate already in place on that side (its own, the cluster-wide default, or a
 *   static one) is left alone, and the replicas that rate would hold are not listed either;
 * - a topic whose list is `*` already throttles every replica; an entry already listed is not ours;
 * - list entries are APPENDed and SUBTRACTed one by one, never overwritten, and a list left with
 *   nothing but ours is deleted, as it was;
 * - a rate is deleted only while it still holds the value set here.
 */

export const THROTTLE_CONFIGS = {
  leader: { rate: "leader.replication.throttled.rate", replicas: "leader.replication.throttled.replicas" },
  follower: {
    rate: "follower.replication.throttled.rate",
    replicas: "follower.replication.throttled.replicas",
  },
} as const;
export const FOLLOWER_RATE = THROTTLE_CONFIGS.follower.rate;
export const FOLLOWER_REPLICAS = THROTTLE_CONFIGS.follower.replicas;
export const LEADER_RATE = THROTTLE_CONFIGS.leader.rate;
export const LEADER_REPLICAS = THROTTLE_CONFIGS.leader.replicas;

/** The Kafka calls this needs, a subset of KafkaAdminClient. */
export interface ThrottleKafka {
  describeBrokerConfigs(brokerId: number, names: string[]): Promise<Map<string, ConfigValue>>;
  describeTopicConfigs(topics: string[], names: string[]): Promise<Map<string, Map<string, ConfigValue>>>;
  alterConfigs(changes: ConfigChange[], brokerId?: number): Promise<ConfigChangeResult[]>;
}

export interface ThrottleReport {
  /** Brokers whose catch-up the pacer throttles after this run. */
  throttled: {
    broker: number;
    side: CatchUpThrottle["side"];
    rateBytesPerSecond: number;
    replicas: number;
    sinceMs: number;
  }[];
  /** Brokers with a rate of someone else's where the answer wanted one: left as they are. */
  leftAlone: { broker: number; config: string; rate: string; source: string }[];
  /** Brokers whose catch-up the pacer stopped throttling this run. */
  lifted: number[];
  /**
   * Brokers with a rate of the pacer's that is no longer wanted but could not be lifted: they are
   * down (a broker's own configs are changed on it). Kafka keeps the rate while it is down; the first
   * run that finds it back lifts it, or keeps it if it comes back behind.
   */
  liftWhenBack: number[];
  /** Config changes sent (or, on a dry run, that would have been). */
  changes: string[];
  /** What could not be done this run; it is tried again next run. */
  errors: string[];
}

/** A report of nothing done: a run's start, or a run whose record could not be read. */
export const emptyThrottleReport = (): ThrottleReport => ({
  throttled: [],
  leftAlone: [],
  lifted: [],
  liftWhenBack: [],
  changes: [],
  errors: [],
});

/** One rate the wanted throttles hold on one broker, and the list entries that go with it. */
interface WantedRate {
  key: string;
  config: string;
  listConfig: string;
  broker: number;
  rateBytesPerSecond: number;
  /** topic → `partition:broker` entries. */
  entries: Map<string, string[]>;
}

type ConfigOperation = ConfigChange["configs"][number];

const ERROR_UNKNOWN_TOPIC = 3;
const rateKey = (config: string, broker: number) => `${config}@${broker}`;
const listKey = (config: string, topic: string) => `${config}@${topic}`;
const splitKey = (key: string) => {
  const at = key.indexOf("@");
  return { config: key.slice(0, at), name: key.slice(at + 1) };
};

/** The rates the throttles hold, per broker and side: a leader serving two brokers behind holds both shares. */
function wantedRates(wanted: CatchUpThrottle[]): Map<string, WantedRate> {
  const rates = new Map<string, WantedRate>();
  const add = (
    side: CatchUpThrottle["side"],
    broker: number,
    rate: number,
    replicas: CatchUpThrottle["replicas"],
  ) => {
    const { rate: config, replicas: listConfig } = THROTTLE_CONFIGS[side];
    const key = rateKey(config, broker);
    const held = rates.get(key) ?? {
      key,
      config,
      listConfig,
      broker,
      rateBytesPerSecond: 0,
      entries: new Map(),
    };
    rates.set(key, held);
    held.rateBytesPerSecond += rate;
    for (const { topic, partitions } of replicas) {
      const entries = held.entries.get(topic) ?? [];
      held.entries.set(topic, entries);
      for (const partition of partitions) entries.push(`${partition}:${broker}`);
    }
  };
  for (const t of wanted) {
    if (t.side === "follower") add("follower", t.broker, t.rateBytesPerSecond, t.replicas);
    else for (const l of t.leaders) add("leader", l.broker, l.rateBytesPerSecond, l.replicas);
  }
  return rates;
}

/** The rate keys a throttle needs: its own broker's on the follower side, each leader's on the leader side. */
const rateKeysOf = (t: CatchUpThrottle) =>
  t.side === "follower"
    ? [rateKey(FOLLOWER_RATE, t.broker)]
    : t.leaders.map((l) => rateKey(LEADER_RATE, l.broker));

export class CatchUpThrottler {
  constructor(
    private readonly kafka: ThrottleKafka,
    private readonly store: ThrottleRecordStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether anything set by the pacer is still in place (as far as its record knows). */
  async holdsAny(): Promise<boolean> {
    const record = await this.store.load();
    return [record.rates, record.lists, record.throttlingSinceMs].some(
      (part) => Object.keys(part).length > 0,
    );
  }

  /** Lifts everything the record holds: SIGTERM, or catch-up pacing turned off. */
  liftAll(): Promise<ThrottleReport> {
    return this.apply([], false);
  }

  /** Makes the cluster hold exactly the wanted throttles, as far as they are the pacer's to set. */
  async apply(wanted: CatchUpThrottle[], dryRun: boolean): Promise<ThrottleReport> {
    // Read each run: the record is the store's, not this process's (another agent may have lifted it).
    const record = await this.store.load();
    let stored = JSON.stringify(record);
    const save = async () => {
      await this.store.save(record);
      stored = JSON.stringify(record);
    };
    const report = emptyThrottleReport();
    const step = new Steps(report, dryRun, this.kafka, record, async () => {
      if (!dryRun) await save();
    });
    // A run that did not finish its changes may have left some unsent: this one sends ours again.
    const resend = record.unconfirmed === true;
    // Written with the first change, so that a crash in the middle still knows whom it throttled.
    const nowMs = this.clock();
    const before = new Set(Object.keys(record.throttlingSinceMs));
    for (const t of wanted) record.throttlingSinceMs[String(t.broker)] ??= nowMs;

    const rates = wantedRates(wanted);
    const ours = new Set<string>();
    for (const rate of [...rates.values()].sort((a, b) => a.key.localeCompare(b.key))) {
      // A broker down (stopped a moment ago, still listed) is looked at again next run, not an error.
      const held = await step.run(`broker ${rate.broker}`, () =>
        this.holdRate(rate, record, step, resend).catch((error: unknown) => {
          if (error instanceof BrokerDownError) return undefined;
          throw error;
        }),
      );
      // A rate that could not be looked at this run stays as it was, ours if it was.
      if (held || (held === undefined && record.rates[rate.key])) ours.add(rate.key);
    }
    const lists = new Map<string, Set<string>>();
    for (const key of ours) {
      const rate = rates.get(key) as WantedRate;
      for (const [topic, entries] of rate.entries) {
        const list = lists.get(listKey(rate.listConfig, topic)) ?? new Set<string>();
        lists.set(listKey(rate.listConfig, topic), list);
        for (const entry of entries) list.add(entry);
      }
    }
    await step.run("replica lists", () => this.holdLists(lists, record, step, resend));
    for (const key of Object.keys(record.rates).sort()) {
      if (!ours.has(key)) await step.run(`lifting ${key}`, () => this.liftRate(key, record, step));
    }

    const throttling = new Set<string>();
    for (const t of wanted) {
      if (!rateKeysOf(t).some((key) => ours.has(key))) continue;
      const id = String(t.broker);
      throttling.add(id);
      report.throttled.push({
        broker: t.broker,
        side: t.side,
        rateBytesPerSecond: t.rateBytesPerSecond,
        replicas: t.outOfSync,
        sinceMs: record.throttlingSinceMs[id] ?? nowMs,
      });
    }
    const down = new Set(report.liftWhenBack.map(String));
    for (const id of Object.keys(record.throttlingSinceMs)) {
      // A broker down keeps its rate in Kafka, and so its place here, until a run finds it back.
      if (throttling.has(id) || down.has(id)) continue;
      delete record.throttlingSinceMs[id];
      // A broker wanted this run whose every rate was someone else's was never throttled by us.
      if (before.has(id)) report.lifted.push(Number(id));
    }
    if (report.errors.length === 0) delete record.unconfirmed;
    // A run that changed nothing writes nothing: a quiet cluster costs the store one read per run.
    if (!dryRun && JSON.stringify(record) !== stored) await save();
    return report;
  }

  /** A broker's rate: set unless someone else's is in place. Returns whether it is the pacer's. */
  private async holdRate(
    rate: WantedRate,
    record: ThrottleRecord,
    step: Steps,
    resend: boolean,
  ): Promise<boolean> {
    const mine = record.rates[rate.key];
    if (mine === undefined) {
      const current = (await this.kafka.describeBrokerConfigs(rate.broker, [rate.config])).get(rate.config);
      if (current && current.source !== "default") {
        step.report.leftAlone.push({
          broker: rate.broker,
          config: rate.config,
          rate: current.value ?? "",
          source: current.source,
        });
        return false;
      }
    } else if (mine.rateBytesPerSecond === rate.rateBytesPerSecond && !resend) return true;
    // Written down before it is sent: a crash in between leaves a record of a change that may not
    // have happened, which lifting finds out (the value is not ours), rather than a throttle nobody knows.
    record.rates[rate.key] = { rateBytesPerSecond: rate.rateBytesPerSecond };
    const change: ConfigChange = {
      resource: { type: "broker", name: String(rate.broker) },
      configs: [{ name: rate.config, op: "set", value: String(rate.rateBytesPerSecond) }],
    };
    const [result] = await step.alter([change], rate.broker);
    if (result && result.errorCode !== 0) {
      // Refused, so not set: nothing of ours to lift.
      if (mine === undefined) delete record.rates[rate.key];
      return false;
    }
    return true;
  }

  /** Each list holds exactly our wanted entries, beside whatever else it holds. */
  private async holdLists(
    wanted: Map<string, Set<string>>,
    record: ThrottleRecord,
    step: Steps,
    resend: boolean,
  ): Promise<void> {
    const appends = new Map<string, string[]>();
    const subtracts = new Map<string, string[]>();
    for (const [key, entries] of wanted) {
      const mine = new Set(resend ? [] : (record.lists[key] ?? []));
      const added = [...entries].filter((e) => !mine.has(e));
      if (added.length) appends.set(key, added);
    }
    for (const [key, mine] of Object.entries(record.lists)) {
      const entries = wanted.get(key);
      const removed = mine.filter((e) => !entries?.has(e));
      if (removed.length) subtracts.set(key, removed);
    }
    if (appends.size === 0 && subtracts.size === 0) return;

    // Current lists: where entries are added (to skip what is there), and where all of ours go (a
    // list left with nothing else was ours alone, and is deleted rather than left set to "").
    const emptied = [...subtracts].filter(
      ([key, removed]) => !appends.has(key) && removed.length === record.lists[key]?.length,
    );
    const read = [...new Set([...appends.keys(), ...emptied.map(([key]) => key)])].map(splitKey);
    const current =
      read.length === 0
        ? new Map<string, Map<string, ConfigValue>>()
        : await this.kafka.describeTopicConfigs(
            [...new Set(read.map((k) => k.name))],
            [...new Set(read.map((k) => k.config))],
          );
    const listed = (key: string) => {
      const { config, name } = splitKey(key);
      return entriesOf(current.get(name)?.get(config)?.value);
    };
    const deletes = new Set<string>();
    for (const [key, removed] of emptied)
      if ([...listed(key)].every((e) => removed.includes(e))) deletes.add(key);
    for (const [key, added] of appends) {
      const there = listed(key);
      const mine = new Set(record.lists[key] ?? []);
      // `*` throttles every replica already; an entry already there is someone else's, unless ours.
      const fresh = there.has("*") ? [] : added.filter((e) => !there.has(e) || mine.has(e));
      if (fresh.length) {
        appends.set(key, fresh);
        record.lists[key] = [...new Set([...mine, ...fresh])];
      } else appends.delete(key);
    }

    const keys = [...new Set([...appends.keys(), ...subtracts.keys()])].sort();
    // Kafka refuses two operations on one config in one request (error 42, duplicate config keys):
    // a list that loses some entries and gains others this run (one broker's throttle moving to
    // another's) gets its removals in the first request and its additions in a second.
    const first: [string, ConfigOperation][] = [];
    const then: [string, ConfigOperation][] = [];
    for (const key of keys) {
      const { config } = splitKey(key);
      const add = appends.get(key);
      const remove = subtracts.get(key);
      if (deletes.has(key)) first.push([key, { name: config, op: "delete" }]);
      else if (remove) first.push([key, { name: config, op: "subtract", value: remove.join(",") }]);
      if (add) (remove ? then : first).push([key, { name: config, op: "append", value: add.join(",") }]);
    }
    const results = await step.alter(byTopic(first));
    for (const result of results) {
      const topic = result.resource.name;
      // A topic deleted since holds nothing of ours any more.
      const gone = result.errorCode === ERROR_UNKNOWN_TOPIC;
      if (result.errorCode !== 0 && !gone) continue;
      for (const key of keys) {
        if (splitKey(key).name !== topic) continue;
        const removed = new Set(gone ? (record.lists[key] ?? []) : (subtracts.get(key) ?? []));
        const left = (record.lists[key] ?? []).filter((e) => !removed.has(e));
        if (left.length) record.lists[key] = left;
        else delete record.lists[key];
      }
    }
    if (then.length > 0) await step.alter(byTopic(then));
    await step.save();
  }

  /** Deletes a rate set here, if it still holds the value set here; then forgets it either way. */
  private async liftRate(key: string, record: ThrottleRecord, step: Steps): Promise<void> {
    const mine = record.rates[key] as ThrottleRecord["rates"][string];
    const { config, name } = splitKey(key);
    const broker = Number(name);
    let configs: Map<string, ConfigValue>;
    try {
      configs = await this.kafka.describeBrokerConfigs(broker, [config]);
    } catch (error) {
      // Down: gone from the metadata, or still listed but not answering. Its config is changed on it.
      if (!(error instanceof BrokerDownError)) throw error;
      step.report.liftWhenBack.push(broker);
      return;
    }
    const current = configs.get(config);
    if (current?.source === "broker" && Number(current.value) === mine.rateBytesPerSecond) {
      const change: ConfigChange = {
        resource: { type: "broker", name },
        configs: [{ name: config, op: "delete" }],
      };
      let results: ConfigChangeResult[];
      try {
        results = await step.alter([change], broker);
      } catch (error) {
        // Gone between the two calls: kept for when it is back, like a broker found down.
        if (!(error instanceof BrokerDownError)) throw error;
        step.report.liftWhenBack.push(broker);
        return;
      }
      const [result] = results;
      if (result && result.errorCode !== 0) return;
    }
    delete record.rates[key];
    await step.save();
  }
}

/** Topic config operations, one change per topic. */
function byTopic(operations: [string, ConfigOperation][]): ConfigChange[] {
  const changes = new Map<string, ConfigChange>();
  for (const [key, operation] of operations) {
    const topic = splitKey(key).name;
    const change = changes.get(topic) ?? { resource: { type: "topic", name: topic }, configs: [] };
    changes.set(topic, change);
    change.configs.push(operation);
  }
  return [...changes.values()];
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
    private readonly record: ThrottleRecord,
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

  /**
   * Marks the record unconfirmed and saves it, then sends the changes (or lists them, on a dry run);
   * each resource's error is reported.
   */
  async alter(changes: ConfigChange[], brokerId?: number): Promise<ConfigChangeResult[]> {
    for (const change of changes)
      for (const config of change.configs)
        this.report.changes.push(
          `${change.resource.type} ${change.resource.name}: ${config.op} ${config.name}${config.value === undefined ? "" : `=${config.value}`}`,
        );
    if (this.dryRun) return changes.map(({ resource }) => ({ resource, errorCode: 0, errorMessage: null }));
    this.record.unconfirmed = true;
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
