import { describe, expect, it } from "vitest";
import { readinessOf, timeLeftMs } from "../../functions/agent/readiness.ts";
import type { ClusterRead } from "../../functions/agent/snapshot.ts";
import { parseDuration, progressLine } from "../../functions/handlers/wait-cli.ts";

/** Broker 2 of three prefers 10 partitions and hosts 30; it is in the ISR of `inSync` and leads `leads`. */
function cluster(options: {
  registered?: boolean;
  fenced?: boolean;
  inSync: number;
  leads: number;
}): ClusterRead {
  const partitions = Array.from({ length: 30 }, (_, i) => {
    const replicas = [1 + (i % 3), 1 + ((i + 1) % 3), 1 + ((i + 2) % 3)];
    // The first `inSync` of broker 2's 30 have it in the ISR; of those it prefers, it leads the first `leads`.
    const hostIndex = i;
    const isr = hostIndex < options.inSync ? replicas : replicas.filter((id) => id !== 2);
    const preferredIndex = replicas[0] === 2 ? Math.floor(i / 3) : -1;
    const leader =
      preferredIndex >= 0 && preferredIndex < options.leads ? 2 : (isr.find((id) => id !== 2) ?? -1);
    return { topic: "t", partition: i, replicas, isr, leader, elr: [] };
  });
  const brokers = [1, 2, 3]
    .filter((id) => id !== 2 || options.registered !== false)
    .map((id) => ({ id, fenced: id === 2 && options.fenced === true }));
  return { brokers, partitions, reassigning: [] };
}

describe("whether a restarted broker is back", () => {
  it("is ready when registered, unfenced, in every ISR and leading its share", () => {
    const r = readinessOf(cluster({ inSync: 30, leads: 10 }), 2, 99);
    expect(r).toMatchObject({
      hosted: 30,
      inSync: 30,
      preferred: 10,
      leading: 10,
      leadingNeeded: 10,
      ready: true,
    });
    expect(r.missing).toEqual([]);
    // 80 % of 10 is 8: leading 8 is enough for --leading 80.
    expect(readinessOf(cluster({ inSync: 30, leads: 8 }), 2, 80).ready).toBe(true);
  });

  it("says what is missing: registration, fencing, the ISR, the leadership", () => {
    expect(readinessOf(cluster({ registered: false, inSync: 0, leads: 0 }), 2, 99).missing).toEqual([
      "not registered (down, or still starting)",
      "out of the ISR of 30 of its 30 partitions",
      "leads 0 of its 10 preferred partitions, needs 10",
    ]);
    expect(readinessOf(cluster({ fenced: true, inSync: 0, leads: 0 }), 2, 99).missing[0]).toMatch(/^fenced/);
    expect(readinessOf(cluster({ inSync: 30, leads: 4 }), 2, 99)).toMatchObject({
      ready: false,
      missing: ["leads 4 of its 10 preferred partitions, needs 10"],
    });
  });

  it("estimates the time left from the last minute's pace, first the ISR, then the leadership", () => {
    const catching = readinessOf(cluster({ inSync: 20, leads: 0 }), 2, 99);
    // 10 rejoined in 10 s: the other 10 take 10 s more.
    expect(
      timeLeftMs(
        [
          { atMs: 0, inSync: 10, leading: 0 },
          { atMs: 10_000, inSync: 20, leading: 0 },
        ],
        catching,
      ),
    ).toBe(10_000);
    const ramping = readinessOf(cluster({ inSync: 30, leads: 4 }), 2, 99);
    // 4 in 20 s: 6 more take 30 s.
    expect(
      timeLeftMs(
        [
          { atMs: 0, inSync: 30, leading: 0 },
          { atMs: 20_000, inSync: 30, leading: 4 },
        ],
        ramping,
      ),
    ).toBe(30_000);
    expect(timeLeftMs([{ atMs: 0, inSync: 30, leading: 4 }], ramping)).toBeNull();
    expect(progressLine(ramping, 30_000)).toBe(
      "broker 2: unfenced, in sync 30 / 30, leading 4 / 10 (40.0 %), needs 10: ramping, ~0m 30s left",
    );
    // A catch-up under a replication throttle says so, and whose it is.
    const behind = readinessOf(cluster({ inSync: 20, leads: 0 }), 2, 99);
    expect(progressLine(behind, 10_000, { bytesPerSecond: 2_000_000, side: "leader" })).toBe(
      "broker 2: unfenced, in sync 20 / 30, leading 0 / 10 (0.0 %), needs 10: catching up (its leadership waits), throttled at 2.0 MB/s by its leaders, ~0m 10s left",
    );
  });

  it("reads durations as an operator writes them", () => {
    expect(["30m", "90s", "1h", "500ms", "2500"].map(parseDuration)).toEqual([
      1_800_000, 90_000, 3_600_000, 500, 2500,
    ]);
    expect(parseDuration("soon")).toBeNull();
  });
});
