import {
  type AttributeValue,
  BatchWriteItemCommand,
  type DynamoDBClient,
  ScanCommand,
} from "@aws-sdk/client-dynamodb";
import { TABLE } from "./table.ts";

/** BatchWriteItem takes at most this many items per call. */
const BATCH_WRITE_LIMIT = 25;
/** Items read per Scan page: a sweep yields to requests between pages. */
const PAGE_SIZE = 500;

/**
 * DynamoDB's TTL for a store that has none (dynalite, the embedded store): deletes every item whose
 * `expiresAt` (epoch seconds) has passed, a page at a time. Readers already ignore expired items, so
 * a sweep changes no answer; it only gives the disk back. Returns how many items it deleted.
 */
export async function sweepExpired(
  client: DynamoDBClient,
  tableName: string,
  nowMs: number,
): Promise<number> {
  let deleted = 0;
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: `${TABLE.ttlAttribute} <= :now`,
        ProjectionExpression: `${TABLE.partitionKey}, ${TABLE.sortKey}`,
        ExpressionAttributeValues: { ":now": { N: String(Math.floor(nowMs / 1000)) } },
        Limit: PAGE_SIZE,
        ExclusiveStartKey: start,
      }),
    );
    const keys = page.Items ?? [];
    for (let from = 0; from < keys.length; from += BATCH_WRITE_LIMIT) {
      let pending = keys.slice(from, from + BATCH_WRITE_LIMIT).map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
        const { UnprocessedItems } = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [tableName]: pending } }),
        );
        pending = (UnprocessedItems?.[tableName] ?? []) as typeof pending;
      }
      deleted += Math.min(BATCH_WRITE_LIMIT, keys.length - from) - pending.length;
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return deleted;
}

/** Sweeps every `everyMs`; a failed sweep is reported and the next one tries again. */
export function startSweeper(
  client: DynamoDBClient,
  tableName: string,
  everyMs: number,
  report: (outcome: { deleted: number } | { error: Error }) => void,
): { stop(): Promise<void> } {
  let sweeping: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = sweepExpired(client, tableName, Date.now())
      .then(
        (deleted) => report({ deleted }),
        (error: Error) => report({ error }),
      )
      .finally(() => {
        sweeping = undefined;
      });
  }, everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await sweeping;
    },
  };
}
