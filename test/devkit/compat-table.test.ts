import { describe, expect, it } from "vitest";
import { compatibilityTable, withTable } from "../../devkit/kafka/compat-table.ts";

const result = (release: string, title: string, status: string, figures = {}) => ({
  ancestorTitles: [release],
  title,
  status,
  meta: { figures },
});

describe("the compatibility table", () => {
  const report = {
    startTime: Date.UTC(2026, 11, 6),
    testResults: [
      {
        name: "/repo/test/kafka/compatibility.test.ts",
        assertionResults: [
          result("Kafka 3.7.2 (ZooKeeper 3.8.4)", "the snapshot equals kafka-topics --describe", "passed", {
            partitions: 60,
            brokersReadWith: "Metadata",
            partitionsReadWith: "Metadata",
          }),
          result("Kafka 3.7.2 (ZooKeeper 3.8.4)", "a broker that is down is not active", "failed"),
          result("Kafka 4.4.0 (KRaft)", "the agent paces a recovery: …", "passed", {
            movesOnto: 20,
            movesWhileBehind: 0,
            gatedRuns: 9,
            recoverySeconds: 31.5,
          }),
        ],
      },
      // Another file's tests with the same titles are not the matrix's.
      {
        name: "/repo/test/kafka/agent.test.ts",
        assertionResults: [result("Kafka 3.9.1 (KRaft)", "ElectLeaders answers", "passed")],
      },
    ],
  };
  const rows = compatibilityTable(report).split("\n");
  const row = (version: string, mode: string) =>
    rows.find((r) => r.startsWith(`| ${version} | ${mode} |`))?.split(" | ") ?? [];

  it("writes each check's figures where it passed, the failure where it did not, and 'not run' otherwise", () => {
    expect(rows[0]).toContain("2026-12-06");
    expect(row("3.7.2", "ZooKeeper 3.8.4")).toEqual([
      "| 3.7.2",
      "ZooKeeper 3.8.4",
      "✓ 60 partitions; brokers from Metadata, partitions from Metadata",
      "✗ failed",
      "not run",
      "not run |",
    ]);
    expect(row("4.4.0", "KRaft")[5]).toBe("✓ 0 of 20; 9 gated; 31.5 s |");
    expect(
      row("3.9.1", "KRaft")
        .slice(2)
        .every((c) => c.startsWith("not run")),
    ).toBe(true);
  });

  it("replaces only what lies between the README's markers, and refuses a README without them", () => {
    const text = "a\n<!-- compatibility:start -->\nold\n<!-- compatibility:end -->\nb";
    expect(withTable(text, "new")).toBe(
      "a\n<!-- compatibility:start -->\nnew\n<!-- compatibility:end -->\nb",
    );
    expect(() => withTable("a", "new")).toThrow(/markers/);
  });
});
