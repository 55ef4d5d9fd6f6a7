import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { collectOutput } from "../processes.ts";

/**
 * The bed's clients, with Kafka's own Java producer (devkit/recovery-bed/java/RecoveryLoad.java):
 * the open-loop load measured from each record's intended send time, the bulk that a stopped broker
 * misses, and the HdrHistogram report over windows of the load's file.
 */

export interface Target {
  classpath: string;
  bootstrap: string;
  topics: string[];
  partitionsPerTopic: number;
}

/** Every client JVM started here, killed when this process exits however it exits. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

function java(classpath: string, args: string[], heapMb = 512): ChildProcess {
  const child = spawn("java", [`-Xmx${heapMb}m`, "-cp", classpath, "RecoveryLoad", ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

const targetArgs = (t: Target) => [
  "--bootstrap",
  t.bootstrap,
  "--topics",
  t.topics.join(","),
  "--partitions-per-topic",
  String(t.partitionsPerTopic),
];

/** Starts the open-loop load: `rate` records/s of `size` bytes round-robin over every partition. */
export async function startLoad(t: Target, rate: number, size: number, file: string) {
  const child = java(
    t.classpath,
    ["load", ...targetArgs(t), "--rate", String(rate), "--size", String(size), "--out", file],
    768,
  ); // room for the producer's 256 MiB buffer
  const output = collectOutput(child);
  const startedMs = await new Promise<number>((resolve, reject) => {
    child.stdout?.on("data", () => {
      const match = /started (\d+)/.exec(output.stdout());
      if (match) resolve(Number(match[1]));
    });
    output.exited.then((code) => reject(new Error(`load exited (${code}): ${output.stderr().slice(-2000)}`)));
  });
  return {
    startedMs,
    /** Stops the schedule and waits for every record in flight to be answered or to time out. */
    async stop(): Promise<void> {
      child.stdin?.end();
      const code = await output.exited;
      if (code !== 0) throw new Error(`load exited (${code}): ${output.stderr().slice(-2000)}`);
    },
  };
}

/**
 * Waits until the load runs steadily: its answers over each of the last `windows` spans of `spanMs`
 * keep up with the schedule (≥ 95 % of the records due) and the largest P99 is under 1.5× the smallest
 * (or within 50 ms of it: a few milliseconds' jitter is steady too).
 * A schedule started against a cluster that just changed (a controller restart, a leadership move)
 * begins behind and drains for a while; a steady window measured during that is not steady.
 * Resolves with how long it waited, or rejects after `maxMs`.
 */
export async function waitSettled(
  file: string,
  rate: number,
  { spanMs = 5_000, windows = 3, maxMs = 180_000 } = {},
): Promise<number> {
  const startMs = Date.now();
  let offset = 0;
  let partial = "";
  const p99s: number[] = [];
  while (Date.now() - startMs < maxMs) {
    await sleep(spanMs);
    const text = partial + readAppended(file, offset);
    offset += Buffer.byteLength(text) - Buffer.byteLength(partial);
    const lines = text.split("\n");
    partial = lines.pop() ?? "";
    const latencies = lines.map((line) => Number(line.split(",")[1]) / 1000).sort((a, b) => a - b);
    const keptUp = latencies.length >= 0.95 * rate * (spanMs / 1000);
    p99s.push(keptUp ? (latencies[Math.floor(0.99 * (latencies.length - 1))] as number) : Number.NaN);
    const last = p99s.slice(-windows);
    if (
      last.length === windows &&
      last.every(Number.isFinite) &&
      Math.max(...last) < Math.max(1.5 * Math.min(...last), Math.min(...last) + 50)
    )
      return Date.now() - startMs;
  }
  throw new Error(
    `the load did not settle within ${maxMs / 1000} s (P99 per ${spanMs / 1000} s: ${p99s.map((p) => p.toFixed(0)).join(", ")} ms)`,
  );
}

function readAppended(file: string, offset: number): string {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.max(0, size - offset));
    readSync(fd, buffer, 0, buffer.length, offset);
    return buffer.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** Produces about `bytes` unevenly over every partition (acks=all); resolves with what it did. */
export async function bulkProduce(t: Target, bytes: number) {
  const child = java(t.classpath, ["bulk", ...targetArgs(t), "--bytes", String(bytes)], 1024);
  child.stdin?.end();
  const output = collectOutput(child);
  const code = await output.exited;
  if (code !== 0)
    throw new Error(`bulk produce failed (${code}): ${output.stdout()}${output.stderr().slice(-2000)}`);
  return JSON.parse(output.stdout().trim().split("\n").pop() as string) as {
    records: number;
    bytes: number;
    ms: number;
  };
}

export interface LatencyFigures {
  count: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  errors: number;
  timeouts: number;
  errorKinds: Record<string, number>;
}

export interface LoadReport {
  windows: Record<string, LatencyFigures>;
  buckets: { fromMs: number; count: number; p99Ms: number; maxMs: number; errors: number }[];
}

/** Percentiles of named windows [from, to) of intended-send time, and P99 per bucket from `originMs`. */
export async function reportLoad(
  classpath: string,
  file: string,
  windows: Record<string, [number, number]>,
  buckets: { originMs: number; fromMs: number; toMs: number; bucketMs: number },
): Promise<LoadReport> {
  const spec = Object.entries(windows)
    .map(([name, [from, to]]) => `${name}:${from}:${to}`)
    .join(",");
  const child = java(classpath, [
    "report",
    "--in",
    file,
    "--windows",
    spec,
    "--origin-ms",
    String(buckets.originMs),
    "--buckets-from-ms",
    String(buckets.fromMs),
    "--buckets-to-ms",
    String(buckets.toMs),
    "--bucket-ms",
    String(buckets.bucketMs),
  ]);
  child.stdin?.end();
  const output = collectOutput(child);
  const code = await output.exited;
  if (code !== 0) throw new Error(`load report failed (${code}): ${output.stderr().slice(-2000)}`);
  return JSON.parse(output.stdout()) as LoadReport;
}

/**
 * Kafka's own follower replication throttle on `broker` at `bytesPerSecond` for every partition of the
 * topics (Kafka exempts partitions whose replica on the broker is in the ISR); 0 removes it.
 */
export async function setCatchUpThrottle(t: Target, broker: number, bytesPerSecond: number) {
  const child = java(t.classpath, [
    "throttle",
    "--bootstrap",
    t.bootstrap,
    "--topics",
    t.topics.join(","),
    "--broker",
    String(broker),
    "--rate-bytes",
    String(Math.round(bytesPerSecond)),
  ]);
  child.stdin?.end();
  const output = collectOutput(child);
  const code = await output.exited;
  if (code !== 0) throw new Error(`throttle failed (${code}): ${output.stderr().slice(-2000)}`);
}
