import pLimit from "p-limit";
import type { JobQueue, TickJob } from "../api/tick.ts";

/**
 * The tick's queue inside one process: a delayed job waits on a timer, and at most `concurrency`
 * jobs run at once. A job that throws is reported (`failed`) and not retried: the next tick runs its
 * cluster again.
 */
export class LocalJobQueue implements JobQueue {
  private readonly limit: ReturnType<typeof pLimit>;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly work: (job: TickJob) => Promise<unknown>,
    concurrency: number,
    private readonly failed: (job: TickJob, error: Error) => void,
  ) {
    this.limit = pLimit(concurrency);
  }

  async send(jobs: { job: TickJob; delayMs: number }[]): Promise<void> {
    for (const { job, delayMs } of jobs) {
      if (this.closed) return;
      if (delayMs <= 0) {
        this.start(job);
        continue;
      }
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.start(job);
      }, delayMs);
      this.timers.add(timer);
    }
  }

  /** Jobs running or waiting their turn or their time. */
  get pending(): number {
    return this.running.size + this.timers.size;
  }

  /** Resolves once no job runs and none waits (a job may queue another as it ends). */
  async drained(): Promise<void> {
    while (this.running.size > 0 || this.timers.size > 0) {
      if (this.running.size > 0) await Promise.all(this.running);
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Drops the jobs that wait for their time and waits for those already running or in line. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.running);
  }

  private start(job: TickJob) {
    if (this.closed) return;
    // A job still in line when the queue closes does not start.
    const run = this.limit(async () => {
      if (!this.closed) await this.work(job);
    })
      .catch((error: Error) => this.failed(job, error))
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }
}
