import { DeleteSecretCommand, PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SecretsManagerServer, startSecretsManager } from "../../devkit/secrets-manager.ts";
import { SecretsManagerReader, secretsManagerReaderOf } from "../../functions/handlers/secrets-manager.ts";
import { ClusterConnections } from "../../functions/kafka/cluster-connections.ts";
import { ConnectionSetupError, clientOptionsOfConnection } from "../../functions/kafka/connection-options.ts";
import { mskTokenSigner } from "../../functions/kafka/msk-iam.ts";
import { ClusterConnection } from "../../schemas/connection.ts";

/**
 * A registered connection becomes the Kafka client's options, its secrets read by ARN from a Secrets
 * Manager-protocol server (moto, started here): what each secret must hold, and errors that name the
 * secret and never its value. The same options reach real Kafka in test/kafka/tls.test.ts.
 */

const CA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvtest\n-----END PRIVATE KEY-----\n";
const NOT_A_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/absent-AbCdEf";

let server: SecretsManagerServer;
beforeAll(async () => {
  server = await startSecretsManager();
}, 300_000);
afterAll(() => server?.stop());

let names = 0;
const secret = (value: string) => server.createSecret(`kafka/secret-${++names}`, value);
const optionsOf = (connection: unknown) =>
  clientOptionsOfConnection(
    ClusterConnection.parse(connection),
    secretsManagerReaderOf({ SECRETSMANAGER_ENDPOINT: server.endpoint }),
  );
const scram = (arn: string) => ({
  "bootstrap.servers": "b-1.kafka.example:9096, b-2.kafka.example:9096",
  "security.protocol": "SASL_SSL",
  "sasl.mechanism": "SCRAM-SHA-512",
  "sasl.credentials.secret.arn": arn,
  "ssl.truststore.certificates": CA,
});

