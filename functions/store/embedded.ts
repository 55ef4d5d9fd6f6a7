import { mkdirSync } from "node:fs";
import { Worker } from "node:worker_threads";

export interface EmbeddedStore {
  endpoint: string;
  close(): Promise<void>;
}

/**
 * dynalite, a DynamoDB-protocol server on LevelDB, in a worker thread of this process: the local
 * service uses the same store code as on AWS, the store's work runs beside the event loop rather
 * than on it, and its state survives a restart under `dataDir`.
 */
export async function startEmbeddedStore(
  options: { dataDir?: string; port?: number } = {},
): Promise<EmbeddedStore> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const worker = new Worker(new URL("./embedded-server.mjs", import.meta.url), {
    workerData: { dataDir: options.dataDir, port: options.port },
  });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", (message: { port?: number; error?: string }) =>
      message.port
        ? resolve(message.port)
        : reject(new Error(`the embedded store did not start: ${message.error}`)),
    );
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        worker.once("message", () => resolve());
        worker.once("exit", () => resolve());
        worker.postMessage("close");
      });
      await worker.terminate();
    },
  };
}
