import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preferredPartitionsOf, snapshotOf } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer, STORE_KINDS } from "../support/stores.ts";

const SECRET_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_pacer-AbCdEf";
const CA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ==\n-----END CERTIFICATE-----\n";

const SCRAM_OVER_TLS = {
  "bootstrap.servers": "b-1.kafka.example:9096,b-2.kafka.example:9096",
  "security.protocol": "SASL_SSL",
  "sasl.mechanism": "SCRAM-SHA-512",
  "sasl.credentials.secret.arn": SECRET_ARN,
  "ssl.truststore.certificates": CA,
};
const MSK_IAM = {
  "bootstrap.servers": "b-1.msk.example:9098",
  "security.protocol": "SASL_SSL",
  "sasl.mechanism": "AWS_MSK_IAM",
};

describe.each(STORE_KINDS)("a cluster's connection on %s", (kind) => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer(kind);
  });
  afterAll(() => server.close());

  const url = (clusterId: string) => `${server.url}/v1/clusters/${clusterId}/connection`;
  const put = (clusterId: string, body: unknown) => call(url(clusterId), { method: "PUT", body });

  it("is 404 until registered, then holds what was registered, with the defaults filled in", async () => {
    expect((await call(url("scram"))).status).toBe(404);
    const written = await put("scram", SCRAM_OVER_TLS);
    expect(written.status).toBe(200);
    expect(written.json).toEqual(SCRAM_OVER_TLS);
    expect((await call(url("scram"))).json).toEqual(SCRAM_OVER_TLS);
    expect((await put("plain", { "bootstrap.servers": "kafka:9092" })).json).toEqual({
      "bootstrap.servers": "kafka:9092",
      "security.protocol": "PLAINTEXT",
    });
    expect((await put("msk", MSK_IAM)).status).toBe(200);
  });

  it.each([
    ["no bootstrap servers", { "security.protocol": "PLAINTEXT" }, "/bootstrap.servers"],
    ["a server without a port", { "bootstrap.servers": "kafka" }, "/bootstrap.servers"],
    ["SASL without a mechanism", { ...SCRAM_OVER_TLS, "sasl.mechanism": undefined }, "/sasl.mechanism"],
    [
      "SCRAM without its secret",
      { ...SCRAM_OVER_TLS, "sasl.credentials.secret.arn": undefined },
      "/sasl.credentials.secret.arn",
    ],
    ["MSK IAM over plaintext", { ...MSK_IAM, "security.protocol": "SASL_PLAINTEXT" }, "/security.protocol"],
    [
      "MSK IAM with a secret",
      { ...MSK_IAM, "sasl.credentials.secret.arn": SECRET_ARN },
      "/sasl.credentials.secret.arn",
    ],
    [
      "a secret that is not a Secrets Manager ARN",
      { ...SCRAM_OVER_TLS, "sasl.credentials.secret.arn": "pacer-password" },
      "/sasl.credentials.secret.arn",
    ],
    [
      "a CA that is not PEM",
      { ...SCRAM_OVER_TLS, "ssl.truststore.certificates": "/etc/kafka/ca.pem" },
      "/ssl.truststore.certificates",
    ],
    [
      "TLS settings on a plaintext connection",
      { "bootstrap.servers": "kafka:9092", "ssl.truststore.certificates": CA },
      "/ssl.truststore.certificates",
    ],
    [
      "a client certificate without its key",
      { ...SCRAM_OVER_TLS, "ssl.keystore.certificate.chain": CA },
      "/ssl.keystore.key.secret.arn",
    ],
  ])("answers 400 naming the field for %s, and stores nothing", async (_name, body, pointer) => {
    const reply = await put("bad-input", body);
    expect(reply.status).toBe(400);
    expect(reply.json.type).toBe("/problems/invalid-input");
    expect(reply.json.detail).toMatch(/^The connection has \d problems?: /);
    expect(reply.json.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    expect((await call(url("bad-input"))).status).toBe(404);
  });

  it.each([
    [
      "sasl.jaas.config",
      'org.apache.kafka.common.security.scram.ScramLoginModule required password="hunter2";',
    ],
    ["ssl.keystore.key", "-----BEGIN PRIVATE KEY-----\nhunter2\n-----END PRIVATE KEY-----"],
    ["ssl.key.password", "hunter2"],
  ])(
    "refuses the secret %s given inline, says what to give instead, and keeps it nowhere",
    async (name, value) => {
      await put("inline", MSK_IAM);
      const reply = await put("inline", { ...SCRAM_OVER_TLS, [name]: value });
      expect(reply.status).toBe(400);
      expect(reply.json.errors).toContainEqual(
        expect.objectContaining({
          pointer: `/${name}`,
          detail: expect.stringMatching(/secrets are never stored: give/),
        }),
      );
      expect(JSON.stringify(reply.json)).not.toContain("hunter2");
      // The earlier connection stands, and no listing or view holds the secret.
      expect((await call(url("inline"))).json).toEqual(MSK_IAM);
      for (const path of ["/v1/clusters", "/v1/clusters/inline", "/v1/clusters/inline/connection"])
        expect(JSON.stringify((await call(`${server.url}${path}`)).json ?? "")).not.toContain("hunter2");
    },
  );

  it("is forgotten with DELETE, and with the cluster's removal from the fleet", async () => {
    await put("forget", MSK_IAM);
    expect((await call(url("forget"), { method: "DELETE" })).status).toBe(204);
    expect((await call(url("forget"))).status).toBe(404);
    expect((await call(url("forget"), { method: "DELETE" })).status).toBe(404);

    await call(`${server.url}/v1/clusters/removed/config`, { method: "PUT", body: {} });
    await put("removed", MSK_IAM);
    expect((await call(`${server.url}/v1/clusters/removed`, { method: "DELETE" })).status).toBe(204);
    expect((await call(url("removed"))).status).toBe(404);
  });

  it("makes the service the cluster's only actor: an agent's run or snapshot is refused until it is removed", async () => {
    const cluster = `${server.url}/v1/clusters/worker-paced`;
    const caughtUp = snapshotOf(preferredPartitionsOf(1, 10));
    await call(`${cluster}/config`, { method: "PUT", body: { "pacer.tick.enabled": true } });
    await put("worker-paced", MSK_IAM);
    const before = (await call(cluster)).json;

    for (const [path, method] of [
      ["evaluate", "POST"],
      ["snapshot", "PUT"],
    ] as const) {
      const refused = await call(`${cluster}/${path}`, {
        method,
        body: path === "evaluate" ? { snapshot: caughtUp } : caughtUp,
      });
      expect(refused.status).toBe(409);
      expect(refused.json.type).toBe("/problems/cluster-connected");
      expect(refused.json.detail).toContain("DELETE /v1/clusters/worker-paced/connection");
    }
    // A dry run acts on nothing and changes nothing: still answered.
    const dryRun = await call(`${cluster}/evaluate?dryRun=true`, { body: { snapshot: caughtUp } });
    expect(dryRun.status).toBe(200);
    expect(dryRun.json.elections).toHaveLength(10);
    expect((await call(cluster)).json).toEqual(before);

    expect((await call(url("worker-paced"), { method: "DELETE" })).status).toBe(204);
    expect((await call(`${cluster}/snapshot`, { method: "PUT", body: caughtUp })).status).toBe(200);
    expect((await call(`${cluster}/evaluate`, { body: { snapshot: caughtUp } })).status).toBe(200);
  });

  it("is served to GET, PUT and DELETE only", async () => {
    const reply = await call(url("methods"), { method: "POST", body: {} });
    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe("GET, PUT, DELETE");
  });
});
