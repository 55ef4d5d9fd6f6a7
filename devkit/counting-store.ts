import { setTimeout as delay } from "node:timers/promises";
import { dynamoClient } from "../functions/store/client.ts";
import { DynamoStore } from "../functions/store/dynamo-store.ts";

/**
 * The service's store on a client that counts every DynamoDB request by command and, optionally,
 * delays each by `latencyMs` first (a store as far away as DynamoDB is from Lambda). Nothing is
 * faked: every request goes to the DynamoDB-protocol server at `endpoint`.
 */
export function countingStore(endpoint: string, tableName: string, latencyMs = 0) {
  const client = dynamoClient({ endpoint });
  const calls = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      calls.set(context.commandName ?? "?", (calls.get(context.commandName ?? "?") ?? 0) + 1);
      if (latencyMs > 0) await delay(latencyMs);
      return next(args);
    },
    { step: "initialize", name: "countRequests" },
  );
  return {
    store: new DynamoStore(client, tableName),
    calls,
    total: () => [...calls.values()].reduce((sum, n) => sum + n, 0),
    reset: () => calls.clear(),
    close: () => client.destroy(),
  };
}
