import { execFileSync } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildLambdaBundle, LAMBDA_HANDLERS } from "../infra/bundling.ts";

/**
 * The Lambda bundles as the stack builds them: their minified size (target ≤ 1 MB) and the API bundle's
 * cold import time in a fresh Node process (target ≤ 150 ms), from a folder with no node_modules, as on
 * Lambda.
 */
const IMPORT_ROUNDS = 7;
const out = mkdtempSync(join(tmpdir(), "pacer-bundles-"));
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const rows = [];
for (const [name, file] of Object.entries(LAMBDA_HANDLERS)) {
  const outfile = join(out, name, "index.mjs");
  await buildLambdaBundle(file, outfile);
  const importMs = Array.from({ length: IMPORT_ROUNDS }, () =>
    Number(
      execFileSync(
        process.execPath,
        [
          "-e",
          `const t = performance.now(); import(${JSON.stringify(outfile)}).then(() => console.log(performance.now() - t))`,
        ],
        { cwd: out, encoding: "utf8" },
      ),
    ),
  );
  const bytes = statSync(outfile).size;
  rows.push({
    lambda: name,
    "minified KB": Math.round(bytes / 1024),
    "cold import ms (median)": Math.round(median(importMs)),
  });
}
console.table(rows);
const api = rows.find((row) => row.lambda === "Api");
const largest = Math.max(...rows.map((row) => row["minified KB"]));
console.log(`largest bundle ${largest} KB (target ≤ 1024 KB): ${largest <= 1024 ? "met" : "MISSED"}`);
console.log(
  `API cold import ${api?.["cold import ms (median)"]} ms (target ≤ 150 ms): ${(api?.["cold import ms (median)"] ?? Infinity) <= 150 ? "met" : "MISSED"}`,
);
