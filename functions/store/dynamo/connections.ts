import { GetItemCommand, PutItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { ClusterConnection } from "../../../schemas/connection.ts";
import {
  clusterKey,
  conditionally,
  deleteIfExists,
  guarded,
  IDENTITY,
  identityValues,
  itemKey,
  json,
  n,
  parsed,
  type Table,
} from "./items.ts";

/**
 * How the worker reaches a cluster: an item of its own in the cluster's partition. It holds no secret,
 * only references to them (schemas/connection.ts). The cluster item carries `connected`, so that the
 * tick, which lists cluster items only, knows to queue a cluster that has no stored snapshot: the
 * worker reads it itself.
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
    // The connection first: a flag without one is a tick job that finds nothing to connect with.
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: `SET connected = :true, ${IDENTITY}`,
        ExpressionAttributeValues: { ":true": { BOOL: true }, ...identityValues(clusterId, nowMs) },
      }),
    );
  });
}

/** False if the cluster had none. */
export async function deleteConnection(table: Table, clusterId: string): Promise<boolean> {
  // The flag first, so that no tick queues the cluster for a connection that is going away.
  await conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: "REMOVE connected",
        ConditionExpression: "attribute_exists(connected)",
      }),
    ),
  );
  return deleteIfExists(table, connectionKey(clusterId));
}
