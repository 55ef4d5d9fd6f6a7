import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import { StoreRejectedError, StoreUnavailableError } from "../store.ts";
import { TABLE } from "../table.ts";

/** The table every piece of the store reads and writes. */
export interface Table {
  client: DynamoDBClient;
  tableName: string;
}

export const s = (value: string): AttributeValue => ({ S: value });
export const n = (value: number): AttributeValue => ({ N: String(value) });
/** The TTL attribute's value: epoch seconds. */
export const expiry = (atMs: number): AttributeValue => n(Math.ceil(atMs / 1000));
export const json = (value: unknown): AttributeValue => ({ S: JSON.stringify(value) });
export const num = (item: Record<string, AttributeValue>, name: string) => Number(item[name]?.N ?? 0);
export const parsed = <T>(item: Record<string, AttributeValue>, name: string, fallback: T): T =>
  item[name]?.S === undefined ? fallback : (JSON.parse(item[name].S) as T);

/** Every item of a cluster shares its partition; the sort key says which item it is. */
export const partitionOf = (clusterId: string) => s(`cluster#${clusterId}`);
export const itemKey = (clusterId: string, sortKey: string) => ({
  [TABLE.partitionKey]: partitionOf(clusterId),
  [TABLE.sortKey]: s(sortKey),
});
export const clusterKey = (clusterId: string) => itemKey(clusterId, "cluster");

/** The cluster item's identity, set on every write so that the item is in the clusters index. */
export const IDENTITY = `${TABLE.clustersIndexPartitionKey} = :kind, ${TABLE.clustersIndexSortKey} = :clusterId, createdAtMs = if_not_exists(createdAtMs, :now), updatedAtMs = :now`;
export const identityValues = (clusterId: string, nowMs: number) => ({
  ":kind": s("cluster"),
  ":clusterId": s(clusterId),
  ":now": n(nowMs),
});

/**
 * Store failures, classified: a lost condition is the caller's to handle; a refused request
 * (ValidationException: too large, invalid) is not worth retrying; everything else (throttling,
 * timeouts, an unreachable endpoint) is an outage the caller waits out. Either way, no elections.
 */
export async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw error;
    if ((error as Error)?.name === "ValidationException") throw new StoreRejectedError(error);
    throw new StoreUnavailableError(error);
  }
}

/** Deletes an item; false when there was none. */
export function deleteIfExists(table: Table, key: Record<string, AttributeValue>): Promise<boolean> {
  return conditionally(() =>
    table.client.send(
      new DeleteItemCommand({
        TableName: table.tableName,
        Key: key,
        ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
      }),
    ),
  );
}

/** A conditional write: true when it was applied, false when its condition did not hold. */
export async function conditionally(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await guarded(write);
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
