import type { TopLevelSpec } from "vega-lite";
import type { Simulation } from "./simulate.ts";

/** Vega-Lite specs of a simulated recovery; rendering them to SVG is the caller's business. */

const WIDTH = 720;

/** Every chart spans the whole simulated time, so that the three line up. */
function timeAxis(durationMs: number) {
  return {
    type: "quantitative" as const,
    title: "minutes since the first run",
    scale: { domain: [0, minutes(durationMs)], nice: false },
  };
}
const minutes = (ms: number) => Math.round((ms / 60_000) * 1000) / 1000;
function seriesName(simulation: Simulation, broker: number, many: boolean): string {
  return many ? `broker ${broker} · ${simulation.label}` : `broker ${broker}`;
}

export function leadershipChart(simulations: Simulation[], durationMs: number, title: string): TopLevelSpec {
  const many = simulations.length > 1;
  const values = simulations.flatMap((simulation) =>
    simulation.runs.flatMap((run) =>
      run.brokers.map((b) => ({
        minutes: minutes(run.atMs),
        leading: b.leading,
        series: seriesName(simulation, b.id, many),
      })),
    ),
  );
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: title, subtitle: "Preferred partitions each recovering broker leads" },
    width: WIDTH,
    height: 260,
    data: { values },
    mark: { type: "line", interpolate: "step-after", strokeWidth: 2 },
    encoding: {
      x: { field: "minutes", ...timeAxis(durationMs) },
      y: { field: "leading", type: "quantitative", title: "partitions led" },
      color: { field: "series", type: "nominal", title: null, legend: { labelLimit: 320 } },
      // Brokers paced alike draw the same line; dashes keep each one visible.
      strokeDash: { field: "series", type: "nominal", title: null },
    },
  };
}

export function electionsChart(simulations: Simulation[], durationMs: number, title: string): TopLevelSpec {
  const values = simulations.flatMap((simulation) =>
    simulation.runs
      .filter((run) => run.electionCount > 0)
      .map((run) => ({ minutes: minutes(run.atMs), elections: run.electionCount, config: simulation.label })),
  );
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: title, subtitle: "Elections per run (runs that elected nothing are left out)" },
    width: WIDTH,
    height: simulations.length > 1 ? 140 : 220,
    data: { values },
    // Thin bars: capped runs 15 s apart are 3 px apart at this width, and must not merge into a block.
    mark: { type: "bar", width: 1.5 },
    encoding: {
      x: { field: "minutes", ...timeAxis(durationMs) },
      y: { field: "elections", type: "quantitative", title: "elections", stack: null },
      color: { field: "config", type: "nominal", title: null },
      ...(simulations.length > 1 ? { row: { field: "config", type: "nominal", title: null } } : {}),
    },
  };
}

/** The gate's ratio (out of sync / its denominator) against the threshold, gated periods shaded. */
export function gateChart(
  simulations: Simulation[],
  thresholdPercent: number,
  durationMs: number,
  title: string,
): TopLevelSpec {
  const many = simulations.length > 1;
  const ratios = simulations.flatMap((simulation) =>
    simulation.runs.flatMap((run) =>
      run.brokers
        .filter((b) => b.gateTotal > 0)
        .map((b) => ({
          minutes: minutes(run.atMs),
          percent: (100 * b.outOfSync) / b.gateTotal,
          series: seriesName(simulation, b.id, many),
        })),
    ),
  );
  const gated = simulations.flatMap((simulation) =>
    simulation.runs.flatMap((run, i) =>
      run.brokers
        .filter((b) => b.gated)
        .map((b) => ({
          from: minutes(run.atMs),
          to: minutes(simulation.runs[i + 1]?.atMs ?? run.atMs + run.nextDelayMs),
          series: seriesName(simulation, b.id, many),
        })),
    ),
  );
  const x = timeAxis(durationMs);
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: title,
      subtitle: `Out-of-sync share of the gate's denominator; shaded while gated; dashed: threshold ${thresholdPercent}%`,
    },
    width: WIDTH,
    height: 240,
    layer: [
      {
        data: { values: gated },
        mark: { type: "rect", opacity: 0.18 },
        encoding: {
          x: { field: "from", ...x },
          x2: { field: "to" },
          color: { field: "series", type: "nominal", title: null, legend: { labelLimit: 320 } },
        },
      },
      {
        data: { values: ratios },
        mark: { type: "line", interpolate: "step-after", strokeWidth: 2 },
        encoding: {
          x: { field: "minutes", ...x },
          y: {
            field: "percent",
            type: "quantitative",
            title: "% out of sync (square-root scale)",
            scale: { type: "sqrt", domain: [0, 100] },
          },
          color: { field: "series", type: "nominal", title: null, legend: { labelLimit: 320 } },
          strokeDash: { field: "series", type: "nominal", title: null },
        },
      },
      {
        data: { values: [{ threshold: thresholdPercent }] },
        mark: { type: "rule", strokeDash: [6, 4], color: "#444" },
        encoding: { y: { field: "threshold", type: "quantitative" } },
      },
    ],
  };
}
