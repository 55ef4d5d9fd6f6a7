import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  addressOf,
  bedUnavailable,
  createBed,
  destroyBed,
  shapeHost,
} from "../../devkit/recovery-bed/netns.ts";
import { measureTransfer } from "../../devkit/recovery-bed/transfer.ts";

/**
 * The recovery bench's testbed (devkit/recovery-bed/) and the bench itself, in miniature: namespaces
 * come up, a shaped link carries its set rate, and `bench:recovery --mini` runs variants 2 (Kafka's
 * balancer every 5 s), 4 (`pacer agent`), 5 (with the max-lag-bytes gate) and 6 (with catch-up pacing)
 * end to end on Apache Kafka 4.4.0. The figures of a
 * miniature mean nothing; the full bench (README) is what measures.
 */

const unavailable = bedUnavailable();
const within = (measured: number, set: number, share: number) =>
  expect(Math.abs(measured - set) / set).toBeLessThanOrEqual(share);

describe.skipIf(unavailable)(`the recovery testbed${unavailable ? ` (skipped: ${unavailable})` : ""}`, () => {
  const out = mkdtempSync(join(tmpdir(), "pacer-bed-test-"));
  afterAll(() => {
    destroyBed();
    rmSync(out, { recursive: true, force: true });
  });

  it("shapes one host's link both ways to the set rate (±20 %) and leaves the others free", async () => {
    const hosts = [
      { name: "t1", octet: 1 },
      { name: "t2", octet: 2 },
      { name: "t3", octet: 3 },
    ];
    createBed(hosts);
    try {
      shapeHost("t1", 20);
      const to = (i: number) => ({ name: `t${i}`, address: addressOf(hosts[i - 1] as (typeof hosts)[0]) });
      within(await measureTransfer("t1", to(2), 3), 20, 0.2);
      within(await measureTransfer("t2", to(1), 3), 20, 0.2);
      // Between two unshaped hosts the bridge is far faster than the shaped link.
      expect(await measureTransfer("t2", to(3), 2)).toBeGreaterThan(100);
    } finally {
      destroyBed();
    }
  });

  it("runs a miniature of variants 2, 4, 5 and 6 end to end and reports them", () => {
    const run = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "bench/recovery.ts",
        "--mini",
        "--variants",
        "2,4,5,6",
        "--rate-mbit",
        "30",
        "--out",
        out,
      ],
      { encoding: "utf8", timeout: 660_000 },
    );
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const shaping = JSON.parse(readFileSync(join(out, "shaping.json"), "utf8"));
    within(shaping.egress, 30, 0.2);
    within(shaping.ingress, 30, 0.2);
    const results = JSON.parse(readFileSync(join(out, "results.json"), "utf8"));
    expect(results.kafka).toBe("4.4.0");
    expect(results.variants.map((v: { id: number }) => v.id)).toEqual([2, 4, 5, 6]);
    for (const v of results.variants) {
      expect(v.windows.steady.count).toBeGreaterThan(1000);
      expect(v.windows.recovery.count).toBeGreaterThan(1000);
      expect(v.recoveryMs, `variant ${v.id} recovered`).not.toBeNull();
      expect(v.movesOnto, `variant ${v.id} moved leadership back`).toBeGreaterThan(0);
      expect(v.bulk.bytes).toBeGreaterThan(15_000_000);
    }
    // 4: the README's pacing; 5: with the max-lag-bytes gate, the agent reading each broker's log sizes.
    for (const agent of results.variants.filter((v: { id: number }) => v.id >= 4)) {
      expect(agent.agentErrors, `variant ${agent.id}`).toBe(0);
      expect(agent.movesWhileBehind, `variant ${agent.id}`).toBe(0);
    }
    for (const v of results.variants)
      expect(v.loadSteadyAfterMs, `variant ${v.id}'s load settled`).not.toBeNull();
    // 6: the agent throttled broker 1's catch-up while it was behind, and lifted it at the end.
    const runs = readFileSync(join(out, "agent-6.ndjson"), "utf8")
      .split("\n")
      .map((line) => JSON.parse(line) as { catchUp?: { throttled: { broker: number }[]; lifted: number[] } });
    expect(runs.some((r) => r.catchUp?.throttled.some((t) => t.broker === 1))).toBe(true);
    expect(runs.some((r) => r.catchUp?.lifted.includes(1))).toBe(true);
    expect(results.variants.find((v: { id: number }) => v.id === 6).catchUpMs).not.toBeNull();
    for (const file of [
      "p99-per-5s.csv",
      "leadership.csv",
      "link.csv",
      "isr-changes.csv",
      "unread.csv",
      "p99.svg",
      "leadership.svg",
      "tradeoff.svg",
    ])
      expect(readFileSync(join(out, file), "utf8").length).toBeGreaterThan(100);
    const table = readFileSync(join(out, "table.md"), "utf8").split("\n");
    expect(table[0]).toMatch(/^\| +\| 2\. .+ \| 4\. .+ \| 5\. .+ \| 6\. .+ \|$/);
    expect(table.find((l) => l.startsWith("| recovery P99 ms"))?.split("|").length).toBe(7);
  }, 720_000);
});
