import * as z from "zod";
import { BROKER_ID_RULE, isBrokerId, isInt, isObject, MAX_BROKER_ID, problemList } from "./checks.ts";
import { type InputProblem, MAX_LISTED_PROBLEMS, pointer, type Validated } from "./problems.ts";

/** The cluster snapshot (SPEC §3): brokers and partitions as a controller sees them. */

/**
 * Limits of one snapshot. 2,000 brokers keep a cluster's state (a gate entry per broker) far below
 * DynamoDB's 400 KB item, so no valid snapshot can lock its cluster out; Kafka's largest clusters run
 * a few hundred. Replica lists are bounded for the same reason. Partitions are bounded by the body.
 */
export const MAX_BROKERS = 2_000;
export const MAX_REPLICAS = 32;

const BrokerId = z.number().int().min(0).max(MAX_BROKER_ID);

/** Kafka's topic name rule: 1–249 of [a-zA-Z0-9._-], and not "." or "..". */
const TOPIC_NAME = /^(?!\.\.?$)[a-zA-Z0-9._-]{1,249}$/;

export const Broker = z
  .object({
    id: BrokerId,
    fenced: z.boolean().optional(),
    inControlledShutdown: z.boolean().optional(),
    preferredCount: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        "How many partitions of the cluster, not being reassigned or deleted, have this broker as preferred replica. Lets a snapshot hold only imbalanced partitions under threshold basis 'preferred'.",
      ),
    lagBytes: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        "Extension: the bytes this broker's out-of-sync replicas still have to fetch to reach their leaders' logs. Read by the gate under leader.imbalance.election.wait.for.sync.max.lag.bytes.",
      ),
  })
  .meta({ id: "Broker" });
export type Broker = z.infer<typeof Broker>;

export const Partition = z
  .object({
    topic: z.string().regex(TOPIC_NAME, "invalid topic name: 1–249 of [a-zA-Z0-9._-], not '.' or '..'"),
    partition: z.number().int().min(0).max(2_147_483_647),
    replicas: z
      .array(BrokerId)
      .min(1, "replicas must not be empty")
      .max(MAX_REPLICAS)
      .describe("replicas[0] is the preferred replica"),
    isr: z.array(BrokerId).max(MAX_REPLICAS),
    leader: z.number().int().min(-1).max(MAX_BROKER_ID).describe("-1: no leader"),
    elr: z.array(BrokerId).max(MAX_REPLICAS).optional().describe("eligible leader replicas (KIP-966)"),
    reassigning: z.boolean().optional(),
    deleting: z.boolean().optional(),
  })
  .meta({ id: "Partition" });
export type Partition = z.infer<typeof Partition>;

const SnapshotShape = z.object({ brokers: z.array(Broker).max(MAX_BROKERS), partitions: z.array(Partition) });

export const Snapshot = SnapshotShape.meta({
  id: "Snapshot",
  description:
    "Brokers and partitions of one cluster. Rules beyond the shape: unique broker ids; unique (topic, partition); replicas without duplicates; isr a duplicate-free subset of replicas; leader -1 or one of the replicas.",
});
export type Snapshot = z.infer<typeof Snapshot>;

/**
 * Marks broker ids, a generation at a time, so that the checks of a long id list cost one pass with
 * no allocation: ids below 65,536 (nearly all of them) in a typed array, others in a map.
 */
class IdMarks {
  private readonly small = new Uint32Array(1 << 16);
  private readonly large = new Map<number, number>();
  private generation = 0;

  /** Forgets every mark. */
  clear(): void {
    this.generation++;
  }

  /** Marks `id`; true if it was already marked since the last clear. */
  mark(id: number): boolean {
    const seen = this.has(id);
    if (id < 65_536) this.small[id] = this.generation;
    else this.large.set(id, this.generation);
    return seen;
  }

  has(id: number): boolean {
    return (id < 65_536 ? this.small[id] : this.large.get(id)) === this.generation;
  }
}

