import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import { ConfigOverrides } from "../../schemas/config.ts";
import { invalidInput, validateWith } from "../../schemas/problems.ts";
import { Scenario } from "../../schemas/scenario.ts";
import { electionsChart, gateChart, leadershipChart } from "../simulate/charts.ts";
import { CHART_FILES, markdownReport, runsCsv, summaryTable } from "../simulate/report.ts";
import { simulateScenario } from "../simulate/simulate.ts";
import { summarize } from "../simulate/summary.ts";

const SCENARIOS = fileURLToPath(new URL("../../scenarios/", import.meta.url));

/** A scenario by name (scenarios/<name>.json) or by path. */
function loadScenario(nameOrPath: string): Scenario {
  const path = existsSync(nameOrPath) ? nameOrPath : join(SCENARIOS, `${nameOrPath}.json`);
  if (!existsSync(path))
    throw new Error(`no scenario "${nameOrPath}": give a file or one of scenarios/*.json`);
  const result = validateWith(Scenario, JSON.parse(readFileSync(path, "utf8")));
  if (!result.ok)
    throw new SimulationInputError(JSON.stringify(invalidInput(result.problems, "scenario"), null, 2));
  return result.value;
}

export class SimulationInputError extends Error {}

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  return view.toSVG();
}

/** `pacer simulate <scenario|file> --out DIR [--compare config.json]`: writes the report, prints the summary. */
export async function simulateCommand(
  nameOrPath: string | undefined,
  out: string | undefined,
  comparePath?: string,
): Promise<number> {
  if (!nameOrPath || !out) {
    console.error("usage: pacer simulate <scenario|file> --out DIR [--compare config.json]");
    return 2;
  }
  const scenario = loadScenario(nameOrPath);
  let compare: { label: string; config: ConfigOverrides } | undefined;
  if (comparePath) {
    const config = validateWith(ConfigOverrides, JSON.parse(readFileSync(comparePath, "utf8")), "/compare");
    if (!config.ok)
      throw new SimulationInputError(
        JSON.stringify(invalidInput(config.problems, "comparison config"), null, 2),
      );
    compare = { label: basename(comparePath, ".json"), config: config.value };
  }
  const simulations = simulateScenario(scenario, compare);
  const rows = simulations.flatMap((simulation) => summarize(scenario, simulation));
  const threshold = Number(scenario.config["leader.imbalance.election.wait.for.sync.threshold.percent"] ?? 0);

  mkdirSync(out, { recursive: true });
  const title = `${scenario.name}`;
  writeFileSync(
    join(out, CHART_FILES.leadership),
    await renderSvg(leadershipChart(simulations, scenario.durationMs, title)),
  );
  writeFileSync(
    join(out, CHART_FILES.elections),
    await renderSvg(electionsChart(simulations, scenario.durationMs, title)),
  );
  writeFileSync(
    join(out, CHART_FILES.gate),
    await renderSvg(gateChart(simulations, threshold, scenario.durationMs, title)),
  );
  writeFileSync(join(out, "runs.csv"), runsCsv(simulations));
  writeFileSync(join(out, "README.md"), markdownReport(scenario, simulations, rows));
  console.log(
    `${scenario.name}: ${scenario.description}\n\n${summaryTable(rows)}\n\nreport: ${join(out, "README.md")}`,
  );
  return 0;
}
