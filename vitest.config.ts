import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The real-Kafka suite runs on its own afterwards (vitest.kafka.config.ts).
    exclude: ["test/kafka/**"],
    globalSetup: ["test/setup/dynamodb-local.ts", "test/setup/elasticmq.ts", "test/setup/chromium.ts"],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // The JSON report lets .ci/run print its one-line summary.
    // The Node 24 pass (test/node24.sh) reports to a file of its own.
    reporters: ["default", ["json", { outputFile: process.env.PACER_TEST_REPORT ?? ".test-results.json" }]],
  },
});
