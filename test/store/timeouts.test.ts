import { randomUUID } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { dynamoClient, ensureTable, type StoreTimeouts } from "../../functions/store/client.ts";
import { DynamoStore } from "../../functions/store/dynamo-store.ts";
import { type EmbeddedStore, startEmbeddedStore } from "../../functions/store/embedded.ts";
import { StoreUnavailableError } from "../../functions/store/store.ts";
import { preferredPartitionsOf, snapshotOf } from "../support/cluster.ts";

/**
 * The store client's timeouts against a store that is slow or silent: the embedded store behind a
 * proxy that holds each request for a while, or a socket that accepts and never answers.
 */

/** Forwards each request to `target` after `delayMs`; `delayMs` Infinity: never answers. */
async function slowProxy(target: string, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk) => chunks.push(chunk));
    incoming.on("end", () => {
      if (!Number.isFinite(delayMs)) return;
      setTimeout(() => {
        const forwarded = request(
          `${target}${incoming.url}`,
          { method: incoming.method, headers: incoming.headers },
          (answer) => {
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(outgoing);
          },
        );
        forwarded.end(Buffer.concat(chunks));
      }, delayMs);
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let embedded: EmbeddedStore;
const tableName = `pacer-${randomUUID()}`;
beforeAll(async () => {
  embedded = await startEmbeddedStore();
  const client = dynamoClient({ endpoint: embedded.endpoint });
  await ensureTable(client, tableName);
  client.destroy();
});
afterAll(() => embedded.close());

function storeThrough(endpoint: string, timeouts: Partial<StoreTimeouts>) {
  const client = dynamoClient({ endpoint, timeouts });
  return { store: new DynamoStore(client, tableName), close: () => client.destroy() };
}

describe("store timeouts", () => {
  it("lets a request wait for a pooled connection without calling it a connection timeout", async () => {
    // 2 connections, 300 ms per request, 12 requests at once: the last waits ~1.8 s for a connection,
    // far past the 200 ms allowed to open one, and well within the 5 s allowed for a request.
    const proxy = await slowProxy(embedded.endpoint, 300);
    const { store, close } = storeThrough(proxy.url, { connectionMs: 200, requestMs: 5_000, maxSockets: 2 });
    try {
      const startedAtMs = Date.now();
      const reads = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => store.getCluster(`c${i}`)));
      expect(reads.filter((r) => r.status === "rejected")).toEqual([]);
      expect(Date.now() - startedAtMs).toBeGreaterThanOrEqual(1_500);
    } finally {
      close();
      await proxy.close();
    }
  });

  it("fails a request that passes its timeout, and the API answers 503 with Retry-After", async () => {
    const silent = await slowProxy(embedded.endpoint, Number.POSITIVE_INFINITY);
    const { store, close } = storeThrough(silent.url, { connectionMs: 1_000, requestMs: 400, maxSockets: 4 });
    try {
      const startedAtMs = Date.now();
      await expect(store.getCluster("silent")).rejects.toBeInstanceOf(StoreUnavailableError);
      // Two attempts of 400 ms each, and the SDK's backoff between them.
      expect(Date.now() - startedAtMs).toBeLessThan(2_500);

      const app = createApp({ store });
      const response = await app.request("/v1/clusters/silent/evaluate", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ snapshot: snapshotOf(preferredPartitionsOf(1, 10)) }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("5");
      expect(((await response.json()) as { detail: string }).detail).toMatch(/timeout|within 400 ms/i);
    } finally {
      close();
      await silent.close();
    }
  });

  it("fails a request still waiting for a connection when its timeout passes", async () => {
    const silent = await slowProxy(embedded.endpoint, Number.POSITIVE_INFINITY);
    const { store, close } = storeThrough(silent.url, { connectionMs: 1_000, requestMs: 300, maxSockets: 1 });
    try {
      const reads = await Promise.allSettled([
        store.getCluster("a"),
        store.getCluster("b"),
        store.getCluster("c"),
      ]);
      expect(reads.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    } finally {
      close();
      await silent.close();
    }
  });
});
