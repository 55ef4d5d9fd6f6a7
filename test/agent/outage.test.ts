import { describe, expect, it } from "vitest";
import { freePort } from "../../devkit/processes.ts";
import { OutageTracker, type RunReport, runOnce } from "../../functions/agent/agent.ts";
import { PacerClient } from "../../functions/agent/pacer-client.ts";
import type { ClusterRead } from "../../functions/agent/snapshot.ts";
import { formatRun } from "../../functions/format/agent-run.ts";

/** A run that fails names the step that failed, and the first run through after failed ones says how long it was. */

const HEALTHY: ClusterRead = {
  brokers: [
    { id: 1, fenced: false },
    { id: 2, fenced: false },
  ],
  partitions: [{ topic: "orders", partition: 0, replicas: [1, 2], isr: [1, 2], leader: 1, elr: [] }],
  reassigning: [],
};

const options = (read: () => Promise<ClusterRead>, pacerUrl: string) => ({
  cluster: { read, electPreferred: async () => [] },
  pacer: new PacerClient(pacerUrl, "c", (request) => fetch(request)),
  config: {},
  dryRun: false,
  once: true,
  observer: { run: () => undefined },
  signal: new AbortController().signal,
});

describe("a failed run says which step failed", () => {
  it("the pacer not listening: asking the pacer failed, with the socket's error under fetch's", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const report = await runOnce(options(async () => HEALTHY, url));
    expect(report.failedStep, report.error).toBe("asking the pacer");
    expect(report.error).toMatch(/fetch failed \(ECONNREFUSED\)/);
    expect(report.elections.asked).toBe(0);
    expect(formatRun(report)).toMatch(
      /run failed, nothing elected: asking the pacer failed: fetch failed \(ECONNREFUSED\)$/,
    );
  });

  it("the cluster unreadable: reading the cluster failed, and the pacer is not asked", async () => {
    let asked = 0;
    const report = await runOnce({
      ...options(async () => {
        throw new Error("cannot connect to any bootstrap server (k:9092): connect ECONNREFUSED");
      }, "http://pacer.invalid"),
      pacer: new PacerClient("http://pacer.invalid", "c", async () => {
        asked++;
        return new Response("{}");
      }),
    });
    expect(report.failedStep).toBe("reading the cluster");
    expect(asked).toBe(0);
  });
});

describe("the run after an outage", () => {
  const run = (atMs: number, failedStep?: RunReport["failedStep"]): RunReport => ({
    atMs,
    durationMs: 5,
    elections: { asked: 0, done: 0, notNeeded: 0, failed: {} },
    shares: {},
    heldBack: [],
    nextDelayMs: 1000,
    deferred: null,
    dryRun: false,
    ...(failedStep ? { error: "connect ECONNREFUSED", failedStep } : {}),
  });

  it("says how long nothing was elected, how many runs failed and at which step", () => {
    const outage = new OutageTracker();
    expect(outage.note(run(0)).resumed).toBeUndefined();
    outage.note(run(1_000, "asking the pacer"));
    outage.note(run(3_000, "reading the cluster"));
    outage.note(run(7_000, "reading the cluster"));
    const back = outage.note(run(13_400));
    expect(back.resumed).toEqual({ afterMs: 12_400, failedRuns: 3, lastFailedStep: "reading the cluster" });
    expect(formatRun(back)).toContain(
      "back after 12 s: 3 runs failed reading the cluster, nothing elected meanwhile; asked 0",
    );
    // Once said, it is not said again.
    expect(outage.note(run(14_000)).resumed).toBeUndefined();
  });
});
