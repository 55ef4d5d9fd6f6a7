import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";
import { mavenClasspath } from "../../devkit/maven.ts";
import { freePort, waitUntilListening } from "../../devkit/processes.ts";

/**
 * Starts ElasticMQ (an SQS-protocol server, from Maven Central via test/sqs/pom.xml) for the test run:
 * the tick's queue, with real delays, visibility timeouts, redelivery and dead-letter queues.
 */
export default async function setup(project: TestProject) {
  const classpath = mavenClasspath(resolve("test/sqs/pom.xml"), resolve(".elasticmq"));
  const port = await freePort();
  const config = join(mkdtempSync(join(tmpdir(), "elasticmq-")), "elasticmq.conf");
  writeFileSync(
    config,
    `include classpath("application.conf")
node-address { protocol = http, host = "127.0.0.1", port = ${port}, context-path = "" }
rest-sqs { enabled = true, bind-port = ${port}, bind-hostname = "127.0.0.1", sqs-limits = strict }
rest-stats { enabled = false }
`,
  );
  const child = spawn(
    "java",
    ["-Xmx256m", `-Dconfig.file=${config}`, "-cp", classpath, "org.elasticmq.server.Main"],
    {
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntilListening("ElasticMQ", `${endpoint}/?Action=ListQueues`, child);
  project.provide("sqsEndpoint", endpoint);
  return async () => {
    child.kill("SIGTERM");
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    sqsEndpoint: string;
  }
}
