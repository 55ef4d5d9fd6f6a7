import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { runTick } from "../api/tick.ts";
import { EventBridgePublisher } from "./eventbridge.ts";
import { type LambdaEnvironment, lambdaDependencies } from "./lambda.ts";

/** The input the schedule sends: `{ "scheduledAt": "<aws.scheduler.scheduled-time>" }`. */
export interface TickEvent {
  scheduledAt?: string;
}

/**
 * The scheduled tick on Lambda. The schedule's own time keys each cluster's run, so a retried tick
 * replays instead of advancing hysteresis twice. A tick in which a cluster failed throws, so that the
 * schedule retries it and, past its retries, sends it to the dead-letter queue.
 */
export function createTickHandler(env: LambdaEnvironment, clock: () => number = Date.now) {
  const dependencies = { ...lambdaDependencies(env), publisher: publisherOf(env) };
  return async (event: TickEvent) => {
    const scheduledAtMs = Date.parse(event?.scheduledAt ?? "") || clock();
    const report = await runTick({ ...dependencies, clock, scheduledAtMs });
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
export const handler = (event: TickEvent) => {
  tickHandler ??= createTickHandler(process.env);
  return tickHandler(event);
};
