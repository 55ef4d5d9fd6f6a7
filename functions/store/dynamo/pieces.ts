import { promisify } from "node:util";
import { gunzip as gunzipCallback, gzip as gzipCallback } from "node:zlib";
import { type AttributeValue, QueryCommand } from "@aws-sdk/client-dynamodb";
import { batchWrite } from "../batch-write.ts";
import { StoreUnavailableError } from "../store.ts";
import { TABLE } from "../table.ts";
import { guarded, itemKey, n, num, partitionOf, s, type Table } from "./items.ts";

/**
 * Bodies larger than an item: a decision's answer, an idempotent answer, a snapshot. Each is
 * gzip'd and, when still too large, written as numbered pieces before the item that counts them.
 */

/** DynamoDB holds 400 KB per item: a stored body (gzip'd) goes in pieces of at most this. */
export const MAX_STORED_BODY_BYTES = 350_000;

/** zlib on libuv's threads: many clusters' snapshots and decisions at once do not queue on the event loop. */
export const gzip = promisify(gzipCallback);
export const gunzip = promisify(gunzipCallback);

/**
 * A body, gzip'd, for its head item: inline when it fits in one item, else written first as pieces
 * under `prefix` and only counted by the head, so that a reader never sees half of it.
 */
export async function putBody(
  table: Table,
  clusterId: string,
  prefix: string,
  body: string,
  expiresAt: AttributeValue,
): Promise<Record<string, AttributeValue>> {
  const gzipped = await gzip(body);
  if (gzipped.length <= MAX_STORED_BODY_BYTES) return { body: { B: gzipped } };
  return { pieces: n(await writePieces(table, clusterId, prefix, gzipped, expiresAt)) };
}

export async function readBody(
  table: Table,
  clusterId: string,
  prefix: string,
  head: Record<string, AttributeValue>,
) {
  const gzipped = head.body?.B ?? (await readPieces(table, clusterId, prefix, num(head, "pieces")));
  if (!gzipped) throw new StoreUnavailableError(new Error(`the pieces under ${prefix} are missing`));
  return (await gunzip(gzipped)).toString("utf8");
}

/** `bytes` in items of at most MAX_STORED_BODY_BYTES under `prefix` + 000, 001, …; returns how many. */
export async function writePieces(
  table: Table,
  clusterId: string,
  prefix: string,
  bytes: Buffer,
  expiresAt: AttributeValue,
) {
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
  await guarded(() => batchWrite(table.client, table.tableName, requests, `pieces under ${prefix}`));
  return count;
}

/** The pieces under `prefix` joined, or null when not all `count` are there (expired). */
export function readPieces(
  table: Table,
  clusterId: string,
  prefix: string,
  count: number,
): Promise<Buffer | null> {
  return guarded(async () => {
    const pieces: Uint8Array[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      // A query answers at most 1 MB: large bodies take several pages.
      const page = await table.client.send(
        new QueryCommand({
          TableName: table.tableName,
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
