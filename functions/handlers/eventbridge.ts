import { type EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import type { ManagedAnswer } from "../api/managed-run.ts";
import type { DecisionPublisher } from "../api/tick-job.ts";

export const EVENT_SOURCE = "leadership-pacer";
export const EVENT_DETAIL_TYPE = "Preferred Leader Election Batch";

/** An EventBridge entry holds 256 KB; a batch larger than this is sent in parts. */
const MAX_DETAIL_BYTES = 200_000;

/**
 * Publishes each decision with elections on the service's bus, for agents beside the clusters to run
 * with kafka-leader-election.sh. Delivery is at least once: consumers deduplicate on decisionId and part.
 */
export class EventBridgePublisher implements DecisionPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly eventBusName: string,
  ) {}

  async publish(clusterId: string, answer: ManagedAnswer): Promise<void> {
    const parts = splitElections(answer.elections);
    const entries = parts.map((elections, i) => ({
      EventBusName: this.eventBusName,
      Source: EVENT_SOURCE,
      DetailType: EVENT_DETAIL_TYPE,
      Detail: JSON.stringify({
        clusterId,
        decisionId: answer.decisionId,
        evaluatedAtMs: answer.evaluatedAtMs,
        part: i + 1,
        parts: parts.length,
        elections,
        kafkaLeaderElection: { partitions: elections.map(({ topic, partition }) => ({ topic, partition })) },
      }),
    }));
    for (let i = 0; i < entries.length; i += 10) {
      const result = await this.client.send(new PutEventsCommand({ Entries: entries.slice(i, i + 10) }));
      if ((result.FailedEntryCount ?? 0) > 0) {
        const reasons = (result.Entries ?? [])
          .filter((e) => e.ErrorCode)
          .map((e) => `${e.ErrorCode}: ${e.ErrorMessage}`);
        throw new Error(`EventBridge refused ${result.FailedEntryCount} event(s): ${reasons.join("; ")}`);
      }
    }
  }
}

function splitElections<T>(elections: T[]): T[][] {
  const parts: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const election of elections) {
    const bytes = 2 * JSON.stringify(election).length; // each election appears twice in the detail
    if (current.length > 0 && size + bytes > MAX_DETAIL_BYTES) {
      parts.push(current);
      current = [];
      size = 0;
    }
    current.push(election);
    size += bytes;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}
