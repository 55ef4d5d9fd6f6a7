import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** The `pacer` command as an operator runs it: a real process, stdin/stdout/stderr and exit codes. */
function pacer(args: string[], input?: string) {
  const result = spawnSync(process.execPath, ["bin/pacer.js", ...args], { input, encoding: "utf8" });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("pacer evaluate", () => {
  it("answers the bundled example: broker 1 gated, broker 2's elections capped and throttled", () => {
    const { code, stdout } = pacer(["evaluate", "examples/evaluate.json"]);
    expect(code).toBe(0);
    const answer = JSON.parse(stdout);
    expect(answer.elections).toHaveLength(4);
    expect(answer.elections.every((e: { leader: number }) => e.leader === 2)).toBe(true);
    expect(answer.nextDelayMs).toBe(15_000);
    expect(answer.brokers[0]).toMatchObject({ id: 1, gated: true, reason: "over-threshold" });
    expect(answer.state.brokers).toEqual([{ id: 1, gatedSinceMs: 1767225600000, clearRuns: 0 }]);
    expect(answer.partitions).toBeUndefined();
  });

  it("reads stdin and adds every imbalanced partition's disposition with --explain", () => {
    const { code, stdout } = pacer(
      ["evaluate", "-", "--explain"],
      readFileSync("examples/evaluate.json", "utf8"),
    );
    expect(code).toBe(0);
    const dispositions = JSON.parse(stdout).partitions.map((p: { disposition: string }) => p.disposition);
    expect(dispositions.filter((d: string) => d === "skipped-gated")).toHaveLength(9);
    expect(dispositions.filter((d: string) => d === "preferred-not-in-isr")).toHaveLength(3);
  });

  it("answers one line per request with --lines", () => {
    const request = JSON.stringify(JSON.parse(readFileSync("examples/evaluate.json", "utf8")));
    const { code, stdout } = pacer(["evaluate", "--lines"], `${request}\n\n${request}\n`);
    expect(code).toBe(0);
    const lines = stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1]!).elections).toHaveLength(4);
  });

  it("rejects bad input with exit code 2, every problem on stderr and nothing on stdout", () => {
    const bad = JSON.stringify({
      snapshot: {
        brokers: [{ id: 1 }],
        partitions: [{ topic: "t", partition: 0, replicas: [1], isr: [1], leader: 7 }],
      },
      config: { "leader.imbalance.election.max.per.run": 0 },
    });
    const { code, stdout, stderr } = pacer(["evaluate"], bad);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    const problem = JSON.parse(stderr);
    expect(problem).toMatchObject({ type: "/problems/invalid-input", status: 400 });
    expect(problem.errors.map((e: { pointer: string }) => e.pointer)).toEqual([
      "/snapshot/partitions/0/leader",
      "/config/leader.imbalance.election.max.per.run",
    ]);
  });

  it("names the line of a bad request in --lines mode and prints no answer for the good ones", () => {
    const good = JSON.stringify({ snapshot: { brokers: [], partitions: [] } });
    const { code, stdout, stderr } = pacer(["evaluate", "--lines"], `${good}\n{"snapshot":{}}\n`);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(JSON.parse(stderr).errors[0].pointer).toBe("/lines/2/snapshot/brokers");
  });
});

describe("pacer replay", () => {
  it("threads the state through a recorded series: gated, then hysteresis, then released", () => {
    const { code, stdout } = pacer(["replay", "examples/replay.ndjson"]);
    expect(code).toBe(0);
    const reasons = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).brokers[0].reason);
    expect(reasons).toEqual([
      "over-threshold",
      "over-threshold",
      "over-threshold",
      "hysteresis",
      "released",
      "under-threshold",
    ]);
  });

  it("prints a table for a person with --summary: one row per run, its time, what the gate held back", () => {
    const { code, stdout } = pacer(["replay", "examples/replay.ndjson", "--summary"]);
    expect(code).toBe(0);
    const rows = stdout
      .trim()
      .split("\n")
      .map((line) => line.split("|").map((cell) => cell.trim()));
    const header = rows[0] as string[];
    const column = (title: string) => rows.slice(2).map((row) => row[header.indexOf(title)]);
    expect(rows).toHaveLength(2 + 6);
    expect(column("at")).toEqual(["0m 00s", "1m 00s", "2m 00s", "3m 00s", "4m 00s", "5m 00s"]);
    expect(column("held back")).toEqual([
      "1 over-threshold",
      "1 over-threshold",
      "1 over-threshold",
      "1 hysteresis",
      "-",
      "-",
    ]);
    expect(column("let through")).toEqual(["-", "-", "-", "-", "1 released", "-"]);
    expect(column("elections")).toEqual(["4", "4", "4", "4", "4", "4"]);

    const single = pacer(["evaluate", "examples/evaluate.json", "--summary"]);
    expect(single.stdout.trim().split("\n")).toHaveLength(3);
    expect(single.stdout).not.toContain("| at ");
  });

  it("shows what another config would have done with the same series", () => {
    const immediate = readFileSync("examples/replay.ndjson", "utf8").replaceAll(
      '"wait-for-sync"',
      '"immediate"',
    );
    const { stdout } = pacer(["replay"], immediate);
    const elected = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).brokers[0].elected);
    expect(elected[0]).toBeGreaterThan(0);
  });

  it("requires now on every line", () => {
    const { code, stderr } = pacer(["replay"], '{"snapshot":{"brokers":[],"partitions":[]}}\n');
    expect(code).toBe(2);
    expect(JSON.parse(stderr).errors[0]).toMatchObject({ pointer: "/lines/1/now" });
  });
});
