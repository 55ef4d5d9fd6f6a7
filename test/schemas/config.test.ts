import { describe, expect, it } from "vitest";
import { ConfigOverrides, DEFAULT_CONFIG, effectiveConfig } from "../../schemas/config.ts";
import { validateWith } from "../../schemas/problems.ts";

const parse = (input: unknown) => validateWith(ConfigOverrides, input, "/config");

describe("configuration", () => {
  it("defaults reproduce today's Kafka behaviour", () => {
    expect(DEFAULT_CONFIG).toEqual({
      "auto.leader.rebalance.enable": true,
      "leader.imbalance.check.interval.seconds": 300,
      "leader.imbalance.election.algorithm": "immediate",
      "leader.imbalance.election.wait.for.sync.threshold.percent": 0,
      "leader.imbalance.election.wait.for.sync.max.wait.ms": 1_800_000,
      "leader.imbalance.election.wait.for.sync.threshold.basis": "imbalanced",
      "leader.imbalance.election.wait.for.sync.max.lag.bytes": 0,
      "leader.imbalance.election.internal.topics.last": false,
      "leader.imbalance.election.max.per.run": 1000,
      "leader.imbalance.election.throttle.interval.ms": 0,
      "pacer.catch.up.replication.throttled.rate": 0,
      "pacer.catch.up.replication.throttled.side": "follower",
      "pacer.tick.enabled": false,
      "pacer.snapshot.max.age.ms": 120_000,
    });
  });

  it("accepts Kafka's string forms as well as JSON numbers and booleans", () => {
    const result = parse({
      "auto.leader.rebalance.enable": "FALSE",
      "leader.imbalance.election.max.per.run": " 200 ",
      "leader.imbalance.election.wait.for.sync.threshold.percent": "2.5",
      "leader.imbalance.election.throttle.interval.ms": 15000,
      "leader.imbalance.election.algorithm": "wait-for-sync",
    });
    expect(result).toEqual({
      ok: true,
      value: {
        "auto.leader.rebalance.enable": false,
        "leader.imbalance.election.max.per.run": 200,
        "leader.imbalance.election.wait.for.sync.threshold.percent": 2.5,
        "leader.imbalance.election.throttle.interval.ms": 15000,
        "leader.imbalance.election.algorithm": "wait-for-sync",
      },
    });
  });

  it("names the key of a wrong type or an out-of-range value", () => {
    const result = parse({
      "leader.imbalance.election.max.per.run": 0,
      "leader.imbalance.election.wait.for.sync.threshold.percent": "101",
      "leader.imbalance.check.interval.seconds": 1.5,
      "leader.imbalance.election.algorithm": "eventually",
      "auto.leader.rebalance.enable": "yes",
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.pointer).sort()).toEqual([
      "/config/auto.leader.rebalance.enable",
      "/config/leader.imbalance.check.interval.seconds",
      "/config/leader.imbalance.election.algorithm",
      "/config/leader.imbalance.election.max.per.run",
      "/config/leader.imbalance.election.wait.for.sync.threshold.percent",
    ]);
    expect(result.problems.find((p) => p.pointer.endsWith("max.per.run"))?.detail).toMatch(
      /integer 1–2147483647/,
    );
    expect(result.problems.find((p) => p.pointer.endsWith("algorithm"))?.detail).toMatch(
      /"immediate", "wait-for-sync"/,
    );
  });

  it("rejects an unknown key and suggests the closest known name", () => {
    const result = parse({ "leader.imbalance.election.max.per.rnu": 5 });
    expect(result).toEqual({
      ok: false,
      problems: [
        {
          pointer: "/config/leader.imbalance.election.max.per.rnu",
          detail:
            'unknown key "leader.imbalance.election.max.per.rnu"; did you mean "leader.imbalance.election.max.per.run"?',
        },
      ],
    });
  });

  it("points the upstream patch's immediate.period.ms to throttle.interval.ms", () => {
    const result = parse({ "leader.imbalance.election.immediate.period.ms": 100 });
    expect(!result.ok && result.problems[0]?.detail).toContain(
      'did you mean "leader.imbalance.election.throttle.interval.ms"',
    );
  });

  it("suggests the full name for a key given without its prefix, and nothing for a name far from any", () => {
    const short = parse({ "max.wait.ms": 1 });
    expect(!short.ok && short.problems[0]?.detail).toContain(
      "leader.imbalance.election.wait.for.sync.max.wait.ms",
    );
    const far = parse({ "log.retention.hours": 1 });
    expect(!far.ok && far.problems[0]?.detail).toBe('unknown key "log.retention.hours"');
  });

  it("layers defaults, then each override in turn", () => {
    const config = effectiveConfig(
      { "leader.imbalance.election.max.per.run": 500, "leader.imbalance.election.throttle.interval.ms": 1 },
      undefined,
      { "leader.imbalance.election.max.per.run": 200 },
    );
    expect(config["leader.imbalance.election.max.per.run"]).toBe(200);
    expect(config["leader.imbalance.election.throttle.interval.ms"]).toBe(1);
    expect(config["leader.imbalance.check.interval.seconds"]).toBe(300);
  });
});
