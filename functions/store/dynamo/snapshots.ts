import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { SnapshotMeta } from "../store.ts";
import { TABLE } from "../table.ts";
import {
  clusterKey,
  conditionally,
  expiry,
  IDENTITY,
  identityValues,
  itemKey,
  json,
  n,
  parsed,
  type Table,
} from "./items.ts";
import { gunzip, MAX_STORED_BODY_BYTES, readPieces, writePieces } from "./pieces.ts";

/** A cluster's latest snapshot, gzip'd in up to 16 pieces; the cluster item points at it. */

/** A snapshot may take this many items: 5.6 MB of gzip'd JSON, tens of MB of snapshot. */
export const MAX_SNAPSHOT_CHUNKS = 16;
/** The latest snapshot lives a day (`pacer.snapshot.max.age.ms` may be that long); a replaced one, minutes. */
const SNAPSHOT_CHUNK_TTL_MS = 86_400_000;
const REPLACED_SNAPSHOT_TTL_MS = 10 * 60_000;
const SNAPSHOT_INFLATE_CHUNK = 1024 * 1024;

export class SnapshotTooLargeError extends Error {
  constructor(readonly compressedBytes: number) {
    super(
      `the snapshot is ${compressedBytes} bytes gzip'd; at most ${MAX_SNAPSHOT_CHUNKS * MAX_STORED_BODY_BYTES} are stored (send only imbalanced partitions with brokers[].preferredCount)`,
    );
  }
}

export async function putSnapshot(
  table: Table,
  clusterId: string,
  gzipped: Buffer,
  meta: Omit<SnapshotMeta, "chunks" | "compressedBytes">,
) {
  if (gzipped.length > MAX_SNAPSHOT_CHUNKS * MAX_STORED_BODY_BYTES)
    throw new SnapshotTooLargeError(gzipped.length);
  // The chunks go first, under a new id; only then does the cluster point at them, so that a reader
  // never sees half of a snapshot. Older chunks expire by themselves.
  const expiresAt = expiry(meta.receivedAtMs + SNAPSHOT_CHUNK_TTL_MS);
  const chunks = await writePieces(table, clusterId, `snapshot#${meta.snapshotId}#`, gzipped, expiresAt);
  const stored: SnapshotMeta = { ...meta, chunks, compressedBytes: gzipped.length };
  let replaced: SnapshotMeta | null = null;
  await conditionally(async () => {
    const { Attributes } = await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
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
    await retireSnapshot(table, clusterId, old, meta.receivedAtMs);
  return stored;
}

/**
 * A replaced snapshot is kept a little longer, for a reader that looked it up just before, then
 * expires: a cluster's stored snapshots stay a handful, however often its agent uploads.
 */
async function retireSnapshot(table: Table, clusterId: string, replaced: SnapshotMeta, nowMs: number) {
  const expiresAt = expiry(nowMs + REPLACED_SNAPSHOT_TTL_MS);
  for (let k = 0; k < replaced.chunks; k++)
    await conditionally(() =>
      table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: itemKey(clusterId, `snapshot#${replaced.snapshotId}#${String(k).padStart(3, "0")}`),
          UpdateExpression: `SET ${TABLE.ttlAttribute} = :expiresAt`,
          ConditionExpression: `attribute_exists(${TABLE.partitionKey}) AND ${TABLE.ttlAttribute} > :expiresAt`,
          ExpressionAttributeValues: { ":expiresAt": expiresAt },
        }),
      ),
    );
}

export async function getSnapshot(table: Table, clusterId: string, meta: SnapshotMeta) {
  const gzipped = await readPieces(table, clusterId, `snapshot#${meta.snapshotId}#`, meta.chunks);
  // One chunk for a snapshot of thousands of partitions, not a round trip per 16 KB.
  return gzipped && (await gunzip(gzipped, { chunkSize: SNAPSHOT_INFLATE_CHUNK })).toString("utf8");
}
