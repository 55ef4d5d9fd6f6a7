import { describe, expect, it } from "vitest";
import {
  ClientPropertiesError,
  clientOptionsOf,
  parseProperties,
} from "../../functions/agent/client-properties.ts";

const optionsOf = (text: string, files: Record<string, string> = {}) =>
  clientOptionsOf(parseProperties(text), (path) => {
    const content = files[path];
    if (content === undefined) throw new Error(`no file ${path}`);
    return content;
  });

describe("Kafka client properties for pacer agent --command-config", () => {
  it("reads Java properties: comments, both separators, continuation lines", () => {
    const properties = parseProperties(
      "# a comment\n! another\nsecurity.protocol = SASL_SSL\nclient.id: pacer\nsasl.jaas.config=a \\\n  b\n",
    );
    expect(Object.fromEntries(properties)).toEqual({
      "security.protocol": "SASL_SSL",
      "client.id": "pacer",
      "sasl.jaas.config": "a b",
    });
  });

  it("connects in plain text with no properties", () => {
    expect(optionsOf("")).toEqual({});
  });

  it("takes SCRAM credentials from a ScramLoginModule JAAS line", () => {
    const options = optionsOf(
      [
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=SCRAM-SHA-512",
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="pacer" password="s3c\\"ret";',
      ].join("\n"),
    );
    expect(options.sasl).toEqual({ mechanism: "SCRAM-SHA-512", username: "pacer", password: 's3c"ret' });
    expect(options.tls).toBeUndefined();
  });

  it("trusts a PEM truststore file under SASL_SSL with PLAIN", () => {
    const options = optionsOf(
      [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=PLAIN",
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
        "ssl.truststore.type=PEM",
        "ssl.truststore.location=/etc/kafka/ca.pem",
      ].join("\n"),
      { "/etc/kafka/ca.pem": "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n" },
    );
    expect(options.tls?.ca).toContain("BEGIN CERTIFICATE");
    expect(options.sasl?.mechanism).toBe("PLAIN");
  });

  it.each([
    ["an unknown property", "bootstrap.servers=x:1", /unsupported client property "bootstrap.servers"/],
    ["a typo", "security.protocl=SSL", /unsupported client property "security.protocl"/],
    ["an unknown protocol", "security.protocol=TLS", /security.protocol must be one of/],
    [
      "GSSAPI",
      "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.jaas.config=x",
      /sasl.mechanism must be one of/,
    ],
    [
      "OAUTHBEARER",
      "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER",
      /sasl.mechanism must be one of/,
    ],
    ["a JKS truststore", "security.protocol=SSL\nssl.truststore.type=JKS", /only PEM is supported/],
    ["ssl.* without TLS", "ssl.truststore.location=/x", /need security.protocol SSL or SASL_SSL/],
    [
      "SASL without JAAS",
      "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN",
      /sasl.jaas.config is required/,
    ],
    [
      "a JAAS line without a password",
      'security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u";',
      /needs username="…" and password="…"/,
    ],
    ["a bad timeout", "request.timeout.ms=soon", /request.timeout.ms must be a positive integer/],
  ])("refuses %s at start", (_name, text, message) => {
    expect(() => optionsOf(text)).toThrow(ClientPropertiesError);
    expect(() => optionsOf(text)).toThrow(message);
  });
});
