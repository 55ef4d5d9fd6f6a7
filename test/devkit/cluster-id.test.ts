import { describe, expect, it } from "vitest";
import { newClusterId } from "../../devkit/kafka/cluster.js";

describe("a test cluster's id", () => {
  it("is 22 base64url characters and never starts with '-', which kafka-storage would read as an option", () => {
    // One id in 64 would start with "-" if drawn plainly: 2,000 draws miss that with odds of 1 in 10^13.
    for (let i = 0; i < 2000; i++) {
      const id = newClusterId();
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    }
  });
});
