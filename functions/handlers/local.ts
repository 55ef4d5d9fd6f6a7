import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createApp, DEFAULT_MAX_BODY_BYTES } from "../api/app.ts";
import { TokenAuth } from "../api/auth.ts";
import { dynamoClient, ensureTable } from "../store/client.ts";
import { DynamoStore } from "../store/dynamo-store.ts";
import { startEmbeddedStore } from "../store/embedded.ts";

export interface LocalServerOptions {
  port: number;
  host: string;
  /** The embedded store's LevelDB folder; ignored when `dynamoEndpoint` is set. */
  dataDir: string;
  /** A DynamoDB-protocol endpoint to use instead of the embedded store ("aws" for AWS's own). */
  dynamoEndpoint?: string;
  tableName: string;
  auth?: TokenAuth;
  maxBodyBytes: number;
}

export interface LocalServer {
  url: string;
  close(): Promise<void>;
}

export function optionsFromEnvironment(env: NodeJS.ProcessEnv): LocalServerOptions {
  return {
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? "127.0.0.1",
    dataDir: env.PACER_DATA_DIR ?? "./.pacer-data",
    dynamoEndpoint: env.DYNAMODB_ENDPOINT,
    tableName: env.PACER_TABLE ?? "leadership-pacer",
    auth: TokenAuth.fromEnvironment(env),
    maxBodyBytes: Number(env.PACER_MAX_BODY_BYTES ?? DEFAULT_MAX_BODY_BYTES),
  };
}

/** The service as a plain Node server, on the embedded store unless pointed at another. */
export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  const embedded = options.dynamoEndpoint
    ? undefined
    : await startEmbeddedStore({ dataDir: options.dataDir });
  const endpoint =
    options.dynamoEndpoint === "aws" ? undefined : (options.dynamoEndpoint ?? embedded?.endpoint);
  const client = dynamoClient({ endpoint });
  if (endpoint) await ensureTable(client, options.tableName);
  const store = new DynamoStore(client, options.tableName);
  const app = createApp({ store, auth: options.auth, maxBodyBytes: options.maxBodyBytes });

  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, port: options.port, hostname: options.host }, () =>
      resolve(started),
    );
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      client.destroy();
      await embedded?.close();
    },
  };
}

export async function serveFromEnvironment(): Promise<void> {
  const options = optionsFromEnvironment(process.env);
  const server = await startLocalServer(options);
  const store = options.dynamoEndpoint
    ? `DynamoDB at ${options.dynamoEndpoint}`
    : `embedded store in ${options.dataDir}`;
  console.log(
    `leadership-pacer listening on ${server.url} (${store}, table ${options.tableName}${options.auth ? ", bearer-token auth on" : ""})`,
  );
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