/** Up to this many ids (nearly every list: replication factors are 3), nested loops beat marks. */
const SHORT_LIST = 8;

/** Whether an id list holds an id twice. */
function hasDuplicate(ids: readonly number[], marks: IdMarks): boolean {
  if (ids.length <= SHORT_LIST) {
    for (let a = 1; a < ids.length; a++) {
      for (let b = 0; b < a; b++) if (ids[a] === ids[b]) return true;
    }
    return false;
  }
  marks.clear();
  for (const id of ids) if (marks.mark(id)) return true;
  return false;
}

/** The first id of `ids` that `among` lacks. */
function firstNotIn(ids: readonly number[], among: readonly number[], marks: IdMarks): number | undefined {
  if (among.length <= SHORT_LIST) {
    for (const id of ids) if (!among.includes(id)) return id;
    return undefined;
  }
  marks.clear();
  for (const id of among) marks.mark(id);
  for (const id of ids) if (!marks.has(id)) return id;
  return undefined;
}

/**
 * Whether each topic's partition numbers rise through the list, however its topics interleave: then
 * no (topic, partition) is listed twice. Snapshots are written that way, and this pass costs a
 * fraction of keeping a set of every partition number.
 */
function partitionsRisePerTopic(partitions: readonly Partition[]): boolean {
  const highest = new Map<string, number>();
  let topic: string | undefined;
  let last = -1;
  for (const p of partitions) {
    if (p.topic !== topic) {
      if (topic !== undefined) highest.set(topic, last);
      topic = p.topic;
      last = highest.get(topic) ?? -1;
    }
    if (p.partition <= last) return false;
    last = p.partition;
  }
  return true;
}

/**
 * The rules of §3 that relate fields to each other, checked in one pass after the shape.
 */
function relationalProblems(snapshot: Snapshot, base: string): InputProblem[] {
  // Pointers and messages are built only for a problem found while the list has room, and without
  // closures over the loop's variables, which would cost an allocation per partition.
  const { problems, report, room } = problemList();

  const brokerIds = new Set<number>();
  snapshot.brokers.forEach((broker, i) => {
    if (brokerIds.has(broker.id) && room())
      report(pointer(base, "brokers", i, "id"), `duplicate broker id ${broker.id}`);
    brokerIds.add(broker.id);
  });
  // Partitions per preferred replica matter only to a broker that states its preferredCount.
  const countPreferred = snapshot.brokers.some((broker) => broker.preferredCount !== undefined);
  const partitionsPerPreferred = new Map<number, number>();

  const { partitions } = snapshot;
  // Only a list whose partition numbers do not rise per topic can hold one twice: then each
  // topic's numbers go in a set, looked up once per run of the topic's partitions.
  const mayRepeat = !partitionsRisePerTopic(partitions);
  const partitionsByTopic = new Map<string, Set<number>>();
  const marks = new IdMarks();
  let topic: string | undefined;
  let seen = new Set<number>();
  // A full list ends the walk: a hostile body costs no more to refuse than to read.
  for (let i = 0; i < partitions.length && room(); i++) {
    const p = partitions[i] as Partition;
    if (mayRepeat) {
      if (p.topic !== topic) {
        topic = p.topic;
        seen = partitionsByTopic.get(topic) ?? new Set();
        partitionsByTopic.set(topic, seen);
      }
      if (seen.has(p.partition) && room())
        report(pointer(base, "partitions", i), `duplicate partition ${p.topic}-${p.partition}`);
      seen.add(p.partition);
    }

    const { replicas, isr, leader } = p;
    if (hasDuplicate(replicas, marks) && room())
      report(pointer(base, "partitions", i, "replicas"), "duplicate replica id");
    if (hasDuplicate(isr, marks) && room())
      report(pointer(base, "partitions", i, "isr"), "duplicate id in isr");
    const stranger = firstNotIn(isr, replicas, marks);
    if (stranger !== undefined && room())
      report(pointer(base, "partitions", i, "isr"), `isr member ${stranger} is not a replica`);
    if (leader !== -1 && !replicas.includes(leader) && room())
      report(pointer(base, "partitions", i, "leader"), `leader ${leader} is neither -1 nor a replica`);
    if (countPreferred && !p.reassigning && !p.deleting) {
      const preferred = replicas[0] as number;
      partitionsPerPreferred.set(preferred, (partitionsPerPreferred.get(preferred) ?? 0) + 1);
    }
  }

  snapshot.brokers.forEach((broker, i) => {
    const listed = partitionsPerPreferred.get(broker.id) ?? 0;
    if (broker.preferredCount !== undefined && broker.preferredCount < listed && room()) {
      report(
        pointer(base, "brokers", i, "preferredCount"),
        `preferredCount ${broker.preferredCount} is less than the ${listed} partitions listed with preferred replica ${broker.id} (not reassigning or deleting)`,
      );
    }
  });
  return problems;
}

