import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { availableParallelism } from "node:os";
import { gzipSync } from "node:zlib";
import { startPacerServe } from "../devkit/processes.ts";

/**
 * A hostile client: 10,000 bad requests of the kinds below in a seeded random mix, 16 at a time,
 * against a `pacer serve` process at its defaults (8 MiB limit, worker pool). Every one must be
 * refused (4xx, or the connection closed on a body still being sent); each is timed from its
 * connection to the answer. Target: p99 < 100 ms over the mix, and each kind alone within 100 ms.
 * `--unparsed` leaves out the malformed snapshots, the only kinds that must be parsed to be refused
 * (two of 1.3–1.4 MB, 12–17 ms each of the one worker thread here, as a valid snapshot of that size
 * costs, and one of 100 KB): what remains is refused on its headers, its size or its gzip alone.
 */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000);
const CONCURRENCY = 16;
const LIMIT = 8 * 1024 * 1024;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** A small deterministic generator, so every run sends the same mix. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const JSON_TYPE = { "content-type": "application/json" };
const GZIP = { ...JSON_TYPE, "content-encoding": "gzip" };
const PARTITION = '{"topic":"t","partition":0,"replicas":[1],"isr":[1],"leader":1},';
const many = (n: number, item: (i: number) => unknown) => Array.from({ length: n }, (_, i) => item(i));
const random = Buffer.alloc(LIMIT + 256 * 1024);
for (let i = 0; i < random.length; i += 4) random.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);

interface Hostile {
  headers: Record<string, string>;
  body: Buffer;
  /** Sent chunked without a Content-Length, so the server must count what arrives. */
  streamed?: boolean;
}

const snapshotWith = (partitions: unknown[]) =>
  Buffer.from(JSON.stringify({ snapshot: { brokers: [], partitions } }));
const KINDS: Record<string, Hostile> = {
  "gzip bomb: 8 MiB of valid JSON": {
    headers: GZIP,
    body: gzipSync(
      `{"snapshot":{"brokers":[],"partitions":[${PARTITION.repeat(Math.ceil(LIMIT / PARTITION.length)).slice(0, -1)}]}}`,
      { level: 9 },
    ),
  },
  "gzip bomb: 64 MiB of zeros": { headers: GZIP, body: gzipSync(Buffer.alloc(64 << 20), { level: 9 }) },
  "gzip just over the limit, chunked": {
    headers: GZIP,
    body: gzipSync(random, { level: 0 }),
    streamed: true,
  },
  "plain just over the limit, chunked": {
    headers: JSON_TYPE,
    body: random.subarray(0, LIMIT + 1),
    streamed: true,
  },
  "plain over the limit, with its length": { headers: JSON_TYPE, body: random.subarray(0, LIMIT + 1) },
  "broken gzip": { headers: GZIP, body: Buffer.from("not gzip at all") },
  "not JSON": { headers: JSON_TYPE, body: Buffer.from('{"snapshot": nope') },
  "text/plain": { headers: { "content-type": "text/plain" }, body: Buffer.from("{}") },
  brotli: { headers: { ...JSON_TYPE, "content-encoding": "br" }, body: Buffer.from("{}") },
  "a JSON array": { headers: JSON_TYPE, body: Buffer.from("[1,2,3]") },
};
/** Refused only once parsed and checked: the cost of reading them grows with their size. */
const PARSED: Record<string, Hostile> = {
  "20,000 negative replica ids": {
    headers: JSON_TYPE,
    body: snapshotWith(
      many(20_000, (i) => ({ topic: "t", partition: i, replicas: [-1], isr: [-1], leader: -1 })),
    ),
  },
  "20,000 duplicate partitions": {
    headers: JSON_TYPE,
    body: snapshotWith(
      many(20_000, () => ({ topic: "t", partition: 0, replicas: [1], isr: [1], leader: 1 })),
    ),
  },
  "20,000 null partitions": { headers: JSON_TYPE, body: snapshotWith(many(20_000, () => null)) },
};
if (!process.argv.includes("--unparsed")) Object.assign(KINDS, PARSED);

/**
 * A request as a hostile client sends it: its bytes prepared once (headers, and the body as it is or
 * in 64 KiB chunks of the chunked encoding), written to a fresh connection in one call. A raw socket
 * rather than fetch: on a machine where client and server share the cores, the client should cost as
 * little as it can, so that the figures are the server's.
 */
function wire(url: URL, hostile: Hostile): Buffer {
  const headers = Object.entries(hostile.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  const framing = hostile.streamed
    ? "transfer-encoding: chunked\r\n"
    : `content-length: ${hostile.body.length}\r\n`;
  const head = `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\n${headers.join("")}${framing}\r\n`;
  if (!hostile.streamed) return Buffer.concat([Buffer.from(head), hostile.body]);
  const parts: Buffer[] = [Buffer.from(head)];
  for (let at = 0; at < hostile.body.length; at += 64 * 1024) {
    const chunk = hostile.body.subarray(at, at + 64 * 1024);
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n"));
  }
  parts.push(Buffer.from("0\r\n\r\n"));
  return Buffer.concat(parts);
}

/** Sends one prepared request; its outcome is the answer's status, or how the connection ended. */
function send(url: URL, bytes: Buffer): Promise<{ ms: number; outcome: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    let head = "";
    let settled = false;
    const status = () => /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1];
    const settle = (outcome: string) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ ms: performance.now() - started, outcome });
    };
    const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
    socket.on("data", (chunk: Buffer) => {
      if (head.length < 16) head += chunk.toString("latin1", 0, 16);
    });
    socket.on("end", () => settle(status() ?? "closed"));
    socket.on("error", (error: NodeJS.ErrnoException) => settle(status() ?? error.code ?? "error"));
  });
}

