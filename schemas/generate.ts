import { readFileSync, writeFileSync } from "node:fs";
import * as z from "zod";
import { RunAnswer } from "./answer.ts";
import { ConfigOverrides } from "./config.ts";
import { ClusterConnection } from "./connection.ts";
import { ProblemDetails } from "./problems.ts";
import { Snapshot } from "./snapshot.ts";
import { PacerState } from "./state.ts";

/**
 * Writes the JSON Schema files in schemas/json from the zod schemas; with --check, exits 1 if any file
 * on disk differs from what would be written (the tests run it, so a stale file fails the build).
 */
const INPUTS = {
  config: ConfigOverrides,
  snapshot: Snapshot,
  state: PacerState,
  connection: ClusterConnection,
};
const OUTPUTS = { answer: RunAnswer, problem: ProblemDetails };

const files: Record<string, unknown> = {};
for (const [name, schema] of Object.entries(INPUTS))
  files[`${name}.schema.json`] = z.toJSONSchema(schema, { io: "input" });
for (const [name, schema] of Object.entries(OUTPUTS))
  files[`${name}.schema.json`] = z.toJSONSchema(schema, { io: "output" });

const directory = new URL("./json/", import.meta.url);
const check = process.argv.includes("--check");
const stale: string[] = [];
for (const [file, schema] of Object.entries(files)) {
  const text = `${JSON.stringify(schema, null, 2)}\n`;
  const path = new URL(file, directory);
  if (check) {
    let current = "";
    try {
      current = readFileSync(path, "utf8");
    } catch {}
    if (current !== text) stale.push(file);
  } else {
    writeFileSync(path, text);
  }
}
if (stale.length > 0) {
  console.error(`schemas/json is stale (${stale.join(", ")}): run npm run schemas`);
  process.exit(1);
}
