import { defineConfig } from "vitest/config";

/**
 * The end-to-end suite on a real Apache Kafka cluster (devkit/kafka/cluster.ts starts it per file). Files
 * run one at a time: each starts four JVMs, and two clusters at once would starve each other on a
 * two-core machine.
 */
export default defineConfig({
  test: {
    include: ["test/kafka/**/*.test.ts"],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 300_000,
    reporters: ["default", ["json", { outputFile: ".test-results-kafka.json" }]],
  },
});