const server = await startPacerServe();
const routes = [new URL("/v1/evaluate", server.url), new URL("/v1/clusters/hostile/evaluate", server.url)];
const names = Object.keys(KINDS);
const prepared = new Map(
  names.map((name) => [name, routes.map((route) => wire(route, KINDS[name] as Hostile))]),
);
const bytesFor = (name: string, route: number) => prepared.get(name)?.[route] as Buffer;

// Each kind alone first, a few times: its own cost, with nothing queued beside it.
const alone: Record<string, number[]> = {};
for (const name of names) {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) times.push((await send(routes[i % 2] as URL, bytesFor(name, i % 2))).ms);
  alone[name] = times;
}

const next = seeded(20261206);
const plan = Array.from({ length: REQUESTS }, () => ({
  name: names[Math.floor(next() * names.length)] as string,
  route: Math.floor(next() * routes.length),
}));
interface Tally {
  ms: number[];
  outcomes: Map<string, number>;
}
const byKind = new Map<string, Tally>();
const all: number[] = [];
/**
 * CPU seconds a process has used, all its threads: Linux's /proc/PID/stat, in clock ticks of 10 ms.
 * NaN where there is no /proc.
 */
function cpuSecondsOf(pid: number): number {
  if (!existsSync(`/proc/${pid}/stat`)) return Number.NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const serverCpuBefore = cpuSecondsOf(server.pid);
const clientCpuBefore = process.cpuUsage();
let cursor = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (cursor < plan.length) {
      const { name, route } = plan[cursor++] as (typeof plan)[number];
      const result = await send(routes[route] as URL, bytesFor(name, route));
      const kind: Tally = byKind.get(name) ?? { ms: [], outcomes: new Map() };
      byKind.set(name, kind);
      kind.ms.push(result.ms);
      kind.outcomes.set(result.outcome, (kind.outcomes.get(result.outcome) ?? 0) + 1);
      all.push(result.ms);
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
const serverCpu = cpuSecondsOf(server.pid) - serverCpuBefore;
const clientUsage = process.cpuUsage(clientCpuBefore);
const clientCpu = (clientUsage.user + clientUsage.system) / 1e6;
const health = await fetch(`${server.url}/healthz`).then((r) => r.status);
await server.stop();

const rows = names.map((name) => {
  const kind: Tally = byKind.get(name) ?? { ms: [], outcomes: new Map() };
  const sorted = [...kind.ms].sort((a, b) => a - b);
  const aloneSorted = [...(alone[name] ?? [])].sort((a, b) => a - b);
  return {
    kind: name,
    bytes: (KINDS[name] as Hostile).body.length,
    "alone median ms": percentile(aloneSorted, 50).toFixed(1),
    "in mix": sorted.length,
    "p50 ms": percentile(sorted, 50).toFixed(1),
    "p99 ms": percentile(sorted, 99).toFixed(1),
    "max ms": (sorted.at(-1) ?? Number.NaN).toFixed(1),
    answers: [...kind.outcomes].map(([outcome, n]) => `${outcome}×${n}`).join(" "),
  };
});
console.log(
  `\n${REQUESTS.toLocaleString()} bad requests, ${CONCURRENCY} at a time, in ${seconds.toFixed(1)} s:`,
);
console.table(rows);
const sortedAll = all.sort((a, b) => a - b);
const p99 = percentile(sortedAll, 99);
const accepted = [...byKind.values()].reduce(
  (n, kind) => n + [...kind.outcomes].filter(([o]) => /^[235]/.test(o)).reduce((m, [, c]) => m + c, 0),
  0,
);
const slowestAlone = Math.max(...rows.map((row) => Number(row["alone median ms"])));
console.log(
  `mix p50 ${percentile(sortedAll, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (target < 100): ${p99 < 100 ? "met" : "MISSED"}; max ${(sortedAll.at(-1) ?? 0).toFixed(1)} ms`,
);
console.log(
  `slowest kind alone (median of 5) ${slowestAlone.toFixed(1)} ms (target < 100): ${slowestAlone < 100 ? "met" : "MISSED"}`,
);
console.log(
  `CPU over the mix: server ${serverCpu.toFixed(1)} s (${((1000 * serverCpu) / REQUESTS).toFixed(2)} ms a request), client ${clientCpu.toFixed(1)} s, in ${seconds.toFixed(1)} s on ${availableParallelism()} cores`,
);
console.log(`accepted or 5xx: ${accepted} (must be 0); /healthz after the mix: ${health}`);
if (accepted > 0 || health !== 200) process.exitCode = 1;
