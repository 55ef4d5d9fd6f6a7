import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
} from "@aws-sdk/client-dynamodb";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { HttpHandlerOptions } from "@smithy/types";
import pLimit from "p-limit";
import { createTableInput } from "./table.ts";

export interface ClientOptions {
  /** A DynamoDB-protocol endpoint (the embedded store, DynamoDB Local); absent: AWS's own. */
  endpoint?: string;
  region?: string;
  timeouts?: Partial<StoreTimeouts>;
}

export interface StoreTimeouts {
  /** Time to open a TCP (and TLS) connection: only that, never the wait for a pooled one. */
  connectionMs: number;
  /** Time for a whole request, from asking for a connection to the last byte of the answer. */
  requestMs: number;
  /** Connections to the store at most; requests beyond them wait their turn within `requestMs`. */
  maxSockets: number;
}

export const STORE_TIMEOUTS: StoreTimeouts = { connectionMs: 1_000, requestMs: 5_000, maxSockets: 50 };

const timeoutError = (message: string) => Object.assign(new Error(message), { name: "TimeoutError" });

/**
 * The SDK's Node handler starts its connection timer when a request is made, so a request that waits
 * for one of the pool's sockets fails as if the store could not be reached; and its request timeout
 * only logs. Here a request first waits for a free socket (counted against its request timeout, not
 * the connection timeout), and a request past its timeout fails.
 */
class PooledHttpHandler extends NodeHttpHandler {
  private readonly sockets: ReturnType<typeof pLimit>;

  constructor(private readonly timeouts: StoreTimeouts) {
    super({
      connectionTimeout: timeouts.connectionMs,
      requestTimeout: timeouts.requestMs,
      throwOnRequestTimeout: true,
      httpAgent: { keepAlive: true, maxSockets: timeouts.maxSockets },
      httpsAgent: { keepAlive: true, maxSockets: timeouts.maxSockets },
    });
    this.sockets = pLimit(timeouts.maxSockets);
  }

  override handle(request: Parameters<NodeHttpHandler["handle"]>[0], options: HttpHandlerOptions = {}) {
    const startedAtMs = Date.now();
    const { requestMs } = this.timeouts;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(timeoutError(`no connection to the store was free within ${requestMs} ms`)),
        requestMs,
      );
    });
    const sent = this.sockets(() => {
      clearTimeout(timer);
      const leftMs = requestMs - (Date.now() - startedAtMs);
      if (leftMs <= 0) throw timeoutError(`no connection to the store was free within ${requestMs} ms`);
      return super.handle(request, { ...options, requestTimeout: leftMs });
    });
    return Promise.race([sent, waited]).finally(() => clearTimeout(timer));
  }
}

/**
 * A client that fails fast: a store that cannot answer within a few seconds means no elections (503),
 * which is safer than a controller waiting on us.
 */
export function dynamoClient({ endpoint, region, timeouts }: ClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    region: region ?? process.env.AWS_REGION ?? "us-east-1",
    maxAttempts: 2,
    requestHandler: new PooledHttpHandler({ ...STORE_TIMEOUTS, ...timeouts }),
    ...(endpoint
      ? {
          endpoint,
          // Local DynamoDB-protocol servers accept any credentials; AWS's own come from the environment.
          credentials: {
            accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? "local",
            secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? "local",
          },
        }
      : {}),
  });
}

/** Creates the table if it does not exist and waits until it is active (local stores and tests). */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  }
  for (let attempt = 0; attempt < 100; attempt++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every(
      (index) => index.IndexStatus === "ACTIVE",
    );
    if (Table?.TableStatus === "ACTIVE" && indexesActive) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`table ${tableName} did not become active`);
}
