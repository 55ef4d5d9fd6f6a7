import type { Scenario } from "../../schemas/scenario.ts";
import { type Column, formatDuration, markdownTable } from "../format/text.ts";
import type { Simulation } from "./simulate.ts";
import type { BrokerSummary } from "./summary.ts";

/** The text parts of a simulation report: the summary table, the Markdown page and the CSV of every run. */

const COLUMNS: Column<BrokerSummary>[] = [
  ["config", (r) => r.label],
  ["broker", (r) => String(r.broker)],
  ["time to release", (r) => formatDuration(r.timeToReleaseMs)],
  ["ramp window", (r) => formatDuration(r.rampWindowMs)],
  ["total recovery", (r) => formatDuration(r.totalRecoveryMs)],
  ["caught-up partitions led", (r) => formatDuration(r.caughtUpLedMs)],
  ["leads at end", (r) => `${(100 * r.finalLeadershipShare).toFixed(1)}%`],
  ["largest batch", (r) => String(r.largestBatch)],
  ["max in 15 s", (r) => String(r.largestIn15s)],
  ["max in 60 s", (r) => String(r.largestIn60s)],
  ["runs", (r) => String(r.runs)],
];

/** The summary of every recovering broker under every config. */
export function summaryTable(rows: BrokerSummary[]): string {
  return markdownTable(COLUMNS, rows);
}

export const CHART_FILES = {
  leadership: "leadership.svg",
  elections: "elections-per-run.svg",
  gate: "gate.svg",
} as const;

export function markdownReport(scenario: Scenario, simulations: Simulation[], rows: BrokerSummary[]): string {
  const configs = simulations
    .map((s) => `**${s.label}**\n\n\`\`\`json\n${JSON.stringify(s.config, null, 2)}\n\`\`\``)
    .join("\n\n");
  const restarts = scenario.restarts
    .map(
      (r) =>
        `broker ${r.broker} down at ${formatDuration(r.downAtMs)}, unfenced at ${formatDuration(r.upAtMs)}`,
    )
    .join("; ");
  return `# Recovery simulation: ${scenario.name}

${scenario.description}

- Cluster: ${scenario.cluster.brokers} brokers, ${scenario.cluster.partitionsPerBroker.toLocaleString("en")} preferred partitions each, replication factor 3.
- Restarts: ${restarts}.
- Catch-up: ${scenario.catchUp.kind}, ${JSON.stringify(scenario.catchUp)}; seed ${scenario.seed}.
- Simulated for ${formatDuration(scenario.durationMs)}; the controller sleeps each answer's \`nextDelayMs\`.

## Summary

Times are from the broker's unfencing. *Time to release*: until its first election. *Ramp window*:
first election until it leads ≥ 99% of its preferred partitions. *Total recovery*: unfenced until
≥ 99%. *Caught-up partitions led*: until it leads every preferred partition it is in sync on.
Batches count elections for every broker.

${summaryTable(rows)}

## Charts

![Leadership over time](${CHART_FILES.leadership})

![Elections per run](${CHART_FILES.elections})

![The gate](${CHART_FILES.gate})

Every run is in [runs.csv](runs.csv).

## Configuration

${configs}
`;
}

export function runsCsv(simulations: Simulation[]): string {
  const header =
    "config,atMs,electionCount,moreWorkRemains,deferred,nextDelayMs,broker,leading,preferred,outOfSync,gateTotal,elected,gated,reason";
  const rows = simulations.flatMap((s) =>
    s.runs.flatMap((run) =>
      run.brokers.map((b) =>
        [
          JSON.stringify(s.label),
          run.atMs,
          run.electionCount,
          run.moreWorkRemains,
          run.deferred ?? "",
          run.nextDelayMs,
          b.id,
          b.leading,
          b.preferred,
          b.outOfSync,
          b.gateTotal,
          b.elected,
          b.gated,
          b.reason ?? "",
        ].join(","),
      ),
    ),
  );
  return `${[header, ...rows].join("\n")}\n`;
}
