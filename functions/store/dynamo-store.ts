import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { gunzip as gunzipCallback, gzip as gzipCallback } from "node:zlib";
import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { batchWrite } from "./batch-write.ts";
import type {
  ClusterRecord,
  IdempotencyClaim,
  IdempotencyRecord,
  Lease,
  PacerStore,
  Page,
  SnapshotMeta,
  StoredDecision,
  TickOutcome,
} from "./store.ts";
import { StoreRejectedError, StoreUnavailableError } from "./store.ts";
import { TABLE } from "./table.ts";

/** DynamoDB holds 400 KB per item: a stored body (gzip'd) goes in pieces of at most this. */
export const MAX_STORED_BODY_BYTES = 350_000;
/** A snapshot may take this many items: 5.6 MB of gzip'd JSON, tens of MB of snapshot. */
export const MAX_SNAPSHOT_CHUNKS = 16;
/** The latest snapshot lives a day (`pacer.snapshot.max.age.ms` may be that long); a replaced one, minutes. */
const SNAPSHOT_CHUNK_TTL_MS = 86_400_000;
const REPLACED_SNAPSHOT_TTL_MS = 10 * 60_000;
const FLEET_KEY = { [TABLE.partitionKey]: { S: "fleet" }, [TABLE.sortKey]: { S: "config" } };

export class SnapshotTooLargeError extends Error {
  constructor(readonly compressedBytes: number) {
    super(
      `the snapshot is ${compressedBytes} bytes gzip'd; at most ${MAX_SNAPSHOT_CHUNKS * MAX_STORED_BODY_BYTES} are stored (send only imbalanced partitions with brokers[].preferredCount)`,
    );
  }
}

/** zlib on libuv's threads: many clusters' snapshots and decisions at once do not queue on the event loop. */
const gzip = promisify(gzipCallback);
const gunzip = promisify(gunzipCallback);
const SNAPSHOT_INFLATE_CHUNK = 1024 * 1024;

const s = (value: string): AttributeValue => ({ S: value });
const n = (value: number): AttributeValue => ({ N: String(value) });
/** The TTL attribute's value: epoch seconds. */
const expiry = (atMs: number): AttributeValue => n(Math.ceil(atMs / 1000));

/** Every item of a cluster shares its partition; the sort key says which item it is. */
const partitionOf = (clusterId: string) => s(`cluster#${clusterId}`);
const itemKey = (clusterId: string, sortKey: string) => ({
  [TABLE.partitionKey]: partitionOf(clusterId),
  [TABLE.sortKey]: s(sortKey),
});
const clusterKey = (clusterId: string) => itemKey(clusterId, "cluster");
const decisionKey = (clusterId: string, decisionId: string) => itemKey(clusterId, `decision#${decisionId}`);
const idempotencyKey = (clusterId: string, key: string) => itemKey(clusterId, `idempotency#${key}`);
/** Where a decision, or an idempotent answer, too large for its own item keeps its pieces. */
const decisionPieces = (decisionId: string) => `pieces#decision#${decisionId}#`;
const answerPieces = (decisionId: string) => `pieces#answer#${decisionId}#`;

/** A fresh claim of an Idempotency-Key: no answer yet, gone with its lease. */
const claimItem = (clusterId: string, key: string, requestHash: string, lease: Lease) => ({
  ...idempotencyKey(clusterId, key),
  requestHash: s(requestHash),
  leaseUntilMs: n(lease.nowMs + lease.leaseMs),
  [TABLE.ttlAttribute]: expiry(lease.nowMs + lease.leaseMs),
});
const json = (value: unknown): AttributeValue => ({ S: JSON.stringify(value) });
const num = (item: Record<string, AttributeValue>, name: string) => Number(item[name]?.N ?? 0);
const parsed = <T>(item: Record<string, AttributeValue>, name: string, fallback: T): T =>
  item[name]?.S === undefined ? fallback : (JSON.parse(item[name].S) as T);

