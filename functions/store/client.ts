import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
} from "@aws-sdk/client-dynamodb";
import { createTableInput } from "./table.ts";

export interface ClientOptions {
  /** A DynamoDB-protocol endpoint (the embedded store, DynamoDB Local); absent: AWS's own. */
  endpoint?: string;
  region?: string;
}

/**
 * A client that fails fast: a store that cannot answer within a few seconds means no elections (503),
 * which is safer than a controller waiting on us.
 */
export function dynamoClient({ endpoint, region }: ClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    region: region ?? process.env.AWS_REGION ?? "us-east-1",
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 1000, requestTimeout: 5000 },
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
