import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The end-to-end suite on real Apache Kafka clusters (devkit/kafka/cluster.ts starts one per file). Within
 * a run, files go one at a time: each starts four JVMs or more. `npm run test:kafka` (test/kafka.sh)
 * runs it in two parts side by side, which the machine allows because both spend most of their time
 * waiting on throttled replication: the matrix (every release's core checks, catch-up pacing on the
 * oldest and the newest, the scheduled worker on the newest) and the rest: the newest release's full suite, the fault suite on both modes. The
 * recovery bed, which measures a shaped link, runs last in the newest part, by then alone on the
 * machine: the matrix is done. The fault suite's ZooKeeper-mode half runs just before it, alone too:
 * beside the matrix's clusters its timing was less sure. Without PACER_KAFKA_PART a run takes every file.
 */
const MATRIX = [
  "test/kafka/compatibility.test.ts",
  "test/kafka/catch-up-throttle.test.ts",
  "test/kafka/worker.test.ts",
];
/** Run last, in this order: after the matrix part is done, each alone on the machine. */
const LAST = ["test/kafka/faults-zookeeper.test.ts", "test/kafka/recovery-bed.test.ts"];

/** Vitest's order (the longest first), with the LAST files moved to the end. */
class LastFilesLast extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const last = (f: TestSpecification) => LAST.findIndex((name) => f.moduleId.endsWith(name));
    return [
      ...sorted.filter((f) => last(f) < 0),
      ...sorted.filter((f) => last(f) >= 0).sort((a, b) => last(a) - last(b)),
    ];
  }
}

const part = process.env.PACER_KAFKA_PART as "matrix" | "newest" | undefined;

export default defineConfig({
  test: {
    include: part === "matrix" ? MATRIX : ["test/kafka/**/*.test.ts"],
    exclude: ["**/node_modules/**", ...(part === "newest" ? MATRIX : [])],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    // The scheduled worker's test (in the matrix part) needs DynamoDB Local and ElasticMQ.
    globalSetup: part === "newest" ? [] : ["test/setup/dynamodb-local.ts", "test/setup/elasticmq.ts"],
    fileParallelism: false,
    sequence: { sequencer: LastFilesLast },
    testTimeout: 600_000,
    hookTimeout: 300_000,
    reporters: ["default", ["json", { outputFile: `.test-results-kafka${part ? `-${part}` : ""}.json` }]],
  },
});
