import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { runTickJob } from "../api/tick-job.ts";
import { DEFAULT_BUDGET_MS } from "../api/tick-live.ts";
import { awsClientOptions } from "../aws.ts";
import { ClusterConnections } from "../kafka/cluster-connections.ts";
import { type QueueEnvironment, sqsJobQueue, tickJobOf } from "../queue/sqs-queue.ts";
import { EventBridgePublisher } from "./eventbridge.ts";
import { type LambdaEnvironment, lambdaDependencies } from "./lambda.ts";
import { secretsManagerReaderOf } from "./secrets-manager.ts";

/**
 * The worker on Lambda, fed by SQS: runs each job of the batch, and names those that failed, so that
 * only they are delivered again (and past their receives, go to the dead-letter queue).
 */
export function createWorkerHandler(
  env: LambdaEnvironment &
    QueueEnvironment & { SECRETSMANAGER_ENDPOINT?: string; PACER_CLUSTER_BUDGET_MS?: string },
  clock: () => number = Date.now,
) {
  const { store, logger, observer, decisionTtlMs } = lambdaDependencies(env);
  const budgetMs = Number(env.PACER_CLUSTER_BUDGET_MS ?? DEFAULT_BUDGET_MS);
  const worker = {
    store,
    clock,
    observer,
    decisionTtlMs,
    queue: sqsJobQueue(env),
    publisher: publisherOf(env),
    // Kept with the handler, across warm invocations: a cluster's connection is reused tick after tick.
    clients: new ClusterConnections(secretsManagerReaderOf(env), { clock, requestTimeoutMs: budgetMs }),
    budgetMs,
  };
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const failures: SQSBatchResponse["batchItemFailures"] = [];
    await Promise.all(
      event.Records.map(async (message) => {
        try {
          const result = await runTickJob(tickJobOf(message.body), worker);
          logger.info("tick job", { ...result });
          if (result.status === "unreachable") observer.clusterUnreachable(result.clusterId, result.reach);
        } catch (error) {
          logger.error("tick job failed", { messageId: message.messageId, error: (error as Error).message });
          failures.push({ itemIdentifier: message.messageId });
        }
      }),
    );
    return { batchItemFailures: failures };
  };
}

/** Only the worker publishes, so only its bundle needs the EventBridge client. */
function publisherOf(env: LambdaEnvironment): EventBridgePublisher | undefined {
  if (!env.PACER_EVENT_BUS) return undefined;
  const client = new EventBridgeClient(awsClientOptions(env.EVENTBRIDGE_ENDPOINT));
  return new EventBridgePublisher(client, env.PACER_EVENT_BUS);
}

let workerHandler: ReturnType<typeof createWorkerHandler> | undefined;
/** Built on first use (and kept across warm invocations), so that importing this module has no effects. */
export const handler = (event: SQSEvent) => {
  workerHandler ??= createWorkerHandler(process.env);
  return workerHandler(event);
};
