import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import type { TestProject } from "vitest/node";

/**
 * The browser the console tests drive: Debian's Chromium, installed with apt-get when it is missing
 * (as root, or through passwordless sudo). Playwright's own browser download is never used.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function install(): void {
  const root = process.getuid?.() === 0;
  const run = (args: string[]) =>
    execFileSync(root ? args[0]! : "sudo", root ? args.slice(1) : ["-n", ...args], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  run(["apt-get", "update", "-qq"]);
  run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"]);
}

export default function setup(project: TestProject) {
  if (!existsSync(CHROMIUM)) install();
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} after apt-get install chromium`);
  project.provide("chromiumPath", CHROMIUM);
}

declare module "vitest" {
  export interface ProvidedContext {
    chromiumPath: string;
  }
}
