import { runTick } from "../api/tick.ts";
import { type QueueEnvironment, sqsJobQueue } from "../queue/sqs-queue.ts";
import { type LambdaEnvironment, lambdaDependencies } from "./lambda.ts";

/** The input the schedule sends: `{ "scheduledAt": "<aws.scheduler.scheduled-time>" }`. */
export interface TickEvent {
  scheduledAt?: string;
}

export interface TickEnvironment extends LambdaEnvironment, QueueEnvironment {
  /** How long after its scheduled time a tick's window lasts (ramps followed within it). Default 60. */
  PACER_TICK_WINDOW_SECONDS?: string;
}

/**
 * The scheduled tick on Lambda: finds the due clusters and queues a job for each. The schedule's own
 * time keys the jobs, so a retried tick queues jobs that do not run again. A tick that could not
 * list the fleet, queue its jobs or write its skips throws, so that the schedule retries it.
 */
export function createTickHandler(env: TickEnvironment, clock: () => number = Date.now) {
  const { store, logger } = lambdaDependencies(env);
  const queue = sqsJobQueue(env);
  const windowMs = Number(env.PACER_TICK_WINDOW_SECONDS ?? 60) * 1000;
  return async (event: TickEvent) => {
    const scheduledAtMs = Date.parse(event?.scheduledAt ?? "") || clock();
    const report = await runTick({ store, queue, clock, scheduledAtMs, untilMs: scheduledAtMs + windowMs });
    logger.info("tick", { scheduledAtMs, queued: report.queued, failed: report.failed });
    if (report.failed > 0)
      throw new Error(`${report.failed} skip(s) could not be recorded in the tick of ${event?.scheduledAt}`);
    return report;
  };
}

let tickHandler: ReturnType<typeof createTickHandler> | undefined;
/** Built on first use (and kept across warm invocations), so that importing this module has no effects. */
export const handler = (event: TickEvent) => {
  tickHandler ??= createTickHandler(process.env);
  return tickHandler(event);
};
