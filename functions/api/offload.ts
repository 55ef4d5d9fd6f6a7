import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Piscina } from "piscina";
import type { HeavyResult, HeavyTask } from "./heavy-work.ts";

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
      filename: new URL("./heavy-work.ts", import.meta.url).href,
      // One thread: on two cores the other belongs to the event loop.
      minThreads: 1,
      maxThreads: 1,
      execArgv: ["--import", tsx],
      // An idle worker stays, so a burst of large bodies pays no start-up.
      idleTimeout: 60_000,
    });
  }

  wants(bytes: number): boolean {
    return bytes >= this.minBytes;
  }

  run(task: HeavyTask): Promise<HeavyResult> {
    return this.pool.run(task);
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
