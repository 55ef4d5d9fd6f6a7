import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";

/**
 * A broker killed or restarted resets the connections to it. The client library emits that as an
 * 'error' event on the connection, which with no listener ends the process: the agent, the scheduled
 * worker. Here the call fails and the process goes on (vitest fails the run on an uncaught error).
 */
describe("a connection reset by the broker", () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  /** Accepts, reads the first request, and answers with a TCP reset. */
  async function resettingBroker(): Promise<string> {
    server = createServer((socket) => socket.once("data", () => socket.resetAndDestroy()));
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return `127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  it("fails the call in flight, not the process, saying why; the next call connects again", async () => {
    const admin = new KafkaAdminClient({ bootstrapServers: [await resettingBroker()] });
    try {
      await expect(admin.describeCluster()).rejects.toThrow(
        /cannot connect to any bootstrap server \(127\.0\.0\.1:\d+\): Connection closed; Connection error \(read ECONNRESET\)/,
      );
      await expect(admin.describePartitions()).rejects.toThrow(/read ECONNRESET/);
    } finally {
      await admin.close();
    }
  });
});
