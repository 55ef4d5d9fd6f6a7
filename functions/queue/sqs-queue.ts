import { SendMessageBatchCommand, SQSClient } from "@aws-sdk/client-sqs";
import * as z from "zod";
import { ConfigOverrides } from "../../schemas/config.ts";
import type { JobQueue, TickJob } from "../api/tick.ts";
import { awsClientOptions } from "../aws.ts";

/** SQS delays a message by at most 15 minutes, in whole seconds. */
const MAX_DELAY_SECONDS = 900;
/** SendMessageBatch takes at most 10 messages. */
const BATCH_SIZE = 10;

/**
 * The tick's queue on AWS: each job a message, a ramp's next run a delayed one. A delay is rounded up
 * to the second, so a job never arrives before its run is due.
 */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(jobs: { job: TickJob; delayMs: number }[]): Promise<void> {
    const batches: (typeof jobs)[] = [];
    for (let i = 0; i < jobs.length; i += BATCH_SIZE) batches.push(jobs.slice(i, i + BATCH_SIZE));
    await Promise.all(batches.map((batch) => this.sendBatch(batch)));
  }

  private async sendBatch(batch: { job: TickJob; delayMs: number }[]) {
    let entries = batch.map(({ job, delayMs }, i) => ({
      Id: String(i),
      MessageBody: JSON.stringify(job),
      DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.ceil(Math.max(0, delayMs) / 1000)),
    }));
    for (let attempt = 0; entries.length > 0; attempt++) {
      if (attempt === 3) throw new Error(`SQS refused ${entries.length} tick job(s) three times`);
      const { Failed } = await this.client.send(
        new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: entries }),
      );
      const failed = new Set((Failed ?? []).map((entry) => entry.Id));
      entries = entries.filter((entry) => failed.has(entry.Id));
    }
  }
}

/** A job as a message carries it; anything else is refused (and ends in the dead-letter queue). */
const TickJobMessage = z.strictObject({
  clusterId: z.string().min(1),
  scheduledAtMs: z.number().int().nonnegative(),
  run: z.number().int().positive(),
  untilMs: z.number().int().nonnegative(),
  fleetConfig: ConfigOverrides,
});

export function tickJobOf(body: string): TickJob {
  const parsed = TickJobMessage.safeParse(JSON.parse(body));
  if (!parsed.success) throw new Error(`not a tick job: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export interface QueueEnvironment {
  /** The queue of tick jobs: the tick sends to it, the worker drains it and sends ramps' next runs. */
  PACER_TICK_QUEUE_URL?: string;
  /** Tests point this at a local SQS-protocol server. */
  SQS_ENDPOINT?: string;
}

export function sqsJobQueue(env: QueueEnvironment): SqsJobQueue {
  if (!env.PACER_TICK_QUEUE_URL) throw new Error("PACER_TICK_QUEUE_URL is not set");
  const client = new SQSClient(awsClientOptions(env.SQS_ENDPOINT));
  return new SqsJobQueue(client, env.PACER_TICK_QUEUE_URL);
}
