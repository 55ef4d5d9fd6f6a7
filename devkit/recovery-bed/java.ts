import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { mavenClasspath } from "../maven.ts";

/**
 * The bed's Java side: Apache Kafka 4.4.0 and Kafka's own Java producer with HdrHistogram, from
 * Maven Central (devkit/recovery-bed/pom.xml), and the load generator compiled against them.
 */

const POM = resolve("devkit/recovery-bed/pom.xml");
const SOURCE = resolve("devkit/recovery-bed/java/RecoveryLoad.java");
const CACHE = resolve(".kafka/recovery-bed");

export const bedClasspath = () => mavenClasspath(POM, CACHE);

/** The classpath that runs `RecoveryLoad` (compiled again whenever its source changes). */
export function loadClasspath(): string {
  const jars = bedClasspath();
  const classes = join(CACHE, "classes");
  const stamp = join(CACHE, "load.stamp");
  const source = readFileSync(SOURCE, "utf8");
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== source) {
    mkdirSync(classes, { recursive: true });
    execFileSync("javac", ["-d", classes, "-cp", jars, SOURCE], { stdio: ["ignore", "inherit", "inherit"] });
    writeFileSync(stamp, source);
  }
  return `${classes}:${jars}`;
}
