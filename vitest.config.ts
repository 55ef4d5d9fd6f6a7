import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    // The JSON report lets .ci/run print its one-line summary.
    reporters: ["default", ["json", { outputFile: ".test-results.json" }]],
  },
});
