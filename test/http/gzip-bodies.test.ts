import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_GZIP_RATIO } from "../../functions/api/body.ts";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer } from "../support/stores.ts";

/**
 * Compressed bodies at the default 8 MiB limit: bombs of both kinds and a body over the limit are
 * refused (413) without being inflated in full, and change nothing; a large, very regular snapshot
 * (26:1) is still accepted.
 */
const LIMIT = 8 * 1024 * 1024;
const GZIP_HEADERS = { "content-type": "application/json", "content-encoding": "gzip" };
const PARTITION = '{"topic":"t","partition":0,"replicas":[1],"isr":[1],"leader":1},';

/** Valid JSON just past the limit: a request a parser would accept, were it small enough. */
const jsonBomb = gzipSync(
  `{"snapshot":{"brokers":[],"partitions":[${PARTITION.repeat(Math.ceil(LIMIT / PARTITION.length)).slice(0, -1)}]}}`,
  { level: 9 },
);
const zerosBomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });

/**
 * A three-broker cluster's snapshot as regular as a real one gets: one topic, replicas in rotation,
 * every tenth partition led by its second replica (in sync, so its preferred leader can take it back).
 */
function regularSnapshot(partitions: number) {
  return {
    brokers: [{ id: 1 }, { id: 2 }, { id: 3 }],
    partitions: Array.from({ length: partitions }, (_, i) => {
      const replicas = [1 + (i % 3), 1 + ((i + 1) % 3), 1 + ((i + 2) % 3)];
      return { topic: "t", partition: i, replicas, isr: replicas, leader: replicas[i % 10 ? 0 : 1] };
    }),
  };
}

/** Sent chunked, without a Content-Length, so the server has to count what arrives. */
async function postStreamed(url: string, bytes: Buffer): Promise<number | string> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 64 * 1024)
        controller.enqueue(bytes.subarray(at, at + 64 * 1024));
      controller.close();
    },
  });
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: GZIP_HEADERS,
      body,
      duplex: "half",
    } as RequestInit);
    await response.arrayBuffer();
    return response.status;
  } catch (error) {
    // The server closes a connection whose body it refused to read; a client still sending may see
    // the reset before the answer.
    return String((error as { cause?: { code?: string } }).cause?.code);
  }
}

describe("gzip request bodies", () => {
  let server: Awaited<ReturnType<typeof openServer>>;
  let storedBefore: string;
  const managed = () => `${server.url}/v1/clusters/c1/evaluate`;
  beforeAll(async () => {
    server = await openServer("dynalite", { maxBodyBytes: LIMIT });
    const first = await call(managed(), {
      body: { snapshot: snapshotOf(preferredPartitionsOf(1, 10, { outOfSync: 5 })), config: WAIT_FOR_SYNC },
    });
    expect(first.status).toBe(200);
    storedBefore = JSON.stringify(await server.store.getCluster("c1"));
  });
  afterAll(() => server.close());

  it.each([
    ["a bomb of valid JSON", jsonBomb],
    ["a bomb of zeros", zerosBomb],
  ])("%s is refused for its ratio, on both endpoints, and changes nothing", async (_, bomb) => {
    expect(bomb.length).toBeLessThan(70 * 1024);
    for (const url of [managed(), `${server.url}/v1/evaluate`]) {
      const reply = await call(url, { raw: bomb, headers: GZIP_HEADERS });
      expect(reply.status).toBe(413);
      expect(reply.json).toMatchObject({
        type: "/problems/payload-too-large",
        detail: expect.stringContaining(`more than ${MAX_GZIP_RATIO} times`),
      });
    }
    expect(JSON.stringify(await server.store.getCluster("c1"))).toBe(storedBefore);
  });

  it("a gzip body over the limit, sent without a length, is refused and changes nothing", async () => {
    const random = Buffer.alloc(LIMIT + 256 * 1024);
    for (let i = 0; i < random.length; i += 4) random.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
    const overLimit = gzipSync(random, { level: 0 });
    expect(overLimit.length).toBeGreaterThan(LIMIT);
    expect([413, "EPIPE", "ECONNRESET", "UND_ERR_SOCKET"]).toContain(
      await postStreamed(managed(), overLimit),
    );
    expect(JSON.stringify(await server.store.getCluster("c1"))).toBe(storedBefore);
    expect((await call(`${server.url}/healthz`)).status).toBe(200);
  });

  it("a large, very regular snapshot compressed 20–100:1 is accepted and run", async () => {
    const json = JSON.stringify({ snapshot: regularSnapshot(20_000) });
    const compressed = gzipSync(json, { level: 9 });
    const ratio = json.length / compressed.length;
    expect(json.length).toBeGreaterThan(1 << 20);
    expect(ratio).toBeGreaterThan(20);
    expect(ratio).toBeLessThan(MAX_GZIP_RATIO);
    const reply = await call(`${server.url}/v1/evaluate`, { raw: compressed, headers: GZIP_HEADERS });
    expect(reply.status).toBe(200);
    expect(reply.json.elections.length).toBeGreaterThan(0);
  });
});
