import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildLambdaBundle, LAMBDA_HANDLERS } from "../../infra/bundling.ts";

/**
 * Each Lambda bundle, built with the stack's options, loads in a fresh Node process from a folder with
 * no node_modules, as on Lambda: a dependency that reads a file beside its own module (the Kafka
 * client's WebAssembly) fails only there, at the first cold start, not at synth.
 */

const out = mkdtempSync(join(tmpdir(), "pacer-bundle-load-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("the Lambda bundles", () => {
  it.each(Object.entries(LAMBDA_HANDLERS))("%s loads with nothing beside it", async (name, file) => {
    const outfile = join(out, name, "index.mjs");
    await buildLambdaBundle(file, outfile);
    const exported = execFileSync(
      process.execPath,
      ["-e", `import(${JSON.stringify(outfile)}).then((m) => console.log(typeof m.handler))`],
      { cwd: out, encoding: "utf8" },
    );
    expect(exported.trim()).toBe("function");
  });
});
