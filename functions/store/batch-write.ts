import { setTimeout as delay } from "node:timers/promises";
import { BatchWriteItemCommand, type DynamoDBClient, type WriteRequest } from "@aws-sdk/client-dynamodb";

/** BatchWriteItem takes at most this many items per call. */
const BATCH_WRITE_LIMIT = 25;
const ATTEMPTS = 5;

/**
 * Puts or deletes `requests` in calls of 25. Items a call leaves unprocessed mean throttling: they are
 * sent again after a backoff, and an error names `what` if some are still left after five attempts.
 */
export async function batchWrite(
  client: DynamoDBClient,
  tableName: string,
  requests: WriteRequest[],
  what: string,
): Promise<void> {
  for (let from = 0; from < requests.length; from += BATCH_WRITE_LIMIT) {
    let pending = requests.slice(from, from + BATCH_WRITE_LIMIT);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt === ATTEMPTS) throw new Error(`BatchWriteItem left ${what} unprocessed`);
      if (attempt > 0) await delay(25 * 2 ** attempt);
      const { UnprocessedItems } = await client.send(
        new BatchWriteItemCommand({ RequestItems: { [tableName]: pending } }),
      );
      pending = UnprocessedItems?.[tableName] ?? [];
    }
  }
}
