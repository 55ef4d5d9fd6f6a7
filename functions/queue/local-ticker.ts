import type { RunObserver } from "../api/managed-run.ts";
import { runTick, type TickReport } from "../api/tick.ts";
import { type DecisionPublisher, type JobResult, runTickJob, type TickWorker } from "../api/tick-job.ts";
import type { ClusterClients } from "../kafka/cluster-connections.ts";
import type { PacerStore } from "../store/store.ts";
import { LocalJobQueue } from "./local-queue.ts";

export interface LocalTickerOptions {
  store: PacerStore;
  /** Time between ticks; each tick's window ends when the next one starts. */
  tickMs: number;
  /** Jobs run at once: each waits on the store about four times, so more than the cores helps. */
  concurrency: number;
  decisionTtlMs: number;
  publisher?: DecisionPublisher;
  observer?: RunObserver;
  clock?: () => number;
  /** How long a ramp's next run waits before it looks again for a newer snapshot (default 2 s). */
  snapshotPollMs?: number;
  /** Kafka clients for the clusters with a connection, which the worker reads and elects on itself. */
  clients?: ClusterClients;
  /** Told of each job's result, and of each job that failed. */
  onJob?: (result: JobResult) => void;
  onFailure?: (clusterId: string, error: Error) => void;
}

/**
 * The tick as on AWS, in one process: every `tickMs` the tick queues the due clusters, and a bounded
 * pool runs them, with ramps' next runs on timers that never pass the tick's window.
 */
export class LocalTicker {
  readonly queue: LocalJobQueue;
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: LocalTickerOptions) {
    this.clock = options.clock ?? Date.now;
    const worker: TickWorker = {
      store: options.store,
      clock: this.clock,
      observer: options.observer,
      publisher: options.publisher,
      decisionTtlMs: options.decisionTtlMs,
      snapshotPollMs: options.snapshotPollMs,
      clients: options.clients,
      queue: { send: (jobs) => this.queue.send(jobs) },
    };
    this.queue = new LocalJobQueue(
      async (job) => {
        const result = await runTickJob(job, worker);
        options.onJob?.(result);
      },
      options.concurrency,
      (job, error) => options.onFailure?.(job.clusterId, error),
    );
  }

  /** One tick: resolves once its jobs are queued (they run on in the pool). */
  tick(scheduledAtMs = this.clock()): Promise<TickReport> {
    const { store, tickMs, concurrency } = this.options;
    return runTick({
      store,
      queue: this.queue,
      clock: this.clock,
      scheduledAtMs,
      untilMs: scheduledAtMs + tickMs,
      concurrency,
    });
  }

  /** Ticks every `tickMs`, the first one `tickMs` from now. */
  start(onTick: (report: TickReport) => void, onError: (error: Error) => void): void {
    const next = (atMs: number) => {
      this.timer = setTimeout(
        () => {
          this.ticking = this.tick(atMs)
            .then(onTick, (error: Error) => this.stopped || onError(error))
            .finally(() => this.stopped || next(atMs + this.options.tickMs));
        },
        Math.max(0, atMs - this.clock()),
      );
    };
    next(this.clock() + this.options.tickMs);
  }

  /** Stops ticking, drops the runs that wait for their time, and waits for those under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    await this.queue.close();
    await this.options.clients?.close();
  }
}
