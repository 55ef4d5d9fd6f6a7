import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { evenReplicas } from "../devkit/kafka/recovery.ts";
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
  variants: {
    id: number;
    label: string;
    unfencedAtMs?: number;
    recoveryMs: number | null;
    catchUpMs?: number | null;
    catchUpRateMbit?: number | null;
    windows?: { steady?: { p99Ms: number }; recovery?: { p99Ms: number } };
  }[];
}

/** The P99 of some latencies (sorts them), as whole ms; "" when there are none. */
const p99Text = (list: number[]) =>
  list.length ? (list.sort((a, b) => a - b)[Math.floor(0.99 * (list.length - 1))] as number).toFixed(0) : "";

/** Each record of a variant's load file: intended time (ms), latency (ms) and its topic-partition. */
function* loadRecords(dir: string, variantId: number) {
  for (const line of readFileSync(join(dir, `load-${variantId}.csv`), "utf8").split("\n")) {
    const [at, us, , where] = line.split(",");
    if (where !== undefined) yield { atMs: Number(at), latencyMs: Number(us) / 1000, where };
  }
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
  legend: { orient: "bottom", direction: "vertical", labelLimit: 0 },
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
      subtitle: [
        `acks=all, ${facts.load.recordsPerSecond} × 1 KiB/s open loop, latency from each record's intended send time, P99 per 5 s;`,
        `broker 1's link shaped to ${facts.rateMbit} Mbit/s; ${facts.produceMb} MB produced while it was down`,
      ],
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
  const withUnread = existsSync(join(dir, "unread.csv"));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: `Broker 1's way back: its preferred partitions, its link${withUnread ? ", and the producer's requests" : ""}`,
      subtitle: [
        "Top: the share of its preferred partitions it is in the ISR of, and leads; below: its incoming link's use, each second",
        ...(withUnread
          ? [
              "Bottom: the producer's request bytes received by brokers 2 and 3 and not yet read (Kafka reads a connection's",
              "next request only once it has answered the last)",
            ]
          : []),
      ],
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
          legend: { orient: "bottom", direction: "vertical" },
        },
      }),
      panel("% of its link, incoming", link, {}),
      ...(withUnread ? [unreadPanel(names, dir)] : []),
    ],
    resolve: { scale: { color: "shared" } },
  } as TopLevelSpec;
}

/** Per variant, the producer's bytes unread on the two leaders, summed, each second. */
function unreadPanel(names: Map<string, string>, dir: string) {
  const values = readCsv(join(dir, "unread.csv")).map((r) => ({
    seconds: Number(r.seconds_since_unfenced),
    variant: names.get(r.variant as string),
    kb: (Number(r.unread_bytes_on_broker_2) + Number(r.unread_bytes_on_broker_3)) / 1000,
  }));
  return {
    width: 760,
    height: 160,
    layer: [
      {
        data: { values },
        mark: { type: "line", interpolate: "step-after", strokeWidth: 1.5 },
        encoding: {
          x: AXIS_SECONDS,
          y: { field: "kb", type: "quantitative", title: "unread on the leaders (kB)" },
          color: VARIANT_COLOR,
        },
      },
      UNFENCED_RULE,
    ],
  };
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

/**
 * Which leaders' records waited, for a variant in which no leadership moves after the stop (no
 * rebalancing): each partition is led from the stop on by its first replica other than the stopped
 * broker. P99 per 10 s from unfencing, per leader, from the load file.
 */
export function stallByLeader(
  dir: string,
  facts: RunFacts,
  variantId: number,
  topics: string[],
  brokers: number[],
  stopped: number,
) {
  const unfencedAtMs = facts.variants.find((v) => v.id === variantId)?.unfencedAtMs;
  if (unfencedAtMs === undefined) return [];
  const leaderOf = (where: string) => {
    const dash = where.lastIndexOf("-");
    const replicas = evenReplicas(
      brokers,
      topics.indexOf(where.slice(0, dash)),
      Number(where.slice(dash + 1)),
    );
    return replicas.find((r) => r !== stopped) as number;
  };
  const latencies = new Map<string, number[]>();
  for (const { atMs, latencyMs, where } of loadRecords(dir, variantId)) {
    const sinceS = (atMs - unfencedAtMs) / 1000;
    if (sinceS < -10 || sinceS >= 150) continue;
    const key = `${Math.floor(sinceS / 10) * 10}|${leaderOf(where)}`;
    const list = latencies.get(key) ?? [];
    list.push(latencyMs);
    latencies.set(key, list);
  }
  const leaders = brokers.filter((b) => b !== stopped);
  const rows: Record<string, string>[] = [];
  for (let from = -10; from < 150; from += 10) {
    const row: Record<string, string> = { seconds_since_unfenced: String(from) };
    for (const leader of leaders)
      row[`p99_ms_led_by_${leader}`] = p99Text(latencies.get(`${from}|${leader}`) ?? []);
    rows.push(row);
  }
  return rows;
}

/**
 * The trade-off an operator chooses on: each variant's producer P99 over the recovery window against
 * its catch-up time (unfenced → back in every ISR, full redundancy again), one point a variant.
 */
function tradeoffChart(facts: RunFacts, names: Map<string, string>): TopLevelSpec | undefined {
  const values = facts.variants
    .filter((v) => v.catchUpMs && v.windows?.recovery)
    .map((v) => ({
      variant: names.get(String(v.id)),
      catchUpSeconds: Math.round((v.catchUpMs as number) / 1000),
      p99: Math.max(1, Math.round(v.windows?.recovery?.p99Ms ?? 0)),
      label: `${v.id}${v.catchUpRateMbit ? `: ${v.catchUpRateMbit} Mbit/s` : ""}`,
      throttled: Boolean(v.catchUpRateMbit),
    }));
  if (!values.some((v) => v.throttled)) return undefined;
  const steady = Math.min(...facts.variants.map((v) => v.windows?.steady?.p99Ms ?? Number.POSITIVE_INFINITY));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "Producer P99 through the recovery against the time to full redundancy",
      subtitle: [
        `${facts.partitions} partitions, broker 1 at ${facts.rateMbit} Mbit/s; each point a variant, labelled with its number and catch-up throttle;`,
        "the dashed line is the lowest steady P99 of the run; a variant not back in every ISR within the run is left out",
      ],
    },
    width: 720,
    height: 300,
    layer: [
      {
        data: { values },
        mark: { type: "point", filled: true, size: 90 },
        encoding: {
          x: {
            field: "catchUpSeconds",
            type: "quantitative",
            title: "catch-up time: unfenced → back in every ISR (s)",
          },
          y: {
            field: "p99",
            type: "quantitative",
            title: "producer P99 over the recovery window (ms, log)",
            scale: { type: "log" },
          },
          color: VARIANT_COLOR,
        },
      },
      {
        data: { values },
        mark: { type: "text", align: "left", dx: 8, dy: -6 },
        encoding: {
          x: { field: "catchUpSeconds", type: "quantitative" },
          y: { field: "p99", type: "quantitative", scale: { type: "log" } },
          text: { field: "label" },
        },
      },
      ...(Number.isFinite(steady)
        ? [
            {
              data: { values: [{ p99: steady }] },
              mark: { type: "rule" as const, strokeDash: [4, 4], color: "#555" },
              encoding: { y: { field: "p99", type: "quantitative" as const } },
            },
          ]
        : []),
    ],
  } as TopLevelSpec;
}

