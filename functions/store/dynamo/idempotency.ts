import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { IdempotencyClaim, IdempotencyRecord, Lease } from "../store.ts";
import { TABLE } from "../table.ts";
import { conditionally, expiry, guarded, itemKey, n, num, s, type Table } from "./items.ts";
import { putBody, readBody } from "./pieces.ts";

/**
 * Idempotency-Key records: claimed with a lease, the answer staged before the run is saved,
 * committed after; a claim whose holder died is taken over once its lease runs out.
 */

const idempotencyKey = (clusterId: string, key: string) => itemKey(clusterId, `idempotency#${key}`);
/** Where an idempotent answer too large for its own item keeps its pieces. */
const answerPieces = (decisionId: string) => `pieces#answer#${decisionId}#`;

/** A fresh claim of an Idempotency-Key: no answer yet, gone with its lease. */
const claimItem = (clusterId: string, key: string, requestHash: string, lease: Lease) => ({
  ...idempotencyKey(clusterId, key),
  requestHash: s(requestHash),
  leaseUntilMs: n(lease.nowMs + lease.leaseMs),
  [TABLE.ttlAttribute]: expiry(lease.nowMs + lease.leaseMs),
});
export async function claimIdempotency(
  table: Table,
  clusterId: string,
  key: string,
  requestHash: string,
  lease: Lease,
): Promise<IdempotencyClaim | null> {
  const Key = idempotencyKey(clusterId, key);
  const { nowMs } = lease;
  const claimed = await conditionally(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: claimItem(clusterId, key, requestHash, lease),
        // Free when absent, expired, or a claim with no answer staged whose lease ran out.
        ConditionExpression: `attribute_not_exists(${TABLE.partitionKey}) OR ${TABLE.ttlAttribute} <= :nowSeconds OR (attribute_not_exists(decisionId) AND leaseUntilMs <= :now)`,
        ExpressionAttributeValues: { ":now": n(nowMs), ":nowSeconds": n(Math.floor(nowMs / 1000)) },
      }),
    ),
  );
  if (claimed) return null;
  const { Item } = await guarded(() =>
    table.client.send(new GetItemCommand({ TableName: table.tableName, Key, ConsistentRead: true })),
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
          body: await readBody(table, clusterId, answerPieces(decisionId), Item),
        };
  if (record && Item.done?.BOOL) return { done: true, record };
  return {
    done: false,
    requestHash: Item.requestHash?.S ?? "",
    leaseUntilMs: num(Item, "leaseUntilMs"),
    staged: record,
  };
}

export async function stageIdempotency(
  table: Table,
  clusterId: string,
  key: string,
  record: IdempotencyRecord,
  lease: Lease,
  expiresAtMs: number,
) {
  const expiresAt = expiry(expiresAtMs);
  const body = await putBody(table, clusterId, answerPieces(record.decisionId), record.body, expiresAt);
  return conditionally(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
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

export async function commitIdempotency(table: Table, clusterId: string, key: string, decisionId: string) {
  await conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: idempotencyKey(clusterId, key),
        UpdateExpression: "SET done = :true",
        ConditionExpression: "decisionId = :decision",
        ExpressionAttributeValues: { ":true": { BOOL: true }, ":decision": s(decisionId) },
      }),
    ),
  );
}

export function takeOverIdempotency(
  table: Table,
  clusterId: string,
  key: string,
  unsavedDecisionId: string,
  requestHash: string,
  lease: Lease,
) {
  return conditionally(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: claimItem(clusterId, key, requestHash, lease),
        ConditionExpression: "decisionId = :decision AND attribute_not_exists(done) AND leaseUntilMs <= :now",
        ExpressionAttributeValues: { ":decision": s(unsavedDecisionId), ":now": n(lease.nowMs) },
      }),
    ),
  );
}

export async function releaseIdempotency(
  table: Table,
  clusterId: string,
  key: string,
  unsavedDecisionId?: string,
) {
  await conditionally(() =>
    table.client.send(
      new DeleteItemCommand({
        TableName: table.tableName,
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
