import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCertificates, type TestCertificates } from "../../devkit/kafka/certificates.ts";
import { KafkaCluster } from "../../devkit/kafka/cluster.ts";
import { createEvenTopics, readPartitions, waitFor } from "../../devkit/kafka/recovery.ts";
import { spawnPacer } from "../../devkit/processes.ts";
import { type SecretsManagerServer, startSecretsManager } from "../../devkit/secrets-manager.ts";
import { secretsManagerReaderOf } from "../../functions/handlers/secrets-manager.ts";
import { KafkaAdminClient, KafkaConnectError } from "../../functions/kafka/admin.ts";
import { clientOptionsOfConnection } from "../../functions/kafka/connection-options.ts";
import type { MskTokenSigner } from "../../functions/kafka/msk-iam.ts";
import { ClusterConnection } from "../../schemas/connection.ts";

/**
 * The agent over TLS on a real Kafka cluster (the newest release), with certificates the test makes
 * with openssl: SSL with the host name checked and not, SASL_SSL with SCRAM-SHA-512, a listener that
 * requires a client certificate, and the failures an operator meets first (a wrong CA, an expired
 * certificate, a name the certificate does not carry), each of which must stop the agent at start
 * with a message naming TLS and the cause, having elected nothing.
 */

const TOPICS = ["orders", "payments"];
const USER = { username: "pacer", password: "pacer-secret" };
let cluster: KafkaCluster;
let scratch: string;
let certs: TestCertificates;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "pacer-tls-"));
  certs = makeCertificates(join(scratch, "certs"));
  const listener = (
    name: string,
    keystore: string,
    more: { protocol?: "SASL_SSL"; clientAuth?: boolean } = {},
  ) => ({
    name,
    protocol: more.protocol ?? ("SSL" as const),
    keystore,
    truststore: certs.ca,
    clientAuth: more.clientAuth,
  });
  cluster = await KafkaCluster.start({
    brokers: 3,
    saslUser: USER,
    tlsListeners: [
      listener("SSL", certs.brokerStore),
      listener("SASL_SSL", certs.brokerStore, { protocol: "SASL_SSL" }),
      listener("MTLS", certs.brokerStore, { clientAuth: true }),
      listener("NOSAN", certs.brokerNoSanStore),
      listener("EXPIRED", certs.brokerExpiredStore),
    ],
  });
  await createEvenTopics(cluster, TOPICS, 10);
});

