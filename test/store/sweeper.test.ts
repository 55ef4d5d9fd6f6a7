import { randomUUID } from "node:crypto";
import { gzipSync } from "node:zlib";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamoClient, ensureTable } from "../../functions/store/client.ts";
import { DynamoStore } from "../../functions/store/dynamo-store.ts";
import { type EmbeddedStore, startEmbeddedStore } from "../../functions/store/embedded.ts";
import { startSweeper, sweepExpired } from "../../functions/store/sweeper.ts";

/** The embedded store gives its disk back: replaced snapshots expire in minutes, a sweep deletes what expired. */

let embedded: EmbeddedStore;
let client: ReturnType<typeof dynamoClient>;
let store: DynamoStore;
const tableName = `pacer-${randomUUID()}`;
beforeAll(async () => {
  embedded = await startEmbeddedStore();
  client = dynamoClient({ endpoint: embedded.endpoint });
  await ensureTable(client, tableName);
  store = new DynamoStore(client, tableName);
});
afterAll(async () => {
  client.destroy();
  await embedded.close();
});

async function sortKeys(): Promise<string[]> {
  const { Items = [] } = await client.send(new ScanCommand({ TableName: tableName }));
  return Items.map((item) => `${item.pk?.S} ${item.sk?.S}`).sort();
}

describe("expiry on the embedded store", () => {
  it("keeps the latest snapshot a day, a replaced one ten minutes, and a sweep deletes only what expired", async () => {
    const t0 = 1_800_000_000_000;
    const upload = (text: string, receivedAtMs: number) =>
      store.putSnapshot("c", gzipSync(text), {
        snapshotId: `s${receivedAtMs}`,
        receivedAtMs,
        partitionCount: 1,
      });
    const first = await upload('{"brokers":[],"partitions":[]}', t0);
    const second = await upload('{"brokers":[],"partitions":[] }', t0 + 60_000);
    await store.putDecision("c", { decisionId: "d-old", evaluatedAtMs: t0, body: "{}" }, t0 + 5 * 60_000);
    await store.putDecision("c", { decisionId: "d-new", evaluatedAtMs: t0, body: "{}" }, t0 + 7 * 86_400_000);
    const before = await sortKeys();

    // Eleven minutes on: the replaced snapshot and the old decision have expired, nothing else.
    expect(await sweepExpired(client, tableName, t0 + 11 * 60_000)).toBe(2);
    const after = await sortKeys();
    expect(before.filter((key) => !after.includes(key))).toEqual([
      "cluster#c decision#d-old",
      `cluster#c snapshot#${first.snapshotId}#000`,
    ]);
    expect(await store.getSnapshot("c", second)).toBe('{"brokers":[],"partitions":[] }');
    expect(await store.getSnapshot("c", first)).toBeNull();
    expect(await store.getCluster("c")).toMatchObject({ snapshot: { snapshotId: second.snapshotId } });

    // A day and more on, the latest snapshot expires too; the cluster itself never does.
    expect(await sweepExpired(client, tableName, t0 + 2 * 86_400_000)).toBe(1);
    expect(await sweepExpired(client, tableName, t0 + 30 * 86_400_000)).toBe(1);
    expect(await sortKeys()).toEqual(["cluster#c cluster"]);
  });

  it("sweeps on a timer, as the local server runs it, and reports each sweep", async () => {
    await store.putDecision("t", { decisionId: "gone", evaluatedAtMs: 0, body: "{}" }, Date.now() - 1_000);
    const outcomes: unknown[] = [];
    const sweeper = startSweeper(client, tableName, 50, (outcome) => outcomes.push(outcome));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await sweeper.stop();
    expect(outcomes[0]).toEqual({ deleted: 1 });
    expect(await store.listDecisions("t", { limit: 10, nowMs: 0 })).toEqual([]);
  });
});
