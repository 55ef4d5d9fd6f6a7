import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  EMPTY_RECORD,
  type ThrottleRecord,
  type VersionedThrottleRecord,
} from "../../../schemas/throttle-record.ts";
import { TABLE } from "../table.ts";
import { conditionally, guarded, itemKey, json, n, num, parsed, type Table } from "./items.ts";

/**
 * A cluster's catch-up throttle record: an item of its own in the cluster's partition, so that it
 * outlives the cluster item (a cluster removed from the fleet may still hold a throttle to lift).
 */
const recordKey = (clusterId: string) => itemKey(clusterId, "catch-up-throttles");

export function getThrottleRecord(table: Table, clusterId: string): Promise<VersionedThrottleRecord> {
  return guarded(async () => {
    const { Item } = await table.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: recordKey(clusterId), ConsistentRead: true }),
    );
    if (!Item) return { version: 0, record: structuredClone(EMPTY_RECORD) };
    return { version: num(Item, "version"), record: parsed<ThrottleRecord>(Item, "record", EMPTY_RECORD) };
  });
}

/** Writes the record if its stored version is still `expectedVersion`: the new version, or null. */
export async function putThrottleRecord(
  table: Table,
  clusterId: string,
  record: ThrottleRecord,
  expectedVersion: number,
  nowMs: number,
): Promise<number | null> {
  const version = expectedVersion + 1;
  const written = await conditionally(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: { ...recordKey(clusterId), record: json(record), version: n(version), updatedAtMs: n(nowMs) },
        ConditionExpression:
          expectedVersion === 0 ? `attribute_not_exists(${TABLE.partitionKey})` : "version = :expected",
        ...(expectedVersion === 0 ? {} : { ExpressionAttributeValues: { ":expected": n(expectedVersion) } }),
      }),
    ),
  );
  return written ? version : null;
}
