import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The classpath of the jars a POM names, resolved by Maven from Maven Central the first time (and
 * whenever the POM or the properties change) and kept in `cacheDir`. `properties` are passed to Maven as
 * `-Dname=value`, e.g. another version of what the POM names.
 */
export function mavenClasspath(
  pomPath: string,
  cacheDir: string,
  properties: Record<string, string> = {},
): string {
  const classpathFile = join(cacheDir, "classpath.txt");
  const stamp = join(cacheDir, "pom.stamp");
  const defines = Object.entries(properties).map(([name, value]) => `-D${name}=${value}`);
  const pom = `${readFileSync(pomPath, "utf8")}${defines.join("\n")}`;
  const fresh =
    existsSync(classpathFile) &&
    existsSync(stamp) &&
    readFileSync(stamp, "utf8") === pom &&
    readFileSync(classpathFile, "utf8")
      .split(":")
      .every((jar) => existsSync(jar));
  if (!fresh) {
    mkdirSync(cacheDir, { recursive: true });
    execFileSync(
      "mvn",
      [
        "-q",
        "-B",
        "-f",
        pomPath,
        "dependency:build-classpath",
        `-Dmdep.outputFile=${classpathFile}`,
        "-Dstyle.color=never",
        ...defines,
      ],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    writeFileSync(stamp, pom);
  }
  return readFileSync(classpathFile, "utf8").trim();
}
