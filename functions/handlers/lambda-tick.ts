import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import type { Context } from "aws-lambda";
import { runTick } from "../api/tick.ts";
import { EventBridgePublisher } from "./eventbridge.ts";
import { type LambdaEnvironment, lambdaDependencies } from "./lambda.ts";

/** The input the schedule sends: `{ "scheduledAt": "<aws.scheduler.scheduled-time>" }`. */
export interface TickEvent {
  scheduledAt?: string;
}

export interface TickEnvironment extends LambdaEnvironment {
  /**
   * Seconds after its scheduled time that a tick keeps following clusters mid-ramp, so that runs
   * `throttle.interval.ms` apart are not held to the schedule's one minute; 0 = one pass. Default 50:
   * a tick ends before the next one starts.
   */
  PACER_TICK_FOLLOW_SECONDS?: string;
}

/** Time left for the last follow-up to finish before Lambda's own timeout. */
const TIMEOUT_MARGIN_MS = 15_000;

/**
 * The scheduled tick on Lambda. The schedule's own time keys each cluster's run, so a retried tick
 * replays instead of advancing hysteresis twice. A tick in which a cluster failed throws, so that the
 * schedule retries it and, past its retries, sends it to the dead-letter queue.
 */
export function createTickHandler(
  env: TickEnvironment,
  clock: () => number = Date.now,
  sleep?: (ms: number) => Promise<void>,
) {
  const dependencies = { ...lambdaDependencies(env), publisher: publisherOf(env) };
  const followMs = Number(env.PACER_TICK_FOLLOW_SECONDS ?? 50) * 1000;
  return async (event: TickEvent, context?: Pick<Context, "getRemainingTimeInMillis">) => {
    const scheduledAtMs = Date.parse(event?.scheduledAt ?? "") || clock();
    const timeLeftMs = context ? context.getRemainingTimeInMillis() - TIMEOUT_MARGIN_MS : followMs;
    const untilMs = followMs > 0 ? Math.min(scheduledAtMs + followMs, clock() + timeLeftMs) : undefined;
    const report = await runTick({ ...dependencies, clock, sleep, scheduledAtMs, untilMs });
    dependencies.logger.info("tick", { scheduledAtMs, ...report });
    if (report.failed > 0)
      throw new Error(`${report.failed} cluster(s) failed in the tick of ${event?.scheduledAt}`);
    return report;
  };
}

/** Only the tick publishes, so only its bundle carries the EventBridge client. */
function publisherOf(env: LambdaEnvironment): EventBridgePublisher | undefined {
  if (!env.PACER_EVENT_BUS) return undefined;
  const client = new EventBridgeClient({
    maxAttempts: 3,
    region: process.env.AWS_REGION ?? "us-east-1",
    ...(env.EVENTBRIDGE_ENDPOINT
      ? {
          endpoint: env.EVENTBRIDGE_ENDPOINT,
          credentials: { accessKeyId: "local", secretAccessKey: "local" },
        }
      : {}),
  });
  return new EventBridgePublisher(client, env.PACER_EVENT_BUS);
}

let tickHandler: ReturnType<typeof createTickHandler> | undefined;
/** Built on first use (and kept across warm invocations), so that importing this module has no effects. */
export const handler = (event: TickEvent, context: Context) => {
  tickHandler ??= createTickHandler(process.env);
  return tickHandler(event, context);
};