afterAll(async () => {
  await cluster?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A client properties file, as an operator writes it for Kafka's own tools. */
function commandConfig(name: string, lines: string[]): string {
  const file = join(scratch, `${name}.properties`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

async function agentOver(listener: string, config: string, ...more: string[]) {
  const run = spawnPacer([
    "agent",
    "--bootstrap-server",
    cluster.tlsBootstrapServers(listener),
    "--command-config",
    config,
    "--embedded",
    "--data-dir",
    join(scratch, `data-${listener}`),
    "--cluster-id",
    listener.toLowerCase(),
    ...more,
  ]);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

const trusting = (ca: string) => [
  "security.protocol=SSL",
  "ssl.truststore.type=PEM",
  `ssl.truststore.location=${ca}`,
];

const ledBy = async (id: number) =>
  (await readPartitions(cluster)).filter((p) => TOPICS.includes(p.topic) && p.leader === id).length;

describe("the agent over TLS", () => {
  it("reads over SSL with the broker's host name checked against its certificate (127.0.0.1 in its SAN)", async () => {
    const run = await agentOver("SSL", commandConfig("ssl", trusting(certs.ca)), "--once", "--dry-run");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/asked 0 \(dry run: nothing elected\)/);
  });

  it("authenticates with SASL SCRAM-SHA-512 over SASL_SSL", async () => {
    const config = commandConfig("sasl-ssl", [
      "security.protocol=SASL_SSL",
      "sasl.mechanism=SCRAM-SHA-512",
      `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${USER.username}" password="${USER.password}";`,
      "ssl.truststore.type=PEM",
      `ssl.truststore.location=${certs.ca}`,
    ]);
    const run = await agentOver("SASL_SSL", config, "--once", "--dry-run");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });

  it("with a client certificate (ssl.client.auth=required) reads and elects; without one it stops at start", async () => {
    // Broker 2 bounced: it comes back leading none of its preferred partitions.
    await cluster.stopBroker(2, "SIGTERM");
    await cluster.startBroker(2);
    await waitFor(
      async () =>
        (await readPartitions(cluster)).every((p) => p.isr.length === p.replicas.length) ? true : undefined,
      60_000,
      "broker 2 back in every ISR",
    );
    expect(await ledBy(2)).toBe(0);

    const without = await agentOver("MTLS", commandConfig("mtls-none", trusting(certs.ca)), "--once");
    expect(without.code).toBe(1);
    // The broker's refusal comes as an alert after the client's side of the handshake: the call in
    // flight only sees the connection closed, and the reason is the socket's error.
    expect(without.stderr).toMatch(/TLS handshake failed: .*alert bad certificate.*; nothing elected/s);
    expect(await ledBy(2)).toBe(0);

    const config = commandConfig("mtls", [
      ...trusting(certs.ca),
      "ssl.keystore.type=PEM",
      `ssl.keystore.location=${certs.clientStore}`,
    ]);
    const run = await agentOver("MTLS", config, "--once");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/asked (\d+), done \1, not needed 0, failed 0/);
    expect(await ledBy(2)).toBeGreaterThan(0);
  });

  it("checks the host name by default, and not with ssl.endpoint.identification.algorithm empty", async () => {
    const checked = await agentOver(
      "NOSAN",
      commandConfig("nosan", trusting(certs.ca)),
      "--once",
      "--dry-run",
    );
    expect(checked.code).toBe(1);
    expect(checked.stderr).toMatch(/TLS.*(host name|altnames|127\.0\.0\.1)/i);
    const unchecked = await agentOver(
      "NOSAN",
      commandConfig("nosan-unchecked", [...trusting(certs.ca), "ssl.endpoint.identification.algorithm="]),
      "--once",
      "--dry-run",
    );
    expect(unchecked.stderr).toBe("");
    expect(unchecked.code).toBe(0);
  });

  it.each([
    [
      "a CA that did not sign the broker's certificate",
      "SSL",
      () => certs.otherCa,
      /TLS.*(verify|self-signed|issuer)/i,
    ],
    ["an expired broker certificate", "EXPIRED", () => certs.ca, /TLS.*expired/i],
  ])(
    "stops at start, naming TLS and the cause, with %s (and elects nothing)",
    async (_, listener, ca, message) => {
      const before = await readPartitions(cluster);
      // Without --once: a wrong CA will not fix itself, so the agent does not retry it forever.
      const run = await agentOver(listener, commandConfig(`bad-${listener}`, trusting(ca())));
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe("");
      const after = await readPartitions(cluster);
      expect(after.map((p) => p.leader)).toEqual(before.map((p) => p.leader));
    },
  );
});

/**
 * A cluster registered with `PUT /v1/clusters/{id}/connection`, reached the way the scheduled worker
 * is to reach it: its secrets read from a Secrets Manager-protocol server (moto) by their ARNs.
 */
describe("a registered connection, its secrets in Secrets Manager", () => {
  let secretsManager: SecretsManagerServer;
  beforeAll(async () => {
    secretsManager = await startSecretsManager();
  }, 300_000);
  afterAll(() => secretsManager?.stop());

  const secret = (name: string, value: string) => secretsManager.createSecret(name, value);

  /** Brokers the connection's client reads, or the error it stops with. */
  async function brokersOver(
    connection: unknown,
    signMskToken?: MskTokenSigner,
  ): Promise<number[] | KafkaConnectError> {
    const options = await clientOptionsOfConnection(
      ClusterConnection.parse(connection),
      secretsManagerReaderOf({ SECRETSMANAGER_ENDPOINT: secretsManager.endpoint }),
      signMskToken,
    );
    const kafka = new KafkaAdminClient(options);
    try {
      return (await kafka.describeCluster()).brokers.map((b) => b.id).sort();
    } catch (error) {
      if (error instanceof KafkaConnectError) return error;
      throw error;
    } finally {
      await kafka.close();
    }
  }

  it("SCRAM-SHA-512 over SASL_SSL: the credentials from their secret; a wrong password stops at authentication", async () => {
    const sasl = (arn: string) => ({
      "bootstrap.servers": cluster.tlsBootstrapServers("SASL_SSL"),
      "security.protocol": "SASL_SSL",
      "sasl.mechanism": "SCRAM-SHA-512",
      "sasl.credentials.secret.arn": arn,
      "ssl.truststore.certificates": readFileSync(certs.ca, "utf8"),
    });
    expect(await brokersOver(sasl(await secret("kafka/pacer", JSON.stringify(USER))))).toEqual([1, 2, 3]);
    const wrong = await brokersOver(
      sasl(await secret("kafka/pacer-wrong", JSON.stringify({ ...USER, password: "not-it" }))),
    );
    expect(wrong).toBeInstanceOf(KafkaConnectError);
    expect((wrong as KafkaConnectError).kind).toBe("authentication");
    expect((wrong as KafkaConnectError).message).not.toContain("not-it");
  });

  it("a client certificate whose key is a secret, on a listener that requires one", async () => {
    const store = readFileSync(certs.clientStore, "utf8");
    const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/.exec(store)?.[0] as string;
    const chain = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(store)?.[0] as string;
    const brokers = await brokersOver({
      "bootstrap.servers": cluster.tlsBootstrapServers("MTLS"),
      "security.protocol": "SSL",
      "ssl.truststore.certificates": readFileSync(certs.ca, "utf8"),
      "ssl.keystore.certificate.chain": chain,
      "ssl.keystore.key.secret.arn": await secret("kafka/pacer-client-key", key),
    });
    expect(brokers).toEqual([1, 2, 3]);
  });

  it("AWS_MSK_IAM speaks OAUTHBEARER: a token Kafka's validator accepts reads the cluster, one it refuses stops at authentication", async () => {
    // MSK checks its signed URL; this Kafka's unsecured validator takes an unsigned JWT instead, so
    // the signer is swapped for one that makes such a token. The SASL exchange is Kafka's own.
    const unsignedJwt = async () => {
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
      const nowSeconds = Math.floor(Date.now() / 1000);
      return `${part({ alg: "none" })}.${part({ sub: "pacer", iat: nowSeconds, exp: nowSeconds + 900 })}.`;
    };
    const msk = {
      "bootstrap.servers": cluster.tlsBootstrapServers("SASL_SSL"),
      "security.protocol": "SASL_SSL",
      "sasl.mechanism": "AWS_MSK_IAM",
      "ssl.truststore.certificates": readFileSync(certs.ca, "utf8"),
    };
    const region = process.env.AWS_REGION;
    process.env.AWS_REGION = "us-east-1"; // no region in 127.0.0.1: the function's own is used
    try {
      expect(await brokersOver(msk, unsignedJwt)).toEqual([1, 2, 3]);
      const refused = await brokersOver(msk, async () => "not-a-token");
      expect(refused).toBeInstanceOf(KafkaConnectError);
      expect((refused as KafkaConnectError).kind).toBe("authentication");
    } finally {
      if (region === undefined) delete process.env.AWS_REGION;
      else process.env.AWS_REGION = region;
    }
  });
});
