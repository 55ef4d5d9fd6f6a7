import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
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
 * The worker's code as one esbuild bundle of heavy-worker.ts and what it imports, base64 for a data:
 * URL (heavy-worker-loader.mjs). Run module by module through tsx, as the server runs its sources, the
 * worker validated and ran a 200,000-partition snapshot 1.5–2.5 times slower than the same code
 * bundled (bench:http: validation 40–76 ms against 16–32). piscina stays outside, imported by the
 * absolute URL of its ES module entry, so that the answer's `move` marks it for the piscina the worker
 * runs under. Built once a process for each entry; held in memory, never written to disk.
 */
const workerBundles = new Map<string, Promise<string>>();
function bundledWorker(entry: URL): Promise<string> {
  const built = workerBundles.get(entry.href);
  if (built) return built;
  const bundle = build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    write: false,
    logLevel: "silent",
    plugins: [
      {
        name: "piscina-outside",
        setup: (bundler) =>
          bundler.onResolve({ filter: /^piscina$/ }, () => ({
            path: import.meta.resolve("piscina"),
            external: true,
          })),
      },
    ],
  }).then(({ outputFiles }) => {
    // Stack traces name the bundle, not its 300 KB data: URL.
    const code = `${outputFiles[0]?.text}\n//# sourceURL=leadership-pacer-heavy-worker.mjs\n`;
    return Buffer.from(code).toString("base64");
  });
  workerBundles.set(entry.href, bundle);
  return bundle;
}

/**
 * A pool of worker threads for large request bodies (piscina): above `minBytes`, parsing, validation
 * and the policy run happen off the event loop, so that /healthz and small requests are answered while
 * an 8 MiB snapshot is evaluated. Smaller bodies stay in-process, where a thread hop would cost more
 * than it saves. The local server uses it; a Lambda invocation serves one request and needs none.
 */
export class Offload {
  private readonly pool: Piscina;

  /**
   * A pool running the bundled worker code (`entry` and what it imports, built once a process),
   * proven by a first task: a worker that cannot load its code stops the server's start, rather
   * than leaving every large request to wait on it.
   */
  static async start(
    minBytes: number,
    entry = new URL("./heavy-worker.ts", import.meta.url),
  ): Promise<Offload> {
    const offload = new Offload(minBytes, await bundledWorker(entry));
    try {
      await offload.run({ kind: "check-managed", bytes: new TextEncoder().encode("{}") });
    } catch (error) {
      await offload.close();
      throw error;
    }
    return offload;
  }

  private constructor(
    readonly minBytes: number,
    bundle: string,
  ) {
    this.pool = new Piscina({
      filename: new URL("./heavy-worker-loader.mjs", import.meta.url).href,
      workerData: { bundle },
      // On two cores one thread, for which large bodies queue; on more, side by side.
      minThreads: 1,
      maxThreads: WORKER_THREADS,
      // The bundle needs no loader, and the server's own flags (an --inspect port) are not the worker's.
      execArgv: [],
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
