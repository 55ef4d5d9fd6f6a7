import { gunzipSync } from "node:zlib";
import type { Context } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpHandler } from "../../functions/handlers/lambda-http.ts";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { openStore, type TestStore } from "../support/stores.ts";

/** The HTTP Lambda handler, invoked with the events AWS sends, against DynamoDB Local (test/sqs: the tick and worker). */

/** The event shape hono's Lambda adapter takes: API Gateway HTTP API v2, which Function URLs send too. */
type FunctionUrlEvent = Parameters<ReturnType<typeof createHttpHandler>>[0];

function functionUrlEvent(
  method: string,
  path: string,
  body?: unknown,
  query = "",
  headers: Record<string, string> = {},
): FunctionUrlEvent {
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: path,
    rawQueryString: query,
    headers: { "content-type": "application/json", host: "abc123.lambda-url.eu-west-1.on.aws", ...headers },
    requestContext: {
      accountId: "123456789012",
      apiId: "abc123",
      domainName: "abc123.lambda-url.eu-west-1.on.aws",
      domainPrefix: "abc123",
      // A Function URL with AuthType AWS_IAM: the signed caller.
      authentication: null,
      authorizer: {
        iam: {
          accessKey: "AKIAIOSFODNN7EXAMPLE",
          accountId: "123456789012",
          callerId: "AIDACKCEVSQ6C2EXAMPLE",
          cognitoIdentity: null,
          principalOrgId: null,
          userArn: "arn:aws:iam::123456789012:role/kafka-controller",
          userId: "AIDACKCEVSQ6C2EXAMPLE",
        },
      },
      http: { method, path, protocol: "HTTP/1.1", sourceIp: "198.51.100.7", userAgent: "controller/1.0" },
      requestId: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
      routeKey: "$default",
      stage: "$default",
      time: "02/Dec/2026:19:00:00 +0000",
      timeEpoch: 1796238000000,
    },
    body: body === undefined ? null : JSON.stringify(body),
    isBase64Encoded: false,
  } as FunctionUrlEvent;
}
const context = { functionName: "leadership-pacer-api", awsRequestId: "req-1" } as Context;

/** Everything written to stdout while `run` runs: where EMF records and structured logs go. */
async function captureStdout<T>(run: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const original = process.stdout.write.bind(process.stdout);
  const written: string[] = [];
  process.stdout.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    const result = await run();
    return { result, lines: written.join("").split("\n").filter(Boolean) };
  } finally {
    process.stdout.write = original;
  }
}

let backing: TestStore;
let env: Record<string, string>;
beforeAll(async () => {
  backing = await openStore("DynamoDB Local");
  env = { PACER_TABLE: backing.tableName, DYNAMODB_ENDPOINT: backing.endpoint };
});
afterAll(() => backing.close());

describe("the HTTP handler", () => {
  it("serves a managed run from a Function URL event and emits its metrics as EMF", async () => {
    const handler = createHttpHandler(env);
    const snapshot = snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 }));
    const { result, lines } = await captureStdout(() =>
      handler(
        functionUrlEvent("POST", "/v1/clusters/lambda-1/evaluate", { snapshot, config: WAIT_FOR_SYNC }),
        context,
      ),
    );
    expect(result.statusCode).toBe(200);
    const answer = JSON.parse(result.body as string);
    expect(answer).toMatchObject({ stateVersion: 1, elections: [] });

    const emf = lines.map((line) => JSON.parse(line)).find((record) => record._aws);
    expect(emf._aws.CloudWatchMetrics[0].Namespace).toBe("LeadershipPacer");
    expect(emf._aws.CloudWatchMetrics[0].Dimensions[0]).toEqual(expect.arrayContaining(["ClusterId"]));
    expect(emf._aws.CloudWatchMetrics[0].Dimensions.flat()).not.toContain("broker");
    expect(emf).toMatchObject({
      ClusterId: "lambda-1",
      Runs: 1,
      Elections: 0,
      ElectionsSkippedByGate: 5,
      GatedBrokerCount: 1,
      MaxWaitExpiredBrokerCount: 0,
      OutOfSyncPreferredPartitionCount: 5,
      decisionId: answer.decisionId,
    });
    const fleet = lines
      .map((line) => JSON.parse(line))
      .find((record) => "FleetMaxWaitExpiredBrokerCount" in record);
    expect(fleet._aws.CloudWatchMetrics[0].Dimensions).toEqual([["service"]]);
    expect(fleet).toMatchObject({ service: "leadership-pacer", FleetMaxWaitExpiredBrokerCount: 0 });
    const log = lines.map((line) => JSON.parse(line)).find((record) => record.message === "run completed");
    expect(log).toMatchObject({
      level: "INFO",
      clusterId: "lambda-1",
      decisionId: answer.decisionId,
      service: "leadership-pacer",
    });
  });

  it("answers bad input with a problem, not a 500, and health through the same app", async () => {
    const handler = createHttpHandler(env);
    const bad = await handler(
      functionUrlEvent("POST", "/v1/clusters/lambda-1/evaluate", { snapshot: {} }),
      context,
    );
    expect(bad.statusCode).toBe(400);
    expect(bad.headers?.["content-type"]).toBe("application/problem+json");
    const health = await handler(functionUrlEvent("GET", "/healthz"), context);
    expect(health.statusCode).toBe(200);
  });

  it("sends a large answer gzip'd and base64-encoded to a caller that accepts gzip", async () => {
    const handler = createHttpHandler(env);
    const snapshot = snapshotOf(preferredPartitionsOf(1, 3_000, { outOfSync: 100 }));
    const event = functionUrlEvent("POST", "/v1/evaluate", { snapshot, now: 1 }, "explain=partitions", {
      "accept-encoding": "gzip",
    });
    const result = await handler(event, context);
    expect(result.statusCode).toBe(200);
    expect(result.headers?.["content-encoding"]).toBe("gzip");
    expect(result.isBase64Encoded).toBe(true);
    const body = gunzipSync(Buffer.from(result.body as string, "base64")).toString("utf8");
    expect(JSON.parse(body).partitions).toHaveLength(3_000);
    expect((result.body as string).length).toBeLessThan(body.length / 4);
  });
});
