import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { COMPATIBILITY, releaseName } from "./versions.ts";

/**
 * `npm run compat:table`: the README's compatibility table, written from the last run's test report
 * (`.test-results-kafka-matrix.json`, vitest's JSON reporter) of test/kafka/compatibility.test.ts: per
 * release, whether each check passed and what it measured (the tests' `meta.figures`). Nothing in the
 * table is typed by hand; a release that did not run reads "not run".
 */

interface AssertionResult {
  ancestorTitles: string[];
  title: string;
  status: string;
  meta?: { figures?: Record<string, string | number> };
}

interface Report {
  startTime: number;
  testResults: { name: string; assertionResults: AssertionResult[] }[];
}

const START = "<!-- compatibility:start -->";
const END = "<!-- compatibility:end -->";

/** The checks in the order of the table's columns, each found by the start of its test's title. */
const CHECKS: { title: string; column: string; cell(f: Record<string, string | number>): string }[] = [
  {
    title: "the snapshot equals",
    column: "snapshot = `kafka-topics --describe`",
    cell: (f) =>
      `${f.partitions} partitions; brokers from ${f.brokersReadWith}, partitions from ${f.partitionsReadWith}`,
  },
  {
    title: "a broker that is down",
    column: "a stopped broker",
    cell: (f) => `${f.seenAs}; ElectLeaders onto it: ${f.electOntoIt}`,
  },
  {
    title: "ElectLeaders answers",
    column: "ElectLeaders per partition",
    cell: (f) => `${f.codes}`,
  },
  {
    title: "the agent paces a recovery",
    column: "paced recovery (moves onto the broker while behind; gated runs; back in)",
    cell: (f) => `${f.movesWhileBehind} of ${f.movesOnto}; ${f.gatedRuns} gated; ${f.recoverySeconds} s`,
  },
];

export function compatibilityTable(report: Report): string {
  const results = report.testResults
    .filter((file) => file.name.endsWith("compatibility.test.ts"))
    .flatMap((file) => file.assertionResults);
  const rows = COMPATIBILITY.map((release) => {
    const name = releaseName(release);
    const cells = CHECKS.map((check) => {
      const result = results.find((r) => r.ancestorTitles[0] === name && r.title.startsWith(check.title));
      if (!result || result.status === "skipped" || result.status === "pending") return "not run";
      if (result.status !== "passed") return `✗ ${result.status}`;
      return `✓ ${check.cell(result.meta?.figures ?? {})}`;
    });
    const mode = release.mode === "kraft" ? "KRaft" : `ZooKeeper ${release.zookeeper}`;
    return `| ${release.version} | ${mode} | ${cells.join(" | ")} |`;
  });
  const day = new Date(report.startTime).toISOString().slice(0, 10);
  return [
    `From the run of ${day} (\`npm run test:kafka\`, then \`npm run compat:table\`):`,
    "",
    `| Kafka | mode | ${CHECKS.map((c) => c.column).join(" | ")} |`,
    `|---|---|${CHECKS.map(() => "---").join("|")}|`,
    ...rows,
  ].join("\n");
}

/** `text` with what lies between the markers replaced by `table`. */
export function withTable(text: string, table: string): string {
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`the README has no ${START} … ${END} markers`);
  return `${text.slice(0, start + START.length)}\n${table}\n${text.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // The matrix part of `npm run test:kafka`, or a run of the whole suite in one part.
  const reportFile =
    process.argv[2] ??
    [".test-results-kafka-matrix.json", ".test-results-kafka.json"].find((f) => existsSync(f));
  if (!reportFile) throw new Error("no test report: run npm run test:kafka first");
  const report = JSON.parse(readFileSync(reportFile, "utf8")) as Report;
  const table = compatibilityTable(report);
  writeFileSync("README.md", withTable(readFileSync("README.md", "utf8"), table));
  // The checker formats Markdown tables; the README stays as it wants it.
  execFileSync("npx", ["biome", "format", "--write", "README.md"], { stdio: "ignore" });
  console.log(table);
}
