import type { ClusterConnection } from "../../schemas/connection.ts";
import { tlsOptionsOf } from "../agent/client-properties.ts";
import type { KafkaClientOptions } from "./admin.ts";
import { type MskTokenSigner, mskRegionOf, mskTokenSigner } from "./msk-iam.ts";

/**
 * A registered connection (`PUT /v1/clusters/{id}/connection`) as the Kafka client's options. Its
 * secrets are stored only as references, and read here, at the moment of use: the SASL credentials
 * from a secret whose value is `{"username": …, "password": …}`, the client certificate's key from a
 * secret whose value is the PEM. An error names the secret's ARN and what is wrong with it, never
 * its value.
 */

/** Reads a secret's value by its ARN: Secrets Manager in the stack, a Secrets Manager-protocol server in tests. */
export interface SecretReader {
  read(arn: string): Promise<string>;
  /** Reads it anew next time, where the reader keeps values: a client that failed may hold a rotated-away secret. */
  forget?(arn: string): void;
}

/** The secrets a registered connection refers to. */
export function secretArnsOf(connection: ClusterConnection): string[] {
  return [connection["sasl.credentials.secret.arn"], connection["ssl.keystore.key.secret.arn"]].filter(
    (arn): arn is string => arn !== undefined,
  );
}

/** A connection that cannot be made from what is registered: a secret missing or not in its shape. */
export class ConnectionSetupError extends Error {}

export async function clientOptionsOfConnection(
  connection: ClusterConnection,
  secrets: SecretReader,
  signMskToken: MskTokenSigner = mskTokenSigner(),
): Promise<KafkaClientOptions> {
  const protocol = connection["security.protocol"];
  const options: KafkaClientOptions = {
    bootstrapServers: connection["bootstrap.servers"].split(",").map((s) => s.trim()),
  };
  if (connection["client.id"]) options.clientId = connection["client.id"];
  if (connection["request.timeout.ms"]) options.requestTimeoutMs = connection["request.timeout.ms"];
  if (protocol === "SSL" || protocol === "SASL_SSL") {
    const ca = connection["ssl.truststore.certificates"];
    const cert = connection["ssl.keystore.certificate.chain"];
    const keyArn = connection["ssl.keystore.key.secret.arn"];
    const key = keyArn ? privateKeyOf(await read(secrets, keyArn), keyArn) : undefined;
    options.tls = tlsOptionsOf({
      ca,
      cert,
      key,
      identification: connection["ssl.endpoint.identification.algorithm"],
    });
  }
  const mechanism = connection["sasl.mechanism"];
  if (protocol.startsWith("SASL_") && mechanism) {
    if (mechanism === "AWS_MSK_IAM") {
      const region = regionOf(options.bootstrapServers);
      // A fresh token for each connection's authentication: one lasts 15 minutes.
      options.sasl = { mechanism: "OAUTHBEARER", token: () => signMskToken(region) };
      return options;
    }
    const arn = connection["sasl.credentials.secret.arn"] as string;
    options.sasl = { mechanism, ...credentialsOf(await read(secrets, arn), arn) };
  }
  return options;
}

function regionOf(servers: string[]): string {
  try {
    return mskRegionOf(servers);
  } catch (error) {
    throw new ConnectionSetupError((error as Error).message);
  }
}

async function read(secrets: SecretReader, arn: string): Promise<string> {
  try {
    return await secrets.read(arn);
  } catch (error) {
    throw new ConnectionSetupError(`secret ${arn} could not be read: ${(error as Error).message}`);
  }
}

function credentialsOf(value: string, arn: string): { username: string; password: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  const { username, password } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof username !== "string" || username === "" || typeof password !== "string")
    throw new ConnectionSetupError(
      `secret ${arn} is not {"username": …, "password": …} (the SASL credentials it should hold)`,
    );
  return { username, password };
}

function privateKeyOf(value: string, arn: string): string {
  if (value.includes("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
    throw new ConnectionSetupError(
      `secret ${arn} holds an encrypted key: store it unencrypted (the secret is what protects it; a key password is not taken)`,
    );
  if (!/-----BEGIN (RSA |EC )?PRIVATE KEY-----/.test(value))
    throw new ConnectionSetupError(`secret ${arn} is not a PEM private key (the client certificate's key)`);
  return value;
}
