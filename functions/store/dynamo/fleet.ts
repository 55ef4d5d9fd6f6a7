import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { ConfigOverrides } from "../../../schemas/config.ts";
import { TABLE } from "../table.ts";
import { guarded, json, n, parsed, type Table } from "./items.ts";

/** The fleet's config: one item, outside every cluster's partition. */
export const FLEET_KEY = { [TABLE.partitionKey]: { S: "fleet" }, [TABLE.sortKey]: { S: "config" } };

export function getFleetConfig(table: Table) {
  return guarded(async () => {
    const { Item } = await table.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: FLEET_KEY, ConsistentRead: true }),
    );
    return Item ? parsed<ConfigOverrides>(Item, "config", {}) : {};
  });
}

export async function putFleetConfig(table: Table, config: ConfigOverrides, nowMs: number) {
  await guarded(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: { ...FLEET_KEY, config: json(config), updatedAtMs: n(nowMs) },
      }),
    ),
  );
}
