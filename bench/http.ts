import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { countingStore } from "../devkit/counting-store.ts";
import { createApi } from "../functions/api/app.ts";
import { dynamoClient, ensureTable } from "../functions/store/client.ts";
import { startEmbeddedStore } from "../functions/store/embedded.ts";
import { recoveringCluster } from "./cluster.ts";

/**
 * The HTTP layer's cost: a 200,000-partition snapshot posted to the pure endpoint of a listening server.
 * Server-side time (Server-Timing) against JSON.parse of the request plus JSON.stringify of the answer,
 * which any service must pay; target ≤ 1.3×. Then the store operations of one managed run.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** The service as an operator runs it (`pacer serve`), in its own process, so that the client does not share its event loop. */
async function startServerProcess(): Promise<{ url: string; stop: () => void }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const child = spawn(process.execPath, ["bin/pacer.js", "serve"], {
    env: {
      ...process.env,
      PORT: String(port),
      PACER_DATA_DIR: mkdtempSync(join(tmpdir(), "pacer-bench-")),
      // 200,000 partitions are ~18 MB of JSON: above the 8 MiB default.
      PACER_MAX_BODY_BYTES: String(64 << 20),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

const snapshot = recoveringCluster({
  brokers: 200,
  partitions: 200_000,
  partitionsPerTopic: 100,
  recoveringShare: 0.05,
  caughtUpShare: 0.6,
  seed: 7,
});
const config = { "leader.imbalance.election.max.per.run": 1000 };
const body = Buffer.from(JSON.stringify({ snapshot, config, now: 1_767_225_600_000 }));
console.log(
  `request: ${snapshot.partitions.length.toLocaleString()} partitions, ${(body.length / 1e6).toFixed(1)} MB`,
);

const server = await startServerProcess();
const serverMs: number[] = [];
const baselineMs: number[] = [];
const WARM_UP_ROUNDS = 3;
for (let round = -WARM_UP_ROUNDS; round < ROUNDS; round++) {
  const response = await fetch(`${server.url}/v1/evaluate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const answer = await response.text();
  if (response.status !== 200)
    throw new Error(`pure endpoint answered ${response.status}: ${answer.slice(0, 300)}`);
  const start = performance.now();
  JSON.stringify(JSON.parse(answer));
  JSON.parse(body.toString("utf8"));
  if (round < 0) continue;
  baselineMs.push(performance.now() - start);
  serverMs.push(Number(/dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "")?.[1]));
}
const ratio = median(serverMs) / median(baselineMs);
console.log(
  `median of ${ROUNDS} after ${WARM_UP_ROUNDS} warm-up rounds: server ${median(serverMs).toFixed(0)} ms, JSON.parse + JSON.stringify ${median(baselineMs).toFixed(0)} ms`,
);
console.log(`server/JSON ratio ${ratio.toFixed(2)} (target ≤ 1.30): ${ratio <= 1.3 ? "met" : "MISSED"}`);

server.stop();

// Store operations per managed run, counted on the client the in-process app uses.
const embedded = await startEmbeddedStore();
const setup = dynamoClient({ endpoint: embedded.endpoint });
await ensureTable(setup, "bench");
setup.destroy();
const counting = countingStore(embedded.endpoint, "bench");
const app = createApi({ store: counting.store, maxBodyBytes: 64 << 20 });
for (const [label, headers] of [
  ["without Idempotency-Key", {}],
  ["with Idempotency-Key", { "idempotency-key": "bench-1" }],
  ["replayed Idempotency-Key", { "idempotency-key": "bench-1" }],
] as const) {
  counting.reset();
  const managed = JSON.stringify({ snapshot, config });
  const response = await app.request("/v1/clusters/bench/evaluate", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: managed,
  });
  await response.text();
  const operations = [...counting.calls].map(([command, n]) => `${command} ${n}`).join(", ");
  console.log(`managed run ${label}: ${counting.total()} store operations (${operations})`);
}
counting.close();
await embedded.close();
