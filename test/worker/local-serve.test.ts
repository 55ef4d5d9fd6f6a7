import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../devkit/kafka/recovery.ts";
import { freePort } from "../../devkit/processes.ts";
import { type LocalServer, startLocalServer } from "../../functions/handlers/local.ts";

/**
 * `pacer serve` ticking a cluster registered with a connection, on the embedded store: the local
 * ticker reaches the cluster itself, and says so when it cannot, in the cluster's last tick and in
 * GET /metrics. (Reaching a real cluster: test/kafka/worker.test.ts.)
 */

let server: LocalServer;
beforeAll(async () => {
  server = await startLocalServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: mkdtempSync(join(tmpdir(), "pacer-serve-")),
    tableName: "leadership-pacer",
    maxBodyBytes: 1024 * 1024,
    tickSeconds: 1,
    workerMinBytes: 0,
  });
});
afterAll(() => server?.close());

const put = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("pacer serve with a cluster it reaches itself", () => {
  it("ticks it with no snapshot stored, and reports a broker that refuses the connection", async () => {
    const connection = { "bootstrap.servers": `127.0.0.1:${await freePort()}` };
    expect((await put("/v1/clusters/nowhere/connection", connection)).status).toBe(200);
    expect((await put("/v1/clusters/nowhere/config", { "pacer.tick.enabled": true })).status).toBe(200);
    const tick = await waitFor(
      async () => {
        const cluster = (await (await fetch(`${server.url}/v1/clusters/nowhere`)).json()) as {
          lastTick: { outcome: string; reach?: string; detail?: string } | null;
        };
        return cluster.lastTick?.outcome === "unreachable" ? cluster.lastTick : undefined;
      },
      10_000,
      "a tick that tried the cluster",
    );
    expect(tick).toMatchObject({ reach: "unreachable", detail: expect.stringMatching(/ECONNREFUSED/) });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(
      /leadership_pacer_cluster_unreachable_total\{cluster="nowhere",reach="unreachable"\} [1-9]/,
    );
  });
});
