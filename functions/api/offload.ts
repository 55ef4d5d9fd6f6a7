import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import { Piscina } from "piscina";
import type { HeavyResult, HeavyTask } from "./heavy-work.ts";

/**
 * The worker's young generation, in MB (three semi-spaces of 64 MB). Parsing an 18 MB body makes
 * ~100 MB of short-lived objects; with V8's default (16 MB semi-spaces) the collector copies them
 * again and again, and JSON.parse takes 2-2.5 times as long (bench:http).
 */
const YOUNG_GENERATION_MB = 192;

/**
 * Threads: one per core but the event loop's, at least one, and at most four, since a thread
 * parsing an 8 MiB body holds a few hundred MB.
 */
const WORKER_THREADS = Math.min(4, Math.max(1, availableParallelism() - 1));

/**
 * A pool of worker threads for large request bodies (piscina): above `minBytes`, parsing, validation
 * and the policy run happen off the event loop, so that /healthz and small requests are answered while
 * an 8 MiB snapshot is evaluated. Smaller bodies stay in-process, where a thread hop would cost more
 * than it saves. The local server uses it; a Lambda invocation serves one request and needs none.
 */
export class Offload {
  private readonly pool: Piscina;

  constructor(readonly minBytes: number) {
    // The workers run the TypeScript sources as the server does, through tsx.
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    this.pool = new Piscina({
      filename: new URL("./heavy-worker.ts", import.meta.url).href,
      // On two cores one thread, for which large bodies queue; on more, side by side.
      minThreads: 1,
      maxThreads: WORKER_THREADS,
      execArgv: ["--import", tsx],
      // An idle worker stays, so a burst of large bodies pays no start-up.
      idleTimeout: 60_000,
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
  }

  wants(bytes: number): boolean {
    return bytes >= this.minBytes;
  }

  /**
   * Runs a task in the worker. With `handOver` the body's bytes are transferred, not copied: the
   * caller must not read them afterwards (a managed run does, to hash and retry, so it copies).
   */
  async run(task: HeavyTask, options: { handOver?: boolean } = {}): Promise<HeavyResult> {
    const { bytes } = task;
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    const transferList = options.handOver && owned ? [bytes.buffer as ArrayBuffer] : [];
    const result: HeavyResult | Uint8Array<ArrayBuffer> = await this.pool.run(task, { transferList });
    return result instanceof Uint8Array ? { kind: "answer", body: result } : result;
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
