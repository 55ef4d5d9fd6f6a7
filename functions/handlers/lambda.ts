import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { DECISION_TTL_MS, IDEMPOTENCY_TTL_MS } from "../api/app.ts";
import { dynamoClient } from "../store/client.ts";
import { DynamoStore } from "../store/dynamo-store.ts";
import { EmfObserver } from "./emf.ts";

/** What both Lambda functions are made of, from their environment: the composition root on AWS. */
export interface LambdaEnvironment {
  PACER_TABLE?: string;
  PACER_EVENT_BUS?: string;
  /** Tests point these at DynamoDB Local and a local EventBridge endpoint. */
  DYNAMODB_ENDPOINT?: string;
  EVENTBRIDGE_ENDPOINT?: string;
}

export const SERVICE_NAME = "leadership-pacer";
export const METRICS_NAMESPACE = "LeadershipPacer";

export function lambdaDependencies(env: LambdaEnvironment) {
  if (!env.PACER_TABLE) throw new Error("PACER_TABLE is not set");
  const store = new DynamoStore(dynamoClient({ endpoint: env.DYNAMODB_ENDPOINT }), env.PACER_TABLE);
  const logger = new Logger({ serviceName: SERVICE_NAME });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
  const observer = new EmfObserver(metrics, logger);
  return {
    store,
    logger,
    observer,
    decisionTtlMs: DECISION_TTL_MS,
    idempotencyTtlMs: IDEMPOTENCY_TTL_MS,
  };
}
