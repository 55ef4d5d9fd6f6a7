import { describe, expect, it } from "vitest";
import { ClusterConnections } from "../../functions/kafka/cluster-connections.ts";
import { ClusterConnection } from "../../schemas/connection.ts";

/** The worker's kept Kafka clients: reused tick after tick, made anew when they should not be trusted. */

const noSecrets = { read: () => Promise.reject(new Error("no secret here")) };
const plaintext = (servers: string) =>
  ClusterConnection.parse({ "bootstrap.servers": servers, "security.protocol": "PLAINTEXT" });

function connections() {
  let nowMs = 0;
  const kept = new ClusterConnections(noSecrets, {
    clock: () => nowMs,
    idleMs: 5 * 60_000,
    maxAgeMs: 10 * 60_000,
  });
  const advance = (ms: number) => {
    nowMs += ms;
  };
  return { kept, advance };
}

describe("the worker's Kafka clients", () => {
  it("keeps one per cluster while its registration stays the same", async () => {
    const { kept, advance } = connections();
    const first = await kept.clientOf("a", plaintext("k1:9092"));
    advance(60_000);
    const again = await kept.clientOf("a", plaintext("k1:9092"));
    expect(first.kept).toBe(false);
    expect(again).toEqual({ client: first.client, kept: true });
    const other = await kept.clientOf("b", plaintext("k1:9092"));
    expect(other.client).not.toBe(first.client);
    expect(kept.size).toBe(2);
  });

  it("makes a new one when the registration changes, after a drop, when idle and when old", async () => {
    const { kept, advance } = connections();
    const first = await kept.clientOf("a", plaintext("k1:9092"));
    const changed = await kept.clientOf("a", plaintext("k2:9092"));
    expect(changed.kept).toBe(false);
    expect(changed.client).not.toBe(first.client);

    await kept.drop("a");
    expect((await kept.clientOf("a", plaintext("k2:9092"))).kept).toBe(false);

    advance(5 * 60_000 + 1);
    expect((await kept.clientOf("a", plaintext("k2:9092"))).kept).toBe(false);

    // Used every minute, it still goes at ten: an MSK IAM token lasts fifteen.
    for (let minute = 1; minute <= 10; minute++) {
      advance(60_000);
      expect((await kept.clientOf("a", plaintext("k2:9092"))).kept).toBe(minute < 10);
    }
    await kept.close();
    expect(kept.size).toBe(0);
  });
});