/**
 * A snapshot lists a topic's partitions together: the last name that passed is compared first, so
 * the pattern runs once per topic rather than once per partition.
 */
let lastTopicName = "";
function isTopicName(v: unknown): v is string {
  if (v === lastTopicName) return true;
  if (typeof v !== "string" || !TOPIC_NAME.test(v)) return false;
  lastTopicName = v;
  return true;
}

const isOptionalBoolean = (v: unknown) => v === undefined || typeof v === "boolean";
const isIdList = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length <= MAX_REPLICAS && v.every(isBrokerId);
const isOptionalCount = (v: unknown) => v === undefined || isInt(v, 0, Number.MAX_SAFE_INTEGER);
const isLeader = (v: unknown) => isInt(v, -1, MAX_BROKER_ID);

function isWellFormedBroker(b: unknown): boolean {
  return (
    isObject(b) &&
    isBrokerId(b.id) &&
    isOptionalBoolean(b.fenced) &&
    isOptionalBoolean(b.inControlledShutdown) &&
    isOptionalCount(b.preferredCount) &&
    isOptionalCount(b.lagBytes)
  );
}

function isWellFormedPartition(p: unknown): boolean {
  return (
    isObject(p) &&
    isTopicName(p.topic) &&
    isBrokerId(p.partition) &&
    isIdList(p.replicas) &&
    p.replicas.length > 0 &&
    isIdList(p.isr) &&
    isLeader(p.leader) &&
    (p.elr === undefined || isIdList(p.elr)) &&
    isOptionalBoolean(p.reassigning) &&
    isOptionalBoolean(p.deleting)
  );
}

/**
 * The shape of {@link Snapshot}, checked in place. Snapshots run to a million partitions, and the zod
 * parse copies every object: this check accepts exactly what the schema accepts (a property test holds
 * them together).
 */
export function isWellFormedSnapshot(input: unknown): input is Snapshot {
  return (
    isObject(input) &&
    Array.isArray(input.brokers) &&
    input.brokers.length <= MAX_BROKERS &&
    input.brokers.every(isWellFormedBroker) &&
    Array.isArray(input.partitions) &&
    input.partitions.every(isWellFormedPartition)
  );
}

/** One element of an id list; the list itself is checked by the caller. */
function idListProblems(list: unknown, at: string, report: (at: string, detail: string) => boolean) {
  if (!Array.isArray(list)) return report(at, "expected an array of broker ids");
  if (list.length > MAX_REPLICAS) return report(at, `at most ${MAX_REPLICAS} ids`);
  for (let k = 0; k < list.length; k++) {
    if (!isBrokerId(list[k]) && !report(`${at}/${k}`, `expected a broker id, ${BROKER_ID_RULE}`))
      return false;
  }
  return true;
}

