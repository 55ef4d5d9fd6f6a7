import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOCKET_TIMEOUTS } from "../../functions/handlers/local.ts";
import { openServer } from "../support/stores.ts";

/** The local server's sockets, as raw TCP clients see them: keep-alive reuse and slow-loris limits. */

function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Sends a request and resolves with the response head, or null if the server closed the socket. */
function exchange(socket: Socket, request: string): Promise<string | null> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk;
      if (text.includes("\r\n\r\n")) done(text);
    };
    const done = (result: string | null) => {
      socket.off("data", onData);
      socket.off("close", onClose);
      resolve(result);
    };
    const onClose = () => done(text || null);
    socket.on("data", onData);
    socket.once("close", onClose);
    socket.write(request);
  });
}

const GET = "GET /healthz HTTP/1.1\r\nHost: pacer\r\nConnection: keep-alive\r\n\r\n";

describe("the local server's sockets", () => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer("dynalite", {
      timeouts: { headersMs: 1000, requestMs: 2000, checkIntervalMs: 100 },
    });
  });
  afterAll(() => server.close());

  it("keeps an idle keep-alive connection longer than common load-balancer idle timeouts", () => {
    expect(SOCKET_TIMEOUTS.keepAliveMs).toBeGreaterThan(60_000);
    expect(SOCKET_TIMEOUTS.headersMs).toBeLessThan(SOCKET_TIMEOUTS.keepAliveMs);
  });

  it("answers a second request on a connection idle for longer than Node's default 5 s", async () => {
    const socket = await open(server.url);
    try {
      expect(await exchange(socket, GET)).toMatch(/^HTTP\/1\.1 200/);
      await new Promise((r) => setTimeout(r, 6_000));
      expect(await exchange(socket, GET)).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      socket.destroy();
    }
  });

  it("answers a body over the limit with 413 and closes, so a client still sending is not left hanging", async () => {
    const response = await fetch(`${server.url}/v1/evaluate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: " ".repeat(9 * 1024 * 1024),
      signal: AbortSignal.timeout(10_000),
    });
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    expect(((await response.json()) as { type: string }).type).toBe("/problems/payload-too-large");
  });

  it("drops a client that trickles its headers past the headers timeout (slow loris)", async () => {
    const socket = await open(server.url);
    const started = Date.now();
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    let response = "";
    socket.on("data", (chunk) => {
      response += chunk;
    });
    socket.write("GET /healthz HTTP/1.1\r\nHost: pacer\r\n");
    const trickle = setInterval(() => socket.writable && socket.write("X-Slow: 1\r\n"), 200);
    await closed;
    clearInterval(trickle);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(response).toMatch(/^HTTP\/1\.1 408|^$/);
  });
});
