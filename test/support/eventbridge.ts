import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A listening endpoint that speaks EventBridge's PutEvents wire protocol (JSON 1.1), recording every
 * entry: there is no local EventBridge, and this checks what the publisher really sends.
 */
export interface EventBridgeEndpoint {
  url: string;
  entries: { Source: string; DetailType: string; EventBusName: string; Detail: string }[];
  /** How many of the next PutEvents calls fail with a 500 (an EventBridge outage). */
  failNext: number;
  close(): Promise<void>;
}

export async function startEventBridgeEndpoint(): Promise<EventBridgeEndpoint> {
  const entries: EventBridgeEndpoint["entries"] = [];
  const endpoint = { failNext: 0 };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const target = request.headers["x-amz-target"];
      if (target !== "AWSEvents.PutEvents") {
        response.writeHead(400).end(JSON.stringify({ __type: "UnknownOperationException" }));
        return;
      }
      if (endpoint.failNext > 0) {
        endpoint.failNext--;
        response.writeHead(500).end(JSON.stringify({ __type: "InternalException" }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      entries.push(...body.Entries);
      response.writeHead(200, { "content-type": "application/x-amz-json-1.1" });
      response.end(
        JSON.stringify({
          FailedEntryCount: 0,
          Entries: body.Entries.map((_: unknown, i: number) => ({ EventId: `event-${entries.length + i}` })),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return Object.assign(endpoint, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    entries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
