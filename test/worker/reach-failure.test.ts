import { ProtocolError, ResponseError } from "@platformatic/kafka";
import { describe, expect, it } from "vitest";
import { BudgetExceededError, reachFailureOf } from "../../functions/api/tick-live.ts";
import { KafkaConnectError, KafkaRequestError } from "../../functions/kafka/admin.ts";
import { ConnectionSetupError } from "../../functions/kafka/connection-options.ts";

/** Why the worker could not read a cluster, in the words the last tick and the console use. */

describe("a failed read, named", () => {
  it.each([
    ["a secret missing", new ConnectionSetupError("secret … could not be read"), "setup"],
    [
      "no broker answering",
      new KafkaConnectError(["k:9092"], new Error("connect ECONNREFUSED")),
      "unreachable",
    ],
    [
      "SASL refusing the credentials",
      new KafkaConnectError(["k:9092"], new Error("SASL authentication failed.")),
      "authentication",
    ],
    [
      "a certificate not trusted",
      new KafkaConnectError(
        ["k:9092"],
        Object.assign(new Error("self-signed certificate"), { code: "SELF_SIGNED_CERT_IN_CHAIN" }),
      ),
      "tls",
    ],
    [
      "the budget running out",
      new BudgetExceededError("no answer within the worker's budget"),
      "unreachable",
    ],
    ["DescribeCluster not authorized", new KafkaRequestError("DescribeCluster", 31, null), "authorization"],
    [
      "a topic the principal may not describe",
      new ResponseError(3, 12, { "/topics/0": [29, null] }, {}),
      "authorization",
    ],
    ["a connection closed mid-read", new Error("Connection closed"), "unreachable"],
  ])("%s: %s", (_, error, reach) => {
    expect(reachFailureOf(error)).toBe(reach);
  });

  it("leaves any other failure to the job, which fails and is delivered again", () => {
    expect(reachFailureOf(new Error("the stored state does not validate"))).toBeNull();
    expect(reachFailureOf(new ProtocolError(3))).toBeNull();
  });
});
