import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort } from "../../devkit/processes.ts";
import { backoffMs, tallyOf } from "../../functions/agent/agent.ts";
import { formatRun } from "../../functions/format/agent-run.ts";

/** `pacer agent` where no Kafka is needed: its arguments, its refusals and its fail-safe exit. */
function agent(args: string[]) {
  const result = spawnSync(process.execPath, ["bin/pacer.js", "agent", ...args], {
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const dir = mkdtempSync(join(tmpdir(), "pacer-agent-cli-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe("pacer agent's command line", () => {
  it.each([
    [[], /--bootstrap-server is required/],
    [["--bootstrap-server", "kafka"], /"kafka" is not host:port/],
    [["--bootstrap-server", "k:9092"], /give exactly one of --embedded and --pacer-url/],
    [["--bootstrap-server", "k:9092", "--embedded", "--pacer-url", "http://x"], /give exactly one/],
    [["--bootstrap-server", "k:9092", "--pacer-url", "http://x"], /--pacer-url needs --cluster-id/],
    [["--bootstrap-server", "k:9092", "--embedded", "--scheduled"], /--scheduled needs a service/],
    [["--bootstrap-server", "k:9092", "--embedded", "--metrics-port", "x"], /--metrics-port must be a port/],
  ])("refuses %j with status 2 before connecting", (args, message) => {
    const { code, stderr } = agent(args as string[]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain("usage: pacer agent");
  });

  it("refuses an unsupported client property at start", () => {
    const config = file("client.properties", "security.protocol=SSL\nssl.truststore.type=JKS\n");
    const { code, stderr } = agent([
      "--bootstrap-server",
      "k:9092",
      "--embedded",
      "--command-config",
      config,
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain("ssl.truststore.type=JKS: only PEM is supported");
  });

  it("refuses a pacing config with an unknown name, suggesting the known one", () => {
    const config = file("pacing.properties", "leader.imbalance.election.max.per.rum=20\n");
    const { code, stderr } = agent(["--bootstrap-server", "k:9092", "--embedded", "--config", config]);
    expect(code).toBe(2);
    expect(stderr).toContain("leader.imbalance.election.max.per.rum");
    expect(stderr).toContain("leader.imbalance.election.max.per.run");
  });

  it("--once with Kafka unreachable elects nothing, says reading the cluster failed, and exits 1", async () => {
    const port = await freePort();
    const { code, stdout } = agent([
      "--bootstrap-server",
      `127.0.0.1:${port}`,
      "--embedded",
      "--cluster-id",
      "unreachable",
      "--data-dir",
      join(dir, "data"),
      "--once",
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /run failed, nothing elected: reading the cluster failed: cannot connect to any bootstrap server/,
    );
  });
});

describe("the agent's run line and tallies", () => {
  it("counts 0 as done, 84 as not needed and every other code as failed, by code", () => {
    const tally = tallyOf(5, [
      { topic: "a", partition: 0, errorCode: 0, errorMessage: null },
      { topic: "a", partition: 1, errorCode: 84, errorMessage: null },
      { topic: "a", partition: 2, errorCode: 80, errorMessage: "not available" },
      { topic: "a", partition: 3, errorCode: 80, errorMessage: "not available" },
      { topic: "gone", partition: 0, errorCode: 3, errorMessage: null },
    ]);
    expect(tally).toEqual({ asked: 5, done: 1, notNeeded: 1, failed: { 80: 2, 3: 1 } });
  });

  it("says what was asked, done and held back, and when the next run is", () => {
    const line = formatRun({
      atMs: Date.UTC(2026, 11, 3, 14, 0, 0),
      durationMs: 40,
      elections: { asked: 20, done: 18, notNeeded: 1, failed: { 80: 1 } },
      shares: {},
      heldBack: [{ id: 4, reason: "over-threshold", outOfSync: 12, total: 100, gatedSinceMs: 0 }],
      nextDelayMs: 2000,
      deferred: null,
      dryRun: false,
    });
    expect(line).toBe(
      "2026-12-03T14:00:00.000Z asked 20, done 18, not needed 1, failed 1 (1×80); held back: broker 4 over-threshold (12/100 out of sync); next in 2.0 s",
    );
  });

  it("says how much a broker held back by the max-lag-bytes gate still has to fetch", () => {
    const line = formatRun({
      atMs: Date.UTC(2026, 11, 3, 14, 0, 0),
      durationMs: 40,
      elections: { asked: 0, done: 0, notNeeded: 0, failed: {} },
      shares: {},
      heldBack: [
        {
          id: 1,
          reason: "over-max-lag-bytes",
          outOfSync: 3,
          total: 100,
          lagBytes: 182_400_000,
          gatedSinceMs: 0,
        },
        { id: 2, reason: "over-max-lag-bytes", outOfSync: 0, total: 100, gatedSinceMs: 0 },
      ],
      nextDelayMs: 5000,
      deferred: null,
      dryRun: false,
    });
    expect(line).toContain(
      "held back: broker 1 over-max-lag-bytes (3/100 out of sync, 182.4 MB to fetch), broker 2 over-max-lag-bytes (0/100 out of sync, lag unknown)",
    );
  });

  it("lists a dry run's batch: what would have been elected", () => {
    const batch = Array.from({ length: 22 }, (_, i) => ({ topic: "orders", partition: i, leader: 2 }));
    const line = formatRun({
      atMs: 0,
      durationMs: 1,
      elections: { asked: 22, done: 0, notNeeded: 0, failed: {} },
      shares: {},
      heldBack: [],
      nextDelayMs: 10,
      deferred: null,
      dryRun: true,
      batch,
    });
    expect(line).toContain("asked 22 (dry run: nothing elected)");
    expect(line).toContain("would elect orders-0 -> 2, orders-1 -> 2,");
    expect(line).toMatch(/orders-19 -> 2, … 2 more$/);
  });

  it("backs off exponentially with full jitter, capped", () => {
    expect(backoffMs(0, { initialMs: 1000, maxMs: 30_000 }, () => 1)).toBe(1000);
    expect(backoffMs(3, { initialMs: 1000, maxMs: 30_000 }, () => 1)).toBe(8000);
    expect(backoffMs(10, { initialMs: 1000, maxMs: 30_000 }, () => 1)).toBe(30_000);
    expect(backoffMs(10, { initialMs: 1000, maxMs: 30_000 }, () => 0)).toBe(0);
  });
});
