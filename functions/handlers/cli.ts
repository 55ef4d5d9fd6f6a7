import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { RunAnswer } from "../../schemas/answer.ts";
import { ConfigOverrides } from "../../schemas/config.ts";
import {
  type InputProblem,
  invalidInput,
  type ProblemDetails,
  pointer,
  validateWith,
} from "../../schemas/problems.ts";
import { validateEvaluateRequest } from "../../schemas/request.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { runTable } from "../format/runs.ts";
import { evaluateRequest } from "../policy/request.ts";

const USAGE = `usage:
  pacer evaluate [FILE|-] [--lines] [--explain]   one request { snapshot, config?, state?, now? } -> its answer
  pacer replay   [FILE|-] [--explain]             NDJSON { now, snapshot, config? } per line, state threaded
      --summary                                   evaluate, replay: a table, one row per run, not JSON
  pacer serve                                     the HTTP service (PORT, PACER_DATA_DIR, ...: see README)
  pacer agent --bootstrap-server H:P (--embedded | --pacer-url URL --cluster-id ID) [--help]
                                                  paces a Kafka cluster: read, decide, elect
  pacer wait --bootstrap-server H:P --broker N [--timeout 30m] [--leading 99] [--help]
                                                  exits 0 once broker N is back: in sync and leading
  pacer simulate <scenario|FILE> --out DIR [--compare CONFIG.json]
                                                  a virtual-clock recovery: report, SVG charts, CSV
Invalid input: exit code 2, an RFC 9457 problem on stderr, nothing on stdout.`;

class InputError extends Error {
  constructor(readonly problem: ProblemDetails) {
    super(problem.detail);
  }
}

function readInput(file: string | undefined): string {
  return readFileSync(file === undefined || file === "-" ? 0 : file, "utf8");
}

/** Parses JSON, or NDJSON with one value per non-blank line, reporting every line that is not JSON. */
function parseJsonLines(text: string, lines: boolean): unknown[] {
  const chunks = lines
    ? text.split("\n").flatMap((line, i) => (line.trim() === "" ? [] : [{ line, at: `/lines/${i + 1}` }]))
    : [{ line: text, at: "" }];
  const problems: InputProblem[] = [];
  const values = chunks.map(({ line, at }) => {
    try {
      return JSON.parse(line) as unknown;
    } catch (error) {
      problems.push({ pointer: at, detail: `not JSON: ${(error as Error).message}` });
      return undefined;
    }
  });
  if (problems.length > 0) throw new InputError(invalidInput(problems, "input"));
  return values;
}

/** Validates every value first, so that bad input prints nothing on stdout. */
function validateAll<T>(
  values: unknown[],
  at: (i: number) => string,
  validate: (v: unknown, base: string) => { ok: true; value: T } | { ok: false; problems: InputProblem[] },
): T[] {
  const problems: InputProblem[] = [];
  const valid = values.map((value, i) => {
    const result = validate(value, at(i));
    if (!result.ok) problems.push(...result.problems);
    return result.ok ? result.value : undefined;
  });
  if (problems.length > 0) throw new InputError(invalidInput(problems, "input"));
  return valid as T[];
}

function evaluateCommand(text: string, lines: boolean, explain: boolean): RunAnswer[] {
  const values = parseJsonLines(text, lines);
  const lineOf = (i: number) => (lines ? `/lines/${i + 1}` : "");
  const requests = validateAll(values, lineOf, validateEvaluateRequest);
  return requests.map((request) => evaluateRequest(request, { clockMs: Date.now(), explain }));
}

function validateReplayLine(value: unknown, base: string) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return {
      ok: false as const,
      problems: [{ pointer: base, detail: "expected an object { now, snapshot, config? }" }],
    };
  }
  const { now, snapshot, config, ...rest } = value as Record<string, unknown>;
  const problems: InputProblem[] = Object.keys(rest).map((key) => ({
    pointer: pointer(base, key),
    detail: `unknown key "${key}"`,
  }));
  if (typeof now !== "number" || !Number.isSafeInteger(now) || now < 0) {
    problems.push({
      pointer: pointer(base, "now"),
      detail: "now is required: the snapshot's time in epoch ms",
    });
  }
  const validSnapshot = validateSnapshot(snapshot, pointer(base, "snapshot"));
  const validConfig = validateWith(ConfigOverrides, config ?? {}, pointer(base, "config"));
  if (!validSnapshot.ok) problems.push(...validSnapshot.problems);
  if (!validConfig.ok) problems.push(...validConfig.problems);
  if (problems.length > 0 || !validSnapshot.ok || !validConfig.ok) return { ok: false as const, problems };
  return {
    ok: true as const,
    value: { nowMs: now as number, snapshot: validSnapshot.value, config: validConfig.value },
  };
}

/** A recorded series of snapshots run in order, each run handed the state the previous one left. */
function replayCommand(text: string, explain: boolean): { answers: RunAnswer[]; times: number[] } {
  const lines = validateAll(parseJsonLines(text, true), (i) => `/lines/${i + 1}`, validateReplayLine);
  let state = INITIAL_STATE;
  const answers = lines.map((line) => {
    const answer = evaluateRequest({ ...line, state }, { clockMs: line.nowMs, explain });
    state = answer.state;
    return answer;
  });
  return { answers, times: lines.map((line) => line.nowMs) };
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "agent") {
    const { agentCommand } = await import("./agent-cli.ts");
    return agentCommand(argv.slice(1));
  }
  if (argv[0] === "wait") {
    const { waitCommand } = await import("./wait-cli.ts");
    return waitCommand(argv.slice(1));
  }
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      lines: { type: "boolean", default: false },
      explain: { type: "boolean", default: false },
      summary: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
      out: { type: "string" },
      compare: { type: "string" },
    },
  });
  const [command, file] = positionals;
  if (values.help || command === undefined) {
    console.log(USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
  switch (command) {
    case "evaluate": {
      const answers = evaluateCommand(readInput(file), values.lines, values.explain);
      if (values.summary) {
        process.stdout.write(`${runTable(answers)}\n`);
        return 0;
      }
      process.stdout.write(
        `${answers.map((a) => (values.lines ? JSON.stringify(a) : JSON.stringify(a, null, 2))).join("\n")}\n`,
      );
      return 0;
    }
    case "replay": {
      const { answers, times } = replayCommand(readInput(file), values.explain);
      if (values.summary) process.stdout.write(`${runTable(answers, times)}\n`);
      else process.stdout.write(answers.map((a) => `${JSON.stringify(a)}\n`).join(""));
      return 0;
    }
    case "simulate": {
      const { simulateCommand, SimulationInputError } = await import("./simulate-cli.ts");
      try {
        return await simulateCommand(file, values.out, values.compare);
      } catch (error) {
        if (
          !(error instanceof SimulationInputError) &&
          !(error instanceof Error && error.message.startsWith("no scenario"))
        )
          throw error;
        console.error(error.message);
        return 2;
      }
    }
    case "serve": {
      const { serveFromEnvironment } = await import("./local.ts");
      await serveFromEnvironment();
      return 0;
    }
    default:
      console.error(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof InputError) {
    process.stderr.write(`${JSON.stringify(error.problem, null, 2)}\n`);
    process.exitCode = 2;
  } else if (
    (error as NodeJS.ErrnoException).code === "ENOENT" ||
    (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
  ) {
    console.error((error as Error).message);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