/**
 * What is wrong with the shape of a snapshot that {@link isWellFormedSnapshot} refused: one loop over
 * the data, no recursion, stopping at {@link MAX_LISTED_PROBLEMS}, so a hostile body costs no more
 * to refuse than to read.
 */
export function snapshotShapeProblems(input: unknown, base = ""): InputProblem[] {
  const { problems, report } = problemList();
  if (!isObject(input)) {
    report(base, "expected an object { brokers, partitions }");
    return problems;
  }
  const { brokers, partitions } = input;
  if (!Array.isArray(brokers)) {
    if (!report(pointer(base, "brokers"), "expected an array of brokers")) return problems;
  } else if (brokers.length > MAX_BROKERS) {
    if (!report(pointer(base, "brokers"), `at most ${MAX_BROKERS} brokers`)) return problems;
  } else {
    for (let i = 0; i < brokers.length; i++) {
      const b = brokers[i];
      const at = pointer(base, "brokers", i);
      if (!isObject(b)) {
        if (
          !report(
            at,
            "expected a broker object { id, fenced?, inControlledShutdown?, preferredCount?, lagBytes? }",
          )
        )
          return problems;
        continue;
      }
      const checks: [boolean, string, string][] = [
        [isBrokerId(b.id), "id", `expected ${BROKER_ID_RULE}`],
        [isOptionalBoolean(b.fenced), "fenced", "expected a boolean"],
        [isOptionalBoolean(b.inControlledShutdown), "inControlledShutdown", "expected a boolean"],
        [isOptionalCount(b.preferredCount), "preferredCount", "expected a non-negative integer"],
        [isOptionalCount(b.lagBytes), "lagBytes", "expected a non-negative integer"],
      ];
      for (const [ok, field, detail] of checks) if (!ok && !report(`${at}/${field}`, detail)) return problems;
    }
  }
  if (!Array.isArray(partitions)) {
    report(pointer(base, "partitions"), "expected an array of partitions");
    return problems;
  }
  for (let i = 0; i < partitions.length; i++) {
    const p = partitions[i];
    const at = pointer(base, "partitions", i);
    if (isWellFormedPartition(p)) continue;
    if (!isObject(p)) {
      if (!report(at, "expected a partition object { topic, partition, replicas, isr, leader, … }"))
        return problems;
      continue;
    }
    if (typeof p.topic !== "string" || !TOPIC_NAME.test(p.topic)) {
      if (!report(`${at}/topic`, "invalid topic name: 1–249 of [a-zA-Z0-9._-], not '.' or '..'"))
        return problems;
    }
    if (!isBrokerId(p.partition) && !report(`${at}/partition`, `expected ${BROKER_ID_RULE}`)) return problems;
    if (Array.isArray(p.replicas) && p.replicas.length === 0) {
      if (!report(`${at}/replicas`, "replicas must not be empty")) return problems;
    } else if (!idListProblems(p.replicas, `${at}/replicas`, report)) return problems;
    if (!idListProblems(p.isr, `${at}/isr`, report)) return problems;
    if (p.elr !== undefined && !idListProblems(p.elr, `${at}/elr`, report)) return problems;
    if (!isLeader(p.leader) && !report(`${at}/leader`, `expected -1 (no leader) or ${BROKER_ID_RULE}`))
      return problems;
    for (const field of ["reassigning", "deleting"]) {
      if (!isOptionalBoolean(p[field]) && !report(`${at}/${field}`, "expected a boolean")) return problems;
    }
  }
  return problems;
}

export function validateSnapshot(input: unknown, base = ""): Validated<Snapshot> {
  if (!isWellFormedSnapshot(input)) {
    const problems = snapshotShapeProblems(input, base);
    if (problems.length === 0)
      throw new Error("snapshotShapeProblems found nothing isWellFormedSnapshot refused");
    return { ok: false, problems };
  }
  const problems = relationalProblems(input, base);
  return problems.length === 0 ? { ok: true, value: input } : { ok: false, problems };
}
