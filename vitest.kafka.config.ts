import { defineConfig } from "vitest/config";

/**
 * The end-to-end suite on real Apache Kafka clusters (devkit/kafka/cluster.ts starts one per file). Within
 * a run, files go one at a time: each starts four JVMs or more. `npm run test:kafka` (test/kafka.sh)
 * runs it in two parts side by side, which the machine allows because both spend most of their time
 * waiting on throttled replication: the matrix (every release's core checks, catch-up pacing on the
 * oldest and the newest, and the fault suite's ZooKeeper-mode half, which keep the two parts of a length) and the newest release's full
 * suite (the fault suite included). The recovery bed, which measures a shaped link, is the newest
 * part's smallest file, so it runs last there, after the matrix is done. Without PACER_KAFKA_PART a run takes every file.
 */
const MATRIX = [
  "test/kafka/compatibility.test.ts",
  "test/kafka/catch-up-throttle.test.ts",
  "test/kafka/faults-zookeeper.test.ts",
];
const part = process.env.PACER_KAFKA_PART as "matrix" | "newest" | undefined;

export default defineConfig({
  test: {
    include: part === "matrix" ? MATRIX : ["test/kafka/**/*.test.ts"],
    exclude: part === "newest" ? [...MATRIX, "**/node_modules/**"] : ["**/node_modules/**"],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 300_000,
    reporters: ["default", ["json", { outputFile: `.test-results-kafka${part ? `-${part}` : ""}.json` }]],
  },
});