describe("a registered connection as the Kafka client's options", () => {
  it("PLAINTEXT: the servers, the client id and the timeout; no secret read", async () => {
    expect(
      await optionsOf({
        "bootstrap.servers": "k1:9092,k2:9092",
        "client.id": "pacer-fleet",
        "request.timeout.ms": 5000,
      }),
    ).toEqual({ bootstrapServers: ["k1:9092", "k2:9092"], clientId: "pacer-fleet", requestTimeoutMs: 5000 });
  });

  it("SCRAM over SASL_SSL: the credentials from their secret, the CA inline", async () => {
    const options = await optionsOf(scram(await secret('{"username":"pacer","password":"s3cr3t"}')));
    expect(options).toEqual({
      bootstrapServers: ["b-1.kafka.example:9096", "b-2.kafka.example:9096"],
      tls: { ca: CA },
      sasl: { mechanism: "SCRAM-SHA-512", username: "pacer", password: "s3cr3t" },
    });
  });

  it("a client certificate: its key from a secret; the host name check off when asked", async () => {
    const options = await optionsOf({
      "bootstrap.servers": "k1:9093",
      "security.protocol": "SSL",
      "ssl.keystore.certificate.chain": CA,
      "ssl.keystore.key.secret.arn": await secret(KEY),
      "ssl.endpoint.identification.algorithm": "",
    });
    expect(options.tls).toMatchObject({ cert: CA, key: KEY });
    expect(options.tls?.checkServerIdentity?.("k1", {} as never)).toBeUndefined();
  });

  it("a secret not in its shape, or not there, is an error naming the secret, never its value", async () => {
    const cases: [string, RegExp][] = [
      [await secret("hunter2"), /is not \{"username": …, "password": …\}/],
      [await secret('{"user":"pacer","password":"hunter2"}'), /is not \{"username": …, "password": …\}/],
      [NOT_A_SECRET_ARN, /could not be read/],
    ];
    for (const [arn, why] of cases) {
      const error = await optionsOf(scram(arn)).catch((e: Error) => e);
      expect(error).toBeInstanceOf(ConnectionSetupError);
      expect((error as Error).message).toContain(`secret ${arn}`);
      expect((error as Error).message).toMatch(why);
      expect((error as Error).message).not.toContain("hunter2");
    }
  });

  it("a client key that is not a PEM key, or is encrypted (no key password is taken), is refused", async () => {
    const withKey = async (value: string) =>
      optionsOf({
        "bootstrap.servers": "k1:9093",
        "security.protocol": "SSL",
        "ssl.keystore.certificate.chain": CA,
        "ssl.keystore.key.secret.arn": await secret(value),
      }).catch((e: Error) => e.message);
    expect(await withKey("hunter2")).toMatch(/is not a PEM private key/);
    expect(
      await withKey("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----"),
    ).toMatch(/holds an encrypted key: store it unencrypted/);
  });

  it("AWS_MSK_IAM: OAUTHBEARER with a token from AWS's signer for the brokers' region, no secret read", async () => {
    const options = await clientOptionsOfConnection(
      ClusterConnection.parse({
        "bootstrap.servers": "b-1.payments.a1b2c3.c2.kafka.eu-west-1.amazonaws.com:9098",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "AWS_MSK_IAM",
      }),
      { read: () => Promise.reject(new Error("no secret is read for MSK IAM")) },
      mskTokenSigner(async () => ({ accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG" })),
    );
    expect(options.sasl?.mechanism).toBe("OAUTHBEARER");
    const token = (options.sasl as { token: () => Promise<string> }).token;
    const first = await token();
    // The signer's documented format: base64url (no padding) of a presigned kafka-cluster:Connect URL.
    expect(first).toMatch(/^[A-Za-z0-9_-]+$/);
    const url = new URL(Buffer.from(first, "base64url").toString("utf8"));
    expect(url.origin).toBe("https://kafka.eu-west-1.amazonaws.com");
    expect(url.pathname).toBe("/");
    const query = Object.fromEntries(url.searchParams);
    expect(query).toMatchObject({
      Action: "kafka-cluster:Connect",
      "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
      "X-Amz-Expires": "900",
      "X-Amz-SignedHeaders": "host",
    });
    expect(query["X-Amz-Credential"]).toMatch(/^AKIDEXAMPLE\/\d{8}\/eu-west-1\/kafka-cluster\/aws4_request$/);
    expect(query["X-Amz-Signature"]).toMatch(/^[0-9a-f]{64}$/);
    expect(query["User-Agent"]).toMatch(/^aws-msk-iam-sasl-signer-js\//);
    expect(first).not.toContain("wJalrXUtnFEMI");
  });

  it("AWS_MSK_IAM without a region in the brokers' names or the environment is a setup error", async () => {
    const region = process.env.AWS_REGION;
    delete process.env.AWS_REGION;
    try {
      await expect(
        optionsOf({
          "bootstrap.servers": "b-1.msk.example:9098",
          "security.protocol": "SASL_SSL",
          "sasl.mechanism": "AWS_MSK_IAM",
        }),
      ).rejects.toThrow(ConnectionSetupError);
    } finally {
      if (region !== undefined) process.env.AWS_REGION = region;
    }
  });
});

describe("the Secrets Manager reader", () => {
  it("reads a secret once per TTL: a warm worker's ticks do not read it every minute", async () => {
    const arn = await secret('{"username":"pacer","password":"p"}');
    let nowMs = 0;
    const reader = new SecretsManagerReader(server.client, 60_000, () => nowMs);
    expect(await reader.read(arn)).toContain("pacer");
    await server.client.send(new DeleteSecretCommand({ SecretId: arn, ForceDeleteWithoutRecovery: true }));
    nowMs = 59_000;
    expect(await reader.read(arn)).toContain("pacer");
    nowMs = 60_000;
    await expect(reader.read(arn)).rejects.toThrow();
  });

  it("reads a rotated secret at the next job once the client that used it was dropped (it failed)", async () => {
    const arn = await secret('{"username":"pacer","password":"before"}');
    const reader = new SecretsManagerReader(server.client, 60 * 60_000);
    const clients = new ClusterConnections(reader);
    await clients.clientOf("rotated", ClusterConnection.parse(scram(arn)));
    await server.client.send(
      new PutSecretValueCommand({ SecretId: arn, SecretString: '{"username":"pacer","password":"after"}' }),
    );
    expect(await reader.read(arn)).toContain("before");
    await clients.drop("rotated");
    expect(await reader.read(arn)).toContain("after");
    await clients.close();
  });

  it("reads a secret not in its shape again at the next job, not after the TTL", async () => {
    const arn = await secret("half-rotated");
    const reader = new SecretsManagerReader(server.client, 60 * 60_000);
    const clients = new ClusterConnections(reader);
    await expect(clients.clientOf("mid-rotation", ClusterConnection.parse(scram(arn)))).rejects.toThrow(
      ConnectionSetupError,
    );
    await server.client.send(
      new PutSecretValueCommand({ SecretId: arn, SecretString: '{"username":"pacer","password":"p"}' }),
    );
    expect((await clients.clientOf("mid-rotation", ClusterConnection.parse(scram(arn)))).kept).toBe(false);
    await clients.close();
  });
});
