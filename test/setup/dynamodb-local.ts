import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";
import { freePort, waitUntilListening } from "../../devkit/processes.ts";

/**
 * Starts AWS's DynamoDB Local (the jar inside the npm package amplify-dynamodb-simulator) on Java for the
 * test run. The jar is fetched with `npm pack` once and kept in .dynamodb-local/.
 */
const PACKAGE = "amplify-dynamodb-simulator@2.9.30";
const HOME = resolve(".dynamodb-local");
const JAR = join(HOME, "DynamoDBLocal.jar");

function fetchDynamoDbLocal(): void {
  if (existsSync(JAR)) return;
  const scratch = mkdtempSync(join(tmpdir(), "dynamodb-local-"));
  try {
    execFileSync("npm", ["pack", PACKAGE, "--pack-destination", scratch, "--silent"], { stdio: "inherit" });
    const tarball = readdirSync(scratch).find((f) => f.endsWith(".tgz"));
    if (!tarball) throw new Error(`npm pack ${PACKAGE} produced no tarball`);
    mkdirSync(HOME, { recursive: true });
    execFileSync("tar", [
      "-xzf",
      join(scratch, tarball),
      "-C",
      HOME,
      "--strip-components=2",
      "package/emulator",
    ]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export default async function setup(project: TestProject) {
  fetchDynamoDbLocal();
  const port = await freePort();
  const child = spawn(
    "java",
    [
      `-Djava.library.path=${join(HOME, "DynamoDBLocal_lib")}`,
      "-jar",
      JAR,
      "-inMemory",
      "-port",
      String(port),
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntilListening("DynamoDB Local", endpoint, child);
  project.provide("dynamodbLocalEndpoint", endpoint);
  return async () => {
    child.kill("SIGTERM");
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    dynamodbLocalEndpoint: string;
  }
}
