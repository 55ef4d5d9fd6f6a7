import * as z from "zod";
import { type InputProblem, MAX_LISTED_PROBLEMS, pointer, type Validated, validateWith } from "./problems.ts";

/** The cluster snapshot (SPEC §3): brokers and partitions as a controller sees them. */

const BrokerId = z.number().int().min(0).max(2_147_483_647);

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
      .describe("replicas[0] is the preferred replica"),
    isr: z.array(BrokerId),
    leader: z.number().int().min(-1).max(2_147_483_647).describe("-1: no leader"),
    elr: z.array(BrokerId).optional().describe("eligible leader replicas (KIP-966)"),
    reassigning: z.boolean().optional(),
    deleting: z.boolean().optional(),
  })
  .meta({ id: "Partition" });
export type Partition = z.infer<typeof Partition>;

const SnapshotShape = z.object({ brokers: z.array(Broker), partitions: z.array(Partition) });

export const Snapshot = SnapshotShape.meta({
  id: "Snapshot",
  description:
    "Brokers and partitions of one cluster. Rules beyond the shape: unique broker ids; unique (topic, partition); replicas without duplicates; isr a duplicate-free subset of replicas; leader -1 or one of the replicas.",
});
export type Snapshot = z.infer<typeof Snapshot>;

function hasDuplicate(ids: readonly number[]): boolean {
  for (let i = 1; i < ids.length; i++) {
    for (let j = 0; j < i; j++) if (ids[i] === ids[j]) return true;
  }
  return false;
}

/** The rules of §3 that relate fields to each other, checked in one pass after the shape. */
function relationalProblems(snapshot: Snapshot, base: string): InputProblem[] {
  const problems: InputProblem[] = [];
  const report = (at: string, detail: string) => {
    if (problems.length < MAX_LISTED_PROBLEMS) problems.push({ pointer: at, detail });
  };

  const brokerIds = new Set<number>();
  const partitionsPerPreferred = new Map<number, number>();
  snapshot.brokers.forEach((broker, i) => {
    if (brokerIds.has(broker.id))
      report(pointer(base, "brokers", i, "id"), `duplicate broker id ${broker.id}`);
    brokerIds.add(broker.id);
  });

  const partitionsByTopic = new Map<string, Set<number>>();
  const { partitions } = snapshot;
  for (let i = 0; i < partitions.length; i++) {
    const p = partitions[i] as Partition;
    let seen = partitionsByTopic.get(p.topic);
    if (!seen) {
      seen = new Set();
      partitionsByTopic.set(p.topic, seen);
    }
    if (seen.has(p.partition)) {
      report(pointer(base, "partitions", i), `duplicate partition ${p.topic}-${p.partition}`);
    }
    seen.add(p.partition);

    if (hasDuplicate(p.replicas)) report(pointer(base, "partitions", i, "replicas"), "duplicate replica id");
    if (hasDuplicate(p.isr)) report(pointer(base, "partitions", i, "isr"), "duplicate id in isr");
    for (const id of p.isr) {
      if (!p.replicas.includes(id)) {
        report(pointer(base, "partitions", i, "isr"), `isr member ${id} is not a replica`);
        break;
      }
    }
    if (p.leader !== -1 && !p.replicas.includes(p.leader)) {
      report(pointer(base, "partitions", i, "leader"), `leader ${p.leader} is neither -1 nor a replica`);
    }
    if (!p.reassigning && !p.deleting) {
      const preferred = p.replicas[0] as number;
      partitionsPerPreferred.set(preferred, (partitionsPerPreferred.get(preferred) ?? 0) + 1);
    }
  }

  snapshot.brokers.forEach((broker, i) => {
    const listed = partitionsPerPreferred.get(broker.id) ?? 0;
    if (broker.preferredCount !== undefined && broker.preferredCount < listed) {
      report(
        pointer(base, "brokers", i, "preferredCount"),
        `preferredCount ${broker.preferredCount} is less than the ${listed} partitions listed with preferred replica ${broker.id} (not reassigning or deleting)`,
      );
    }
  });
  return problems;
}

const isId = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 2_147_483_647;
const isOptionalBoolean = (v: unknown) => v === undefined || typeof v === "boolean";
const isIdArray = (v: unknown): v is number[] => Array.isArray(v) && v.every(isId);
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function isWellFormedBroker(b: unknown): boolean {
  return (
    isObject(b) &&
    isId(b.id) &&
    isOptionalBoolean(b.fenced) &&
    isOptionalBoolean(b.inControlledShutdown) &&
    (b.preferredCount === undefined ||
      (typeof b.preferredCount === "number" &&
        Number.isSafeInteger(b.preferredCount) &&
        b.preferredCount >= 0))
  );
}

function isWellFormedPartition(p: unknown): boolean {
  return (
    isObject(p) &&
    typeof p.topic === "string" &&
    TOPIC_NAME.test(p.topic) &&
    isId(p.partition) &&
    isIdArray(p.replicas) &&
    p.replicas.length > 0 &&
    isIdArray(p.isr) &&
    typeof p.leader === "number" &&
    Number.isInteger(p.leader) &&
    p.leader >= -1 &&
    p.leader <= 2_147_483_647 &&
    (p.elr === undefined || isIdArray(p.elr)) &&
    isOptionalBoolean(p.reassigning) &&
    isOptionalBoolean(p.deleting)
  );
}

/**
 * The shape of {@link Snapshot}, checked in place. Snapshots run to a million partitions, and the zod
 * parse copies every object: this check accepts exactly what the schema accepts (a property test holds
 * them together) and the schema is consulted only to describe what is wrong.
 */
export function isWellFormedSnapshot(input: unknown): input is Snapshot {
  return (
    isObject(input) &&
    Array.isArray(input.brokers) &&
    input.brokers.every(isWellFormedBroker) &&
    Array.isArray(input.partitions) &&
    input.partitions.every(isWellFormedPartition)
  );
}

export function validateSnapshot(input: unknown, base = ""): Validated<Snapshot> {
  if (!isWellFormedSnapshot(input)) {
    const shaped = validateWith(Snapshot, input, base);
    if (shaped.ok) throw new Error("isWellFormedSnapshot rejected what the Snapshot schema accepts");
    return { ok: false, problems: shaped.problems.slice(0, MAX_LISTED_PROBLEMS) };
  }
  const problems = relationalProblems(input, base);
  return problems.length === 0 ? { ok: true, value: input } : { ok: false, problems };
}
