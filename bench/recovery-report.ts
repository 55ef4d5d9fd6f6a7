import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { renderSvg } from "../functions/handlers/simulate-cli.ts";

/**
 * bench:recovery's report, drawn from the files a run leaves (results.json and the CSVs beside it), so
 * that a finished run's charts and table can be drawn again: `npm run bench:recovery -- --render DIR`.
 */

/** What results.json says of the run as a whole. */
export interface RunFacts {
  kafka: string;
  partitions: number;
  rateMbit: number;
  produceMb: number;
  load: { recordsPerSecond: number; recordBytes: number };
  rows: Record<string, string | number>[];
  variants: { id: number; label: string }[];
}

export const csv = (header: string[], lines: (string | number)[][]) =>
  `${[header, ...lines].map((l) => l.join(",")).join("\n")}\n`;

function readCsv(file: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(file, "utf8").trim().split("\n");
  const names = (header ?? "").split(",");
  return lines.map((line) => Object.fromEntries(line.split(",").map((cell, i) => [names[i], cell])));
}

const AXIS_SECONDS = {
  field: "seconds",
  type: "quantitative",
  title: "seconds since broker 1 was unfenced",
} as const;
const VARIANT_COLOR = {
  field: "variant",
  type: "nominal",
  title: null,
  legend: { orient: "bottom", columns: 2, labelLimit: 380 },
} as const;
const UNFENCED_RULE = {
  data: { values: [{ seconds: 0, label: "broker 1 unfenced" }] },
  layer: [
    {
      mark: { type: "rule", strokeDash: [4, 4], color: "#555" },
      encoding: { x: { field: "seconds", type: "quantitative" } },
    },
    {
      mark: { type: "text", align: "left", dx: 4, y: 8, color: "#333" },
      encoding: { x: { field: "seconds", type: "quantitative" }, text: { field: "label" } },
    },
  ],
} as const;

function latencyChart(facts: RunFacts, names: Map<string, string>, dir: string): TopLevelSpec {
  const values = readCsv(join(dir, "p99-per-5s.csv")).map((r) => ({
    seconds: Number(r.seconds_since_unfenced),
    p99: Math.max(1, Number(r.p99_ms)),
    variant: names.get(r.variant as string),
  }));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: `Producer P99 through broker 1's recovery: Apache Kafka ${facts.kafka}, ${facts.partitions.toLocaleString("en")} partitions`,
      subtitle: `acks=all, ${facts.load.recordsPerSecond} × 1 KiB/s open loop, latency from the intended send time; broker 1's link ${facts.rateMbit} Mbit/s; ${facts.produceMb} MB produced while it was down. P99 per 5 s.`,
    },
    width: 760,
    height: 320,
    layer: [
      {
        data: { values },
        mark: { type: "line", point: { size: 14 }, strokeWidth: 1.5 },
        encoding: {
          x: AXIS_SECONDS,
          y: {
            field: "p99",
            type: "quantitative",
            title: "P99 per 5 s (ms, log scale)",
            scale: { type: "log" },
          },
          color: VARIANT_COLOR,
        },
      },
      UNFENCED_RULE,
    ],
  } as TopLevelSpec;
}

function leadershipChart(facts: RunFacts, names: Map<string, string>, dir: string): TopLevelSpec {
  const shares = readCsv(join(dir, "leadership.csv")).flatMap((r) => {
    const base = { seconds: Number(r.seconds_since_unfenced), variant: names.get(r.variant as string) };
    const preferred = Number(r.preferred);
    return [
      { ...base, percent: (100 * Number(r.leads)) / preferred, measure: "led by broker 1" },
      { ...base, percent: 100 * (1 - Number(r.out_of_sync) / preferred), measure: "broker 1 in the ISR" },
    ];
  });
  const link = readCsv(join(dir, "link.csv")).map((r) => ({
    seconds: Number(r.seconds_since_unfenced),
    variant: names.get(r.variant as string),
    percent: Math.min(100, (100 * Number(r.in_mbit)) / facts.rateMbit),
  }));
  const panel = (title: string, values: object[], extra: object) => ({
    width: 760,
    height: 220,
    layer: [
      {
        data: { values },
        mark: { type: "line", interpolate: "step-after", strokeWidth: 1.5 },
        encoding: {
          x: AXIS_SECONDS,
          y: { field: "percent", type: "quantitative", title, scale: { domain: [0, 100] } },
          color: VARIANT_COLOR,
          ...extra,
        },
      },
      UNFENCED_RULE,
    ],
  });
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "Broker 1's way back: its preferred partitions, and its link",
      subtitle:
        "Top: the share of its preferred partitions it is in the ISR of (dashed) and leads (solid). Bottom: its incoming link's use, of the shaped rate, sampled each second.",
    },
    vconcat: [
      panel("% of its preferred partitions", shares, {
        strokeDash: {
          field: "measure",
          type: "nominal",
          title: null,
          scale: {
            domain: ["led by broker 1", "broker 1 in the ISR"],
            range: [
              [1, 0],
              [5, 3],
            ],
          },
          legend: { orient: "top" },
        },
      }),
      panel("% of its link, incoming", link, {}),
    ],
    resolve: { scale: { color: "shared" } },
  } as TopLevelSpec;
}

/** The rows as a Markdown table with a column per variant, padded as the formatter writes it. */
export function markdownTable(rows: Record<string, string | number>[]): string {
  const metrics = Object.keys(rows[0] ?? {}).filter((k) => k !== "variant");
  const lines = [
    ["", ...rows.map((r) => String(r.variant))],
    ...metrics.map((m) => [m, ...rows.map((r) => String(r[m]))]),
  ];
  const widths = lines[0]?.map((_, c) => Math.max(3, ...lines.map((l) => (l[c] as string).length))) ?? [];
  const line = (cells: string[]) =>
    `| ${cells.map((cell, c) => cell.padEnd(widths[c] as number)).join(" | ")} |`;
  const [head, ...body] = lines;
  return `${[line(head as string[]), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n")}\n`;
}

/** table.md, p99.svg and leadership.svg from a run's results.json and CSVs. */
export async function renderReport(dir: string): Promise<void> {
  const facts = JSON.parse(readFileSync(join(dir, "results.json"), "utf8")) as RunFacts;
  const names = new Map(facts.variants.map((v) => [String(v.id), `${v.id}. ${v.label}`]));
  writeFileSync(join(dir, "table.md"), markdownTable(facts.rows));
  writeFileSync(join(dir, "p99.svg"), await renderSvg(latencyChart(facts, names, dir)));
  writeFileSync(join(dir, "leadership.svg"), await renderSvg(leadershipChart(facts, names, dir)));
}
