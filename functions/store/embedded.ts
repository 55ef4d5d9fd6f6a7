import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import dynalite from "dynalite";

export interface EmbeddedStore {
  endpoint: string;
  close(): Promise<void>;
}

/**
 * dynalite, a DynamoDB-protocol server on LevelDB, running inside this process: the local service uses
 * the same store code as on AWS, and its state survives a restart under `dataDir`.
 */
export async function startEmbeddedStore(
  options: { dataDir?: string; port?: number } = {},
): Promise<EmbeddedStore> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const server = dynalite({ path: options.dataDir, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections?.();
        server.close((error?: Error) => (error ? reject(error) : resolve()));
      }),
  };
}
