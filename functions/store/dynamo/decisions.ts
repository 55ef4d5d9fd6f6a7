import { type AttributeValue, GetItemCommand, PutItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import type { StoredDecision } from "../store.ts";
import { TABLE } from "../table.ts";
import { expiry, guarded, itemKey, n, num, partitionOf, s, type Table } from "./items.ts";
import { putBody, readBody } from "./pieces.ts";

/** A cluster's decisions, newest first, each with the answer exactly as it was sent; they expire. */

const decisionKey = (clusterId: string, decisionId: string) => itemKey(clusterId, `decision#${decisionId}`);
/** Where a decision too large for its own item keeps its pieces. */
const decisionPieces = (decisionId: string) => `pieces#decision#${decisionId}#`;

export async function putDecision(
  table: Table,
  clusterId: string,
  decision: StoredDecision,
  expiresAtMs: number,
) {
  const expiresAt = expiry(expiresAtMs);
  const body = await putBody(table, clusterId, decisionPieces(decision.decisionId), decision.body, expiresAt);
  await guarded(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
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

export function listDecisions(
  table: Table,
  clusterId: string,
  options: { limit: number; after?: string; nowMs: number },
) {
  return guarded(async () => {
    const decisions: StoredDecision[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const result = await table.client.send(
        new QueryCommand({
          TableName: table.tableName,
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
          body: await readBody(table, clusterId, decisionPieces(decisionId), item),
        });
      }
      start = result.LastEvaluatedKey;
    } while (start && decisions.length < options.limit);
    return decisions.slice(0, options.limit);
  });
}

export function getDecision(table: Table, clusterId: string, decisionId: string) {
  return guarded(async (): Promise<StoredDecision | null> => {
    const { Item } = await table.client.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: decisionKey(clusterId, decisionId),
        ConsistentRead: true,
      }),
    );
    if (!Item) return null;
    return {
      decisionId,
      evaluatedAtMs: num(Item, "evaluatedAtMs"),
      body: await readBody(table, clusterId, decisionPieces(decisionId), Item),
    };
  });
}