/** table.md, p99.svg and leadership.svg from a run's results.json and CSVs (and the stall's splits). */
export async function renderReport(
  dir: string,
  layout: { topics: string[]; brokers: number[]; recovering: number },
): Promise<void> {
  const facts = JSON.parse(readFileSync(join(dir, "results.json"), "utf8")) as RunFacts;
  const names = new Map(facts.variants.map((v) => [String(v.id), `${v.id}. ${v.label}`]));
  writeFileSync(join(dir, "table.md"), markdownTable(facts.rows));
  writeFileSync(join(dir, "p99.svg"), await renderSvg(latencyChart(facts, names, dir)));
  writeFileSync(join(dir, "leadership.svg"), await renderSvg(leadershipChart(facts, names, dir)));
  const tradeoff = tradeoffChart(facts, names);
  if (tradeoff) writeFileSync(join(dir, "tradeoff.svg"), await renderSvg(tradeoff));
  if (existsSync(join(dir, "isr-changes.csv")))
    writeFileSync(join(dir, "isr-split.md"), markdownTable(isrSplit(dir, facts, layout.recovering)));
  // Variant 3 moves no leadership after the stop, so its partitions' leaders are known throughout.
  if (existsSync(join(dir, "load-3.csv"))) {
    const rows = stallByLeader(dir, facts, 3, layout.topics, layout.brokers, layout.recovering);
    const header = Object.keys(rows[0] ?? {});
    writeFileSync(
      join(dir, "stall-by-leader.csv"),
      csv(
        header,
        rows.map((r) => header.map((h) => r[h] as string)),
      ),
    );
  }
}

/**
 * Where a stall comes from: the recovery window's records split by whether the recovering broker was in
 * their partition's ISR when they were due (from the load file and the ISR changes the watcher saw).
 * A record whose partition has the broker in its ISR waits for it to fetch; one whose partition has
 * not, does not — unless it shares a produce request with one that does.
 */
export function isrSplit(dir: string, facts: RunFacts, broker: number): Record<string, string>[] {
  const changes = readCsv(join(dir, "isr-changes.csv")).filter((c) => Number(c.broker) === broker);
  const rows: Record<string, string>[] = [];
  for (const variant of facts.variants) {
    if (variant.unfencedAtMs === undefined) continue;
    const unfencedAtMs = variant.unfencedAtMs;
    const byPartition = new Map<string, { atMs: number; joined: boolean }[]>();
    for (const c of changes.filter((c) => Number(c.variant) === variant.id)) {
      const key = `${c.topic}-${c.partition}`;
      const list = byPartition.get(key) ?? [];
      list.push({ atMs: unfencedAtMs + Number(c.seconds_since_unfenced) * 1000, joined: c.joined === "1" });
      byPartition.set(key, list);
    }
    // Before its first change seen, a partition had the broker in its ISR (the cluster starts whole).
    const inIsrAt = (key: string, atMs: number) =>
      (byPartition.get(key) ?? []).reduce((inIsr, c) => (c.atMs <= atMs ? c.joined : inIsr), true);
    const endMs = unfencedAtMs + (variant.recoveryMs ?? 0);
    const split = { in: [] as number[], out: [] as number[] };
    for (const { atMs, latencyMs, where } of loadRecords(dir, variant.id)) {
      if (atMs >= unfencedAtMs && atMs < endMs) split[inIsrAt(where, atMs) ? "in" : "out"].push(latencyMs);
    }
    rows.push({
      variant: String(variant.id),
      "records, broker in their ISR": String(split.in.length),
      "P99 ms, broker in their ISR": p99Text(split.in) || "–",
      "records, broker not in their ISR": String(split.out.length),
      "P99 ms, broker not in their ISR": p99Text(split.out) || "–",
    });
  }
  return rows;
}
