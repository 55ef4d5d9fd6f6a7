import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { ClusterConnection } from "../../../schemas/connection.ts";
import { deleteIfExists, guarded, itemKey, json, n, parsed, type Table } from "./items.ts";

/**
 * How the worker reaches a cluster: an item of its own in the cluster's partition. It holds no secret,
 * only references to them (schemas/connection.ts).
 */
const connectionKey = (clusterId: string) => itemKey(clusterId, "connection");

export function getConnection(table: Table, clusterId: string): Promise<ClusterConnection | null> {
  return guarded(async () => {
    const { Item } = await table.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: connectionKey(clusterId), ConsistentRead: true }),
    );
    return Item ? parsed<ClusterConnection | null>(Item, "connection", null) : null;
  });
}

export function putConnection(
  table: Table,
  clusterId: string,
  connection: ClusterConnection,
  nowMs: number,
): Promise<void> {
  return guarded(async () => {
    await table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: { ...connectionKey(clusterId), connection: json(connection), updatedAtMs: n(nowMs) },
      }),
    );
  });
}

/** False if the cluster had none. */
export function deleteConnection(table: Table, clusterId: string): Promise<boolean> {
  return deleteIfExists(table, connectionKey(clusterId));
}