/**
 * Store failures, classified: a lost condition is the caller's to handle; a refused request
 * (ValidationException: too large, invalid) is not worth retrying; everything else (throttling,
 * timeouts, an unreachable endpoint) is an outage the caller waits out. Either way, no elections.
 */
async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw error;
    if ((error as Error)?.name === "ValidationException") throw new StoreRejectedError(error);
    throw new StoreUnavailableError(error);
  }
}

/** A conditional write: true when it was applied, false when its condition did not hold. */
async function conditionally(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await guarded(write);
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

function clusterOf(item: Record<string, AttributeValue>): ClusterRecord {
  return {
    clusterId: item[TABLE.clustersIndexSortKey]?.S ?? "",
    version: num(item, "version"),
    state: parsed(item, "state", null),
    config: parsed(item, "config", {}),
    lastDecision: parsed(item, "lastDecision", null),
    snapshot: parsed(item, "snapshot", null),
    lastTick: parsed(item, "lastTick", null),
    lastTickKey: item.lastTickKey?.S ?? null,
    createdAtMs: num(item, "createdAtMs"),
    updatedAtMs: num(item, "updatedAtMs"),
  };
}

/** The cluster item's identity, set on every write so that the item is in the clusters index. */
const IDENTITY = `${TABLE.clustersIndexPartitionKey} = :kind, ${TABLE.clustersIndexSortKey} = :clusterId, createdAtMs = if_not_exists(createdAtMs, :now), updatedAtMs = :now`;
const identityValues = (clusterId: string, nowMs: number) => ({
  ":kind": s("cluster"),
  ":clusterId": s(clusterId),
  ":now": n(nowMs),
});

export class DynamoStore implements PacerStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  getCluster(clusterId: string) {
    return guarded(async () => {
      const { Item } = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: clusterKey(clusterId), ConsistentRead: true }),
      );
      return Item ? clusterOf(Item) : null;
    });
  }

  getClusterAndFleet(clusterId: string) {
    return guarded(async () => {
      let keys = [clusterKey(clusterId), FLEET_KEY];
      const items: Record<string, AttributeValue>[] = [];
      for (let attempt = 0; keys.length > 0; attempt++) {
        if (attempt === 5) throw new Error("BatchGetItem left the cluster and fleet items unprocessed");
        // Unprocessed keys mean throttling: back off before asking again.
        if (attempt > 0) await delay(25 * 2 ** attempt);
        const { Responses, UnprocessedKeys } = await this.client.send(
          new BatchGetItemCommand({
            RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } },
          }),
        );
        items.push(...(Responses?.[this.tableName] ?? []));
        keys = (UnprocessedKeys?.[this.tableName]?.Keys ?? []) as typeof keys;
      }
      const fleet = items.find((item) => item[TABLE.partitionKey]?.S === FLEET_KEY[TABLE.partitionKey].S);
      const cluster = items.find((item) => item !== fleet);
      return {
        cluster: cluster ? clusterOf(cluster) : null,
        fleetConfig: fleet ? parsed<ConfigOverrides>(fleet, "config", {}) : {},
      };
    });
  }

  async saveRun(clusterId: string, expectedVersion: number, run: Parameters<PacerStore["saveRun"]>[2]) {
    const versionHolds =
      expectedVersion === 0
        ? "(attribute_not_exists(version) OR version = :expected)"
        : "version = :expected";
    // A tick's run: no run of this tick key or a later one was saved (a redelivered job, a stale ramp).
    const tick = run.tick
      ? {
          set: ", lastTick = :tick, lastTickKey = :tickKey",
          condition: " AND (attribute_not_exists(lastTickKey) OR lastTickKey < :tickKey)",
          values: { ":tick": json(run.tick.outcome), ":tickKey": s(run.tick.key) },
        }
      : { set: "", condition: "", values: {} as Record<string, AttributeValue> };
    return conditionally(() =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: clusterKey(clusterId),
          UpdateExpression: `SET #state = :state, version = :next, lastDecision = :decision${tick.set}, ${IDENTITY}`,
          ConditionExpression: versionHolds + tick.condition,
          ExpressionAttributeNames: { "#state": "state" },
          ExpressionAttributeValues: {
            ":state": json(run.state),
            ":decision": json(run.lastDecision),
            ":next": n(expectedVersion + 1),
            ":expected": n(expectedVersion),
            ...tick.values,
            ...identityValues(clusterId, run.nowMs),
          },
        }),
      ),
    );
  }

  async putConfig(clusterId: string, config: ConfigOverrides, nowMs: number) {
    await guarded(() =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: clusterKey(clusterId),
          UpdateExpression: `SET config = :config, ${IDENTITY}`,
          ExpressionAttributeValues: { ":config": json(config), ...identityValues(clusterId, nowMs) },
        }),
      ),
    );
  }

  deleteCluster(clusterId: string) {
    return conditionally(() =>
      this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: clusterKey(clusterId),
          ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
        }),
      ),
    );
  }

  async resetState(clusterId: string, nowMs: number) {
    return conditionally(() =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: clusterKey(clusterId),
          // The version still goes up, so that a run that read the old state cannot save over the reset.
          UpdateExpression:
            "REMOVE #state SET version = if_not_exists(version, :zero) + :one, updatedAtMs = :now",
          ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
          ExpressionAttributeNames: { "#state": "state" },
          ExpressionAttributeValues: { ":zero": n(0), ":one": n(1), ":now": n(nowMs) },
        }),
      ),
    );
  }

  listClusters(limit: number, cursor?: string) {
    return guarded(async (): Promise<Page<ClusterRecord>> => {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: TABLE.clustersIndex,
          KeyConditionExpression: `${TABLE.clustersIndexPartitionKey} = :kind`,
          ExpressionAttributeValues: { ":kind": s("cluster") },
          Limit: limit,
          ExclusiveStartKey: cursor
            ? JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
            : undefined,
        }),
      );
      const next = result.LastEvaluatedKey;
      return {
        items: (result.Items ?? []).map(clusterOf),
        ...(next ? { cursor: Buffer.from(JSON.stringify(next)).toString("base64url") } : {}),
      };
    });
  }

  async putDecision(clusterId: string, decision: StoredDecision, expiresAtMs: number) {
    const expiresAt = expiry(expiresAtMs);
    const body = await this.putBody(clusterId, decisionPieces(decision.decisionId), decision.body, expiresAt);
    await guarded(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...decisionKey(clusterId, decision.decisionId),
            decisionId: s(decision.decisionId),
            evaluatedAtMs: n(decision.evaluatedAtMs),
            ...body,
            [TABLE.ttlAttribute]: expiresAt,
          },
        }),
      ),
    );
  }

  listDecisions(clusterId: string, options: { limit: number; after?: string; nowMs: number }) {
    return guarded(async () => {
      const decisions: StoredDecision[] = [];
      let start: Record<string, AttributeValue> | undefined;
      do {
        const result = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: `${TABLE.partitionKey} = :pk AND ${TABLE.sortKey} BETWEEN :from AND :to`,
            // TTL deletion is lazy (and absent locally): expired items are filtered by their expiry.
            FilterExpression: `${TABLE.ttlAttribute} > :now`,
            ExpressionAttributeValues: {
              ":pk": partitionOf(clusterId),
              ":from": s(options.after ? `decision#${options.after}\u0000` : "decision#"),
              ":to": s("decision#\uffff"),
              ":now": n(Math.floor(options.nowMs / 1000)),
            },
            ScanIndexForward: false,
            Limit: options.limit,
            ExclusiveStartKey: start,
          }),
        );
        for (const item of result.Items ?? []) {
          const decisionId = item.decisionId?.S ?? "";
          decisions.push({
            decisionId,
            evaluatedAtMs: num(item, "evaluatedAtMs"),
            body: await this.readBody(clusterId, decisionPieces(decisionId), item),
          });
        }
        start = result.LastEvaluatedKey;
      } while (start && decisions.length < options.limit);
      return decisions.slice(0, options.limit);
    });
  }

  async claimIdempotency(
    clusterId: string,
    key: string,
    requestHash: string,
    lease: Lease,
  ): Promise<IdempotencyClaim | null> {
    const Key = idempotencyKey(clusterId, key);
    const { nowMs } = lease;
    const claimed = await conditionally(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: claimItem(clusterId, key, requestHash, lease),
          // Free when absent, expired, or a claim with no answer staged whose lease ran out.
          ConditionExpression: `attribute_not_exists(${TABLE.partitionKey}) OR ${TABLE.ttlAttribute} <= :nowSeconds OR (attribute_not_exists(decisionId) AND leaseUntilMs <= :now)`,
          ExpressionAttributeValues: { ":now": n(nowMs), ":nowSeconds": n(Math.floor(nowMs / 1000)) },
        }),
      ),
    );
    if (claimed) return null;
    const { Item } = await guarded(() =>
      this.client.send(new GetItemCommand({ TableName: this.tableName, Key, ConsistentRead: true })),
    );
    if (!Item) return { done: false, requestHash, leaseUntilMs: nowMs + lease.leaseMs, staged: null };
    const decisionId = Item.decisionId?.S;
    const record: IdempotencyRecord | null =
      decisionId === undefined
        ? null
        : {
            requestHash: Item.requestHash?.S ?? "",
            decisionId,
            status: num(Item, "status"),
            body: await this.readBody(clusterId, answerPieces(decisionId), Item),
          };
    if (record && Item.done?.BOOL) return { done: true, record };
    return {
      done: false,
      requestHash: Item.requestHash?.S ?? "",
      leaseUntilMs: num(Item, "leaseUntilMs"),
      staged: record,
    };
  }

  async stageIdempotency(
    clusterId: string,
    key: string,
    record: IdempotencyRecord,
    lease: Lease,
    expiresAtMs: number,
  ) {
    const expiresAt = expiry(expiresAtMs);
    const body = await this.putBody(clusterId, answerPieces(record.decisionId), record.body, expiresAt);
    return conditionally(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...idempotencyKey(clusterId, key),
            requestHash: s(record.requestHash),
            leaseUntilMs: n(lease.nowMs + lease.leaseMs),
            decisionId: s(record.decisionId),
            status: n(record.status),
            ...body,
            [TABLE.ttlAttribute]: expiresAt,
          },
          // Still this request's claim: nobody took it over meanwhile.
          ConditionExpression: "requestHash = :hash AND attribute_not_exists(done)",
          ExpressionAttributeValues: { ":hash": s(record.requestHash) },
        }),
      ),
    );
  }

  async commitIdempotency(clusterId: string, key: string, decisionId: string) {
    await conditionally(() =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: idempotencyKey(clusterId, key),
          UpdateExpression: "SET done = :true",
          ConditionExpression: "decisionId = :decision",
          ExpressionAttributeValues: { ":true": { BOOL: true }, ":decision": s(decisionId) },
        }),
      ),
    );
  }

  takeOverIdempotency(
    clusterId: string,
    key: string,
    unsavedDecisionId: string,
    requestHash: string,
    lease: Lease,
  ) {
    return conditionally(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: claimItem(clusterId, key, requestHash, lease),
          ConditionExpression:
            "decisionId = :decision AND attribute_not_exists(done) AND leaseUntilMs <= :now",
          ExpressionAttributeValues: { ":decision": s(unsavedDecisionId), ":now": n(lease.nowMs) },
        }),
      ),
    );
  }

  async releaseIdempotency(clusterId: string, key: string, unsavedDecisionId?: string) {
    await conditionally(() =>
      this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: idempotencyKey(clusterId, key),
          ...(unsavedDecisionId === undefined
            ? { ConditionExpression: "attribute_not_exists(decisionId)" }
            : {
                ConditionExpression:
                  "attribute_not_exists(decisionId) OR (decisionId = :decision AND attribute_not_exists(done))",
                ExpressionAttributeValues: { ":decision": s(unsavedDecisionId) },
              }),
        }),
      ),
    );
  }

  getDecision(clusterId: string, decisionId: string) {
    return guarded(async (): Promise<StoredDecision | null> => {
      const { Item } = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: decisionKey(clusterId, decisionId),
          ConsistentRead: true,
        }),
      );
      if (!Item) return null;
      return {
        decisionId,
        evaluatedAtMs: num(Item, "evaluatedAtMs"),
        body: await this.readBody(clusterId, decisionPieces(decisionId), Item),
      };
    });
  }

  getFleetConfig() {
    return guarded(async () => {
      const { Item } = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: FLEET_KEY, ConsistentRead: true }),
      );
      return Item ? parsed<ConfigOverrides>(Item, "config", {}) : {};
    });
  }

  async putFleetConfig(config: ConfigOverrides, nowMs: number) {
    await guarded(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { ...FLEET_KEY, config: json(config), updatedAtMs: n(nowMs) },
        }),
      ),
    );
  }

  async putSnapshot(
    clusterId: string,
    gzipped: Buffer,
    meta: Omit<SnapshotMeta, "chunks" | "compressedBytes">,
  ) {
    if (gzipped.length > MAX_SNAPSHOT_CHUNKS * MAX_STORED_BODY_BYTES)
      throw new SnapshotTooLargeError(gzipped.length);
    // The chunks go first, under a new id; only then does the cluster point at them, so that a reader
    // never sees half of a snapshot. Older chunks expire by themselves.
    const expiresAt = expiry(meta.receivedAtMs + SNAPSHOT_CHUNK_TTL_MS);
    const chunks = await this.writePieces(clusterId, `snapshot#${meta.snapshotId}#`, gzipped, expiresAt);
    const stored: SnapshotMeta = { ...meta, chunks, compressedBytes: gzipped.length };
    let replaced: SnapshotMeta | null = null;
    await conditionally(async () => {
      const { Attributes } = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: clusterKey(clusterId),
          UpdateExpression: `SET #snapshot = :snapshot, snapshotReceivedAtMs = :received, ${IDENTITY}`,
          // A slow upload must not replace a newer snapshot.
          ConditionExpression:
            "attribute_not_exists(snapshotReceivedAtMs) OR snapshotReceivedAtMs <= :received",
          ExpressionAttributeNames: { "#snapshot": "snapshot" },
          ExpressionAttributeValues: {
            ":snapshot": json(stored),
            ":received": n(meta.receivedAtMs),
            ...identityValues(clusterId, meta.receivedAtMs),
          },
          ReturnValues: "UPDATED_OLD",
        }),
      );
      replaced = Attributes ? parsed<SnapshotMeta | null>(Attributes, "snapshot", null) : null;
    });
    const old = replaced as SnapshotMeta | null;
    if (old && old.snapshotId !== meta.snapshotId)
      await this.retireSnapshot(clusterId, old, meta.receivedAtMs);
    return stored;
  }

  /**
   * A replaced snapshot is kept a little longer, for a reader that looked it up just before, then
   * expires: a cluster's stored snapshots stay a handful, however often its agent uploads.
   */
  private async retireSnapshot(clusterId: string, replaced: SnapshotMeta, nowMs: number) {
    const expiresAt = expiry(nowMs + REPLACED_SNAPSHOT_TTL_MS);
    for (let k = 0; k < replaced.chunks; k++)
      await conditionally(() =>
        this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: itemKey(clusterId, `snapshot#${replaced.snapshotId}#${String(k).padStart(3, "0")}`),
            UpdateExpression: `SET ${TABLE.ttlAttribute} = :expiresAt`,
            ConditionExpression: `attribute_exists(${TABLE.partitionKey}) AND ${TABLE.ttlAttribute} > :expiresAt`,
            ExpressionAttributeValues: { ":expiresAt": expiresAt },
          }),
        ),
      );
  }

  async getSnapshot(clusterId: string, meta: SnapshotMeta) {
    const gzipped = await this.readPieces(clusterId, `snapshot#${meta.snapshotId}#`, meta.chunks);
    // One chunk for a snapshot of thousands of partitions, not a round trip per 16 KB.
    return gzipped && (await gunzip(gzipped, { chunkSize: SNAPSHOT_INFLATE_CHUNK })).toString("utf8");
  }

  async recordTick(clusterId: string, outcome: TickOutcome) {
    await conditionally(() =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: clusterKey(clusterId),
          UpdateExpression: "SET lastTick = :tick",
          ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
          ExpressionAttributeValues: { ":tick": json(outcome) },
        }),
      ),
    );
  }

  async ping() {
    await guarded(() => this.client.send(new DescribeTableCommand({ TableName: this.tableName })));
  }

  /**
   * A body, gzip'd, for its head item: inline when it fits in one item, else written first as pieces
   * under `prefix` and only counted by the head, so that a reader never sees half of it.
   */
  private async putBody(
    clusterId: string,
    prefix: string,
    body: string,
    expiresAt: AttributeValue,
  ): Promise<Record<string, AttributeValue>> {
    const gzipped = await gzip(body);
    if (gzipped.length <= MAX_STORED_BODY_BYTES) return { body: { B: gzipped } };
    return { pieces: n(await this.writePieces(clusterId, prefix, gzipped, expiresAt)) };
  }

  private async readBody(clusterId: string, prefix: string, head: Record<string, AttributeValue>) {
    const gzipped = head.body?.B ?? (await this.readPieces(clusterId, prefix, num(head, "pieces")));
    if (!gzipped) throw new StoreUnavailableError(new Error(`the pieces under ${prefix} are missing`));
    return (await gunzip(gzipped)).toString("utf8");
  }

  /** `bytes` in items of at most MAX_STORED_BODY_BYTES under `prefix` + 000, 001, …; returns how many. */
  private async writePieces(clusterId: string, prefix: string, bytes: Buffer, expiresAt: AttributeValue) {
    const count = Math.max(1, Math.ceil(bytes.length / MAX_STORED_BODY_BYTES));
    const requests = Array.from({ length: count }, (_, k) => ({
      PutRequest: {
        Item: {
          ...itemKey(clusterId, `${prefix}${String(k).padStart(3, "0")}`),
          body: { B: bytes.subarray(k * MAX_STORED_BODY_BYTES, (k + 1) * MAX_STORED_BODY_BYTES) },
          [TABLE.ttlAttribute]: expiresAt,
        },
      },
    }));
    await guarded(() => batchWrite(this.client, this.tableName, requests, `pieces under ${prefix}`));
    return count;
  }

  /** The pieces under `prefix` joined, or null when not all `count` are there (expired). */
  private readPieces(clusterId: string, prefix: string, count: number): Promise<Buffer | null> {
    return guarded(async () => {
      const pieces: Uint8Array[] = [];
      let start: Record<string, AttributeValue> | undefined;
      do {
        // A query answers at most 1 MB: large bodies take several pages.
        const page = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: `${TABLE.partitionKey} = :pk AND begins_with(${TABLE.sortKey}, :prefix)`,
            ExpressionAttributeValues: { ":pk": partitionOf(clusterId), ":prefix": s(prefix) },
            ConsistentRead: true,
            ExclusiveStartKey: start,
          }),
        );
        for (const item of page.Items ?? []) pieces.push(item.body?.B ?? new Uint8Array());
        start = page.LastEvaluatedKey;
      } while (start);
      return pieces.length === count ? Buffer.concat(pieces) : null;
    });
  }
}
