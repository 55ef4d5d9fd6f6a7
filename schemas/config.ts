import { closest, distance } from "fastest-levenshtein";
import * as z from "zod";

/**
 * The configuration vocabulary (SPEC §2): Kafka's own names, as a flat object. A value may be a JSON
 * number/boolean or the string form Kafka tools use ("200", "true"); Kafka trims such strings, so do we.
 */

const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;
const DECIMAL_TEXT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;
// Spelled out rather than /i, so that the JSON Schema pattern says the same thing.
const BOOLEAN_TEXT = /^\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\s*$/;
const INT_MAX = 2_147_483_647;

function kafkaInteger(min: number, max = Number.MAX_SAFE_INTEGER) {
  const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `${min}–${max}`;
  const expected = `expected an integer ${range} (a JSON number or a string such as "${min + 1}")`;
  const integer = z.number(expected).int(expected).min(min, expected).max(max, expected);
  return z
    .union([integer, z.string().regex(INTEGER_TEXT, expected)], { error: expected })
    .transform(Number)
    .pipe(integer);
}

function kafkaNumber(min: number, max: number) {
  const expected = `expected a number ${min}–${max} (a JSON number or a string such as "5")`;
  const number = z.number(expected).min(min, expected).max(max, expected);
  return z
    .union([number, z.string().regex(DECIMAL_TEXT, expected)], { error: expected })
    .transform(Number)
    .pipe(number);
}

function kafkaBoolean() {
  const expected = 'expected a boolean (true/false or "true"/"false")';
  return z
    .union([z.boolean(), z.string().regex(BOOLEAN_TEXT, expected)], { error: expected })
    .transform((value) => (typeof value === "boolean" ? value : value.trim().toLowerCase() === "true"))
    .pipe(z.boolean());
}

function kafkaEnum<const T extends readonly [string, ...string[]]>(values: T) {
  const expected = `expected one of ${values.map((v) => `"${v}"`).join(", ")}`;
  return z.enum(values, { error: expected });
}

export const ELECTION_ALGORITHMS = ["immediate", "wait-for-sync"] as const;
export const THRESHOLD_BASES = ["imbalanced", "preferred"] as const;
export const THROTTLE_SIDES = ["follower", "leader"] as const;

/** Every known key with its schema, default and meaning; the single place a configuration key is defined. */
export const CONFIG_KEYS = {
  "auto.leader.rebalance.enable": {
    schema: kafkaBoolean(),
    default: true,
    doc: "Run the preferred-leader balancer at all. false: no elections, nothing changes.",
  },
  "leader.imbalance.check.interval.seconds": {
    schema: kafkaInteger(1),
    default: 300,
    doc: "The baseline period between runs that did not cap out.",
  },
  "leader.imbalance.election.algorithm": {
    schema: kafkaEnum(ELECTION_ALGORITHMS),
    default: "immediate" as (typeof ELECTION_ALGORITHMS)[number],
    doc: "immediate: today's Kafka behaviour. wait-for-sync: engage the gate.",
  },
  "leader.imbalance.election.wait.for.sync.threshold.percent": {
    schema: kafkaNumber(0, 100),
    default: 0,
    doc: "A broker is gated while more than this percent of its preferred partitions are out of ISR.",
  },
  "leader.imbalance.election.wait.for.sync.max.wait.ms": {
    schema: kafkaInteger(0),
    default: 1_800_000,
    doc: "The escape hatch: a broker gated this long is let through. 0 = no escape hatch.",
  },
  "leader.imbalance.election.wait.for.sync.threshold.basis": {
    schema: kafkaEnum(THRESHOLD_BASES),
    default: "imbalanced" as (typeof THRESHOLD_BASES)[number],
    doc: "The gate's denominator: imbalanced (the proposal's rule) or preferred (all of the broker's preferred partitions).",
  },
  "leader.imbalance.election.wait.for.sync.max.lag.bytes": {
    schema: kafkaInteger(0),
    default: 0,
    doc: "Extension: a broker is also gated while its out-of-sync replicas still have more than this many bytes to fetch (the snapshot's brokers[].lagBytes; a broker without it stays gated). 0 = off.",
  },
  "leader.imbalance.election.internal.topics.last": {
    schema: kafkaBoolean(),
    default: false,
    doc: "Extension: a broker's partitions of Kafka's internal topics (__consumer_offsets, __transaction_state, __share_group_state) are handed back only once it has no other eligible partition, so the coordinators move after the data.",
  },
  "leader.imbalance.election.max.per.run": {
    schema: kafkaInteger(1, INT_MAX),
    default: 1000,
    doc: "The cap on elections per run.",
  },
  "leader.imbalance.election.throttle.interval.ms": {
    schema: kafkaInteger(0),
    default: 0,
    doc: "The minimum gap after a capped run. 0 = Kafka's immediate reschedule.",
  },
  "pacer.catch.up.replication.throttled.rate": {
    schema: kafkaInteger(0),
    default: 0,
    doc: "Extension (catch-up pacing): while an active broker hosts replicas outside the ISR, it may fetch at most this many bytes per second for them, with Kafka's replication quota, set by the agent and lifted once it is in sync. 0 = off.",
  },
  "pacer.catch.up.replication.throttled.side": {
    schema: kafkaEnum(THROTTLE_SIDES),
    default: "follower" as (typeof THROTTLE_SIDES)[number],
    doc: "Extension (catch-up pacing): where Kafka's quota holds the catch-up. follower: on the broker catching up (follower.replication.throttled.rate); leader: on the brokers leading its replicas behind (leader.replication.throttled.rate, the rate shared among them by how many they lead), which held producers back far longer on the load-test bed.",
  },
  "pacer.tick.enabled": {
    schema: kafkaBoolean(),
    default: false,
    doc: "The scheduled tick runs this cluster on its stored snapshot (the service's own key).",
  },
  "pacer.snapshot.max.age.ms": {
    schema: kafkaInteger(1),
    default: 120_000,
    doc: "The tick runs only on a stored snapshot at most this old; a stale snapshot never produces elections.",
  },
} as const;

