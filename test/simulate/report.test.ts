import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

function pacer(args: string[]) {
  const result = spawnSync(process.execPath, ["bin/pacer.js", ...args], { encoding: "utf8" });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("pacer simulate", () => {
  it("writes a Markdown report, three SVG charts and a CSV of every run, and prints the summary", () => {
    const out = mkdtempSync(join(tmpdir(), "report-"));
    const { code, stdout } = pacer(["simulate", "worked-example", "--out", out]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/\| wait-for-sync +\| 1 +\| 19m 00s +\| 6m 00s +\| 25m 00s/);
    const report = readFileSync(join(out, "README.md"), "utf8");
    for (const chart of ["leadership.svg", "elections-per-run.svg", "gate.svg"]) {
      expect(report).toContain(`](${chart})`);
      const svg = readFileSync(join(out, chart), "utf8");
      expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      expect(svg).toMatch(/<\/svg>$/);
      expect(svg).toContain("minutes since the first run");
    }
    const csv = readFileSync(join(out, "runs.csv"), "utf8").trim().split("\n");
    expect(csv[0]).toMatch(/^config,atMs,electionCount/);
    expect(csv.length).toBe(37);
  });

  it("puts a second config beside the first with --compare", () => {
    const out = mkdtempSync(join(tmpdir(), "report-"));
    const faster = join(out, "faster.json");
    writeFileSync(faster, JSON.stringify({ "leader.imbalance.election.throttle.interval.ms": 5000 }));
    const { code, stdout } = pacer(["simulate", "worked-example", "--out", out, "--compare", faster]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/\| faster +\| 1 +\| 19m 00s +\| 2m 00s/);
  });

  it("rejects an unknown scenario and a bad comparison config with exit code 2", () => {
    expect(pacer(["simulate", "no-such-scenario", "--out", tmpdir()]).code).toBe(2);
    const out = mkdtempSync(join(tmpdir(), "report-"));
    writeFileSync(join(out, "bad.json"), JSON.stringify({ "max.per.run": 1 }));
    const bad = pacer(["simulate", "today", "--out", out, "--compare", join(out, "bad.json")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("leader.imbalance.election.max.per.run");
  });
});
