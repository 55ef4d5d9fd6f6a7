import { randomUUID } from "node:crypto";
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";

/** A tick queue and its dead-letter queue on the test run's SQS-protocol server. */
export interface TestQueues {
  client: SQSClient;
  queueUrl: string;
  deadLetterUrl: string;
}

export async function createQueues(
  endpoint: string,
  options: { visibilitySeconds: number; maxReceiveCount: number },
): Promise<TestQueues> {
  const client = new SQSClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const name = `tick-${randomUUID()}`;
  const dead = await client.send(new CreateQueueCommand({ QueueName: `${name}-dead` }));
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dead.QueueUrl, AttributeNames: ["QueueArn"] }),
  );
  const queue = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(options.visibilitySeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: Attributes?.QueueArn,
          maxReceiveCount: options.maxReceiveCount,
        }),
      },
    }),
  );
  return { client, queueUrl: queue.QueueUrl ?? "", deadLetterUrl: dead.QueueUrl ?? "" };
}

/** Messages in the queue: visible, in flight and delayed. */
export async function queueDepth(client: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
      ],
    }),
  );
  return Object.values(Attributes).reduce((sum, n) => sum + Number(n), 0);
}

/** Receives up to 10 messages, as Lambda's event source mapping does. */
export async function receive(client: SQSClient, queueUrl: string) {
  const { Messages = [] } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageSystemAttributeNames: ["ApproximateReceiveCount"],
    }),
  );
  return Messages;
}

export function sqsEvent(messages: Awaited<ReturnType<typeof receive>>): SQSEvent {
  return {
    Records: messages.map((message) => ({
      messageId: message.MessageId ?? "",
      receiptHandle: message.ReceiptHandle ?? "",
      body: message.Body ?? "",
      attributes: {
        ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? "1",
        SentTimestamp: "0",
        SenderId: "local",
        ApproximateFirstReceiveTimestamp: "0",
      },
      messageAttributes: {},
      md5OfBody: message.MD5OfBody ?? "",
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:tick",
      awsRegion: "us-east-1",
    })),
  };
}

/**
 * Lambda's SQS event source mapping, in the test: receives batches, hands each to the worker, and
 * deletes the messages it did not name as failed; the failed ones come back after their visibility
 * timeout. Stops when the queue has been empty (nothing visible, in flight or delayed) or at `maxMs`.
 */
export async function deliverAll(
  queues: TestQueues,
  worker: (event: SQSEvent) => Promise<SQSBatchResponse>,
  maxMs = 30_000,
): Promise<{ batches: number }> {
  const { client, queueUrl } = queues;
  const deadline = Date.now() + maxMs;
  let batches = 0;
  while (Date.now() < deadline) {
    const messages = await receive(client, queueUrl);
    if (messages.length === 0) {
      if ((await queueDepth(client, queueUrl)) === 0) break;
      continue;
    }
    batches++;
    const { batchItemFailures } = await worker(sqsEvent(messages));
    const failed = new Set(batchItemFailures.map((failure) => failure.itemIdentifier));
    const done = messages.filter((message) => !failed.has(message.MessageId ?? ""));
    if (done.length > 0)
      await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: done.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
        }),
      );
  }
  return { batches };
}
