import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The end-to-end suite on real Apache Kafka clusters (devkit/kafka/cluster.ts starts one per file). Within
 * a run, files go one at a time: each starts four JVMs or more. `npm run test:kafka` (test/kafka.sh)
 * runs it in two parts side by side, which the machine allows because both spend most of their time
 * waiting on throttled replication: the matrix (every release's core checks, catch-up pacing on the
 * oldest and the newest) and the newest release's full suite (the fault suite on KRaft included). The
 * recovery bed, which measures a shaped link, runs last in the newest part, by then alone on the
 * machine: the matrix is done. The fault suite's ZooKeeper-mode half runs only with FAULTS_ZOOKEEPER=1
 * (`npm run test:faults` sets it): beside the other part's clusters it has failed on timing (see the
 * README). Without PACER_KAFKA_PART a run takes every other file.
 */
const MATRIX = ["test/kafka/compatibility.test.ts", "test/kafka/catch-up-throttle.test.ts"];
const ZOOKEEPER_FAULTS = "test/kafka/faults-zookeeper.test.ts";

/** Vitest's order (the longest first), with the recovery bed moved to the end. */
class RecoveryBedLast extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const isBed = (f: TestSpecification) => f.moduleId.endsWith("recovery-bed.test.ts");
    return [...sorted.filter((f) => !isBed(f)), ...sorted.filter(isBed)];
  }
}

const part = process.env.PACER_KAFKA_PART as "matrix" | "newest" | undefined;

export default defineConfig({
  test: {
    include: part === "matrix" ? MATRIX : ["test/kafka/**/*.test.ts"],
    exclude: [
      "**/node_modules/**",
      ...(part === "newest" ? MATRIX : []),
      ...(process.env.FAULTS_ZOOKEEPER === "1" ? [] : [ZOOKEEPER_FAULTS]),
    ],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    fileParallelism: false,
    sequence: { sequencer: RecoveryBedLast },
    testTimeout: 600_000,
    hookTimeout: 300_000,
    reporters: ["default", ["json", { outputFile: `.test-results-kafka${part ? `-${part}` : ""}.json` }]],
  },
});