export type ConfigKey = keyof typeof CONFIG_KEYS;
const KNOWN_KEYS = Object.keys(CONFIG_KEYS) as ConfigKey[];

/** Names from the upstream patch and other drafts that an operator may still type. */
const RENAMED_KEYS: Record<string, ConfigKey> = {
  "leader.imbalance.election.immediate.period.ms": "leader.imbalance.election.throttle.interval.ms",
};

type Shape = { [K in ConfigKey]: (typeof CONFIG_KEYS)[K]["schema"] };
const shape = Object.fromEntries(
  KNOWN_KEYS.map((key) => [
    key,
    CONFIG_KEYS[key].schema.describe(`${CONFIG_KEYS[key].doc} Default: ${CONFIG_KEYS[key].default}.`),
  ]),
) as Shape;

/** A partial configuration as a request, a cluster or the fleet gives it. */
export const ConfigOverrides = z.strictObject(shape).partial().meta({
  id: "ConfigOverrides",
  description: "Kafka configuration names and values; every key optional. Unknown keys are rejected.",
});
export type ConfigOverrides = z.output<typeof ConfigOverrides>;

/** The configuration a run uses: every key present, values typed. */
export type EffectiveConfig = Required<ConfigOverrides>;

export const DEFAULT_CONFIG = Object.fromEntries(
  KNOWN_KEYS.map((key) => [key, CONFIG_KEYS[key].default]),
) as EffectiveConfig;

/** defaults ← each layer in turn (fleet, cluster, request). */
export function effectiveConfig(...layers: (ConfigOverrides | undefined)[]): EffectiveConfig {
  return Object.assign({}, DEFAULT_CONFIG, ...layers.filter(Boolean)) as EffectiveConfig;
}

/** The known key an unknown one most likely meant, if any is close enough to suggest. */
export function suggestConfigKey(unknown: string): ConfigKey | undefined {
  const renamed = RENAMED_KEYS[unknown];
  if (renamed) return renamed;
  const bySuffix = KNOWN_KEYS.filter((key) => key.endsWith(`.${unknown}`));
  if (bySuffix.length === 1) return bySuffix[0];
  const nearest = closest(unknown, KNOWN_KEYS) as ConfigKey;
  return distance(unknown, nearest) <= Math.max(3, Math.floor(unknown.length / 4)) ? nearest : undefined;
}
