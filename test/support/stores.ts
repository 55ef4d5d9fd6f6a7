import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import type { TokenAuth } from "../../functions/api/auth.ts";
import {
  type LocalServer,
  type LocalServerOptions,
  startLocalServer,
} from "../../functions/handlers/local.ts";
import { dynamoClient, ensureTable } from "../../functions/store/client.ts";
import { DynamoStore } from "../../functions/store/dynamo-store.ts";
import { startEmbeddedStore } from "../../functions/store/embedded.ts";

/** The two DynamoDB-protocol servers every store and HTTP suite runs against. */
export const STORE_KINDS = ["dynalite", "DynamoDB Local"] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export interface TestStore {
  store: DynamoStore;
  endpoint: string;
  tableName: string;
  close(): Promise<void>;
}

/** A fresh table on a server of the given kind. */
export async function openStore(kind: StoreKind): Promise<TestStore> {
  const embedded = kind === "dynalite" ? await startEmbeddedStore() : undefined;
  const endpoint = embedded?.endpoint ?? inject("dynamodbLocalEndpoint");
  const tableName = `pacer-${randomUUID()}`;
  const client = dynamoClient({ endpoint });
  await ensureTable(client, tableName);
  return {
    store: new DynamoStore(client, tableName),
    endpoint,
    tableName,
    close: async () => {
      client.destroy();
      await embedded?.close();
    },
  };
}

/** The local server, listening on a free port, on a fresh table of the given kind. */
export async function openServer(
  kind: StoreKind,
  options: {
    auth?: TokenAuth;
    maxBodyBytes?: number;
    timeouts?: LocalServerOptions["timeouts"];
    workerMinBytes?: number;
  } = {},
): Promise<LocalServer & { store: DynamoStore }> {
  const backing = await openStore(kind);
  const server = await startLocalServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: mkdtempSync(join(tmpdir(), "pacer-unused-")),
    dynamoEndpoint: backing.endpoint,
    tableName: backing.tableName,
    auth: options.auth,
    maxBodyBytes: options.maxBodyBytes ?? 8 * 1024 * 1024,
    tickSeconds: 0,
    timeouts: options.timeouts,
    workerMinBytes: options.workerMinBytes,
  });
  return {
    ...server,
    store: backing.store,
    close: async () => {
      await server.close();
      await backing.close();
    },
  };
}
