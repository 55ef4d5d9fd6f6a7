import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CatchUpThrottler, type ThrottleKafka } from "../../functions/agent/catch-up-throttle.ts";
import { PacerClient } from "../../functions/agent/pacer-client.ts";
import { StoredThrottleRecord } from "../../functions/agent/throttle-record.ts";
import type { CatchUpThrottle } from "../../schemas/answer.ts";

const WANTED: CatchUpThrottle[] = [
  {
    broker: 1,
    rateBytesPerSecond: 2_500_000,
    outOfSync: 2,
    replicas: [{ topic: "orders", partitions: [0, 3] }],
    side: "follower",
    leaders: [],
  },
];

/** Kafka as the throttler sees it, counting every call: none is expected when the record cannot be read. */
function countingKafka() {
  const calls: string[] = [];
  const kafka: ThrottleKafka = {
    async describeBrokerConfigs() {
      calls.push("describeBrokerConfigs");
      return new Map();
    },
    async describeTopicConfigs() {
      calls.push("describeTopicConfigs");
      return new Map();
    },
    async alterConfigs() {
      calls.push("alterConfigs");
      return [];
    },
  };
  return { kafka, calls };
}

describe("catch-up pacing when the record of what it set cannot be read", () => {
  // A service whose store is down answers 503 to everything, as the real one does.
  const server = createServer((_request, response) => {
    response.writeHead(503, { "content-type": "application/problem+json" });
    response.end(JSON.stringify({ status: 503, detail: "state store unavailable: connect ECONNREFUSED" }));
  });
  let url = "";
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("sets nothing, lifts nothing, and says why", async () => {
    const { kafka, calls } = countingKafka();
    const pacer = new PacerClient(url, "down", (request) => fetch(request));
    const throttler = new CatchUpThrottler(kafka, new StoredThrottleRecord(pacer));
    await expect(throttler.apply(WANTED, false)).rejects.toThrow(
      /pacer answered 503: state store unavailable/,
    );
    await expect(throttler.liftAll()).rejects.toThrow(/503/);
    expect(calls).toEqual([]);
  });
});
