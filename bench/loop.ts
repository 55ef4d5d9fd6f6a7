import { startPacerServe } from "../devkit/processes.ts";
import { recoveringCluster } from "./cluster.ts";

/**
 * Small requests while large ones run: a `pacer serve` process takes ~8 MiB evaluations back to back
 * (pure and managed in turn) while a probe sends /healthz and a small evaluation every 20 ms.
 * Prints the probe's latency with the worker pool (the default) and with everything on the event
 * loop. Target: p99 ≤ 50 ms with the pool.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ??
  NaN;

/**
 * Bodies are encoded once, so that the client's own event loop, which the probe shares, does not
 * spend ~10 ms encoding 8 MiB for every large request.
 */
function encode(body: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(body));
}
const large = encode({
  snapshot: recoveringCluster({
    brokers: 60,
    partitions: 94_000,
    partitionsPerTopic: 100,
    recoveringShare: 0.05,
    caughtUpShare: 0.6,
    seed: 7,
  }),
});
const small = encode({
  snapshot: {
    brokers: [{ id: 1 }, { id: 2 }],
    partitions: [{ topic: "t", partition: 0, replicas: [1, 2], isr: [2], leader: 2 }],
  },
});
const post = (url: string, body: Uint8Array) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body }).then(async (r) => {
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`${url}: ${r.status}`);
  });

async function measure(label: string, env: Record<string, string>) {
  const server = await startPacerServe(env);
  const until = Date.now() + SECONDS * 1000;
  let largeDone = 0;
  const heavy = async () => {
    for (let i = 0; Date.now() < until; i++) {
      await post(`${server.url}${i % 2 ? "/v1/clusters/loop/evaluate" : "/v1/evaluate"}`, large);
      largeDone++;
    }
  };
  const latencies: number[] = [];
  const probe = async () => {
    await new Promise((r) => setTimeout(r, 1000));
    for (let i = 0; Date.now() < until; i++) {
      const started = performance.now();
      if (i % 2 === 0) await fetch(`${server.url}/healthz`).then((r) => r.arrayBuffer());
      else await post(`${server.url}/v1/evaluate`, small);
      latencies.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await Promise.all([heavy(), probe()]);
  await server.stop();
  return {
    server: label,
    "large requests": largeDone,
    "probe requests": latencies.length,
    "p50 ms": percentile(latencies, 50).toFixed(1),
    "p99 ms": percentile(latencies, 99).toFixed(1),
    "max ms": Math.max(...latencies).toFixed(1),
  };
}

console.log(
  `\nSmall requests (/healthz, a one-partition evaluate) every 20 ms while ${(large.byteLength / 1048576).toFixed(1)} MiB evaluations run back to back, ${SECONDS} s each:`,
);
const rows = [
  await measure("worker pool for bodies ≥ 256 KiB (default)", {}),
  await measure("everything on the event loop", { PACER_WORKER_MIN_BYTES: "0" }),
];
console.table(rows);
const p99 = Number(rows[0]?.["p99 ms"]);
console.log(`small-request p99 with the pool ${p99} ms (target ≤ 50): ${p99 <= 50 ? "met" : "MISSED"}`);
