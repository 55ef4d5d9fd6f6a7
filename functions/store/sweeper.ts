import { type AttributeValue, type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { batchWrite } from "./batch-write.ts";
import { TABLE } from "./table.ts";

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
    await batchWrite(
      client,
      tableName,
      keys.map((Key) => ({ DeleteRequest: { Key } })),
      "expired items",
    );
    deleted += keys.length;
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
