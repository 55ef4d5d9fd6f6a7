import type { KafkaClientOptions } from "../kafka/admin.ts";

/**
 * Kafka client properties for `pacer agent --command-config FILE`, under the names Kafka's own tools
 * read. Anything else is an error at start: a property that was silently ignored would leave the
 * agent connecting in a way the operator did not ask for.
 */

const SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] as const;

const SUPPORTED = new Set([
  "security.protocol",
  "sasl.mechanism",
  "sasl.jaas.config",
  "ssl.truststore.type",
  "ssl.truststore.certificates",
  "ssl.truststore.location",
  "ssl.keystore.type",
  "ssl.keystore.certificate.chain",
  "ssl.keystore.key",
  "ssl.keystore.location",
  "ssl.endpoint.identification.algorithm",
  "client.id",
  "request.timeout.ms",
]);

export class ClientPropertiesError extends Error {}

/** Java properties text: `key=value` or `key: value` lines, `#`/`!` comments, `\` line continuations. */
export function parseProperties(text: string): Map<string, string> {
  const properties = new Map<string, string>();
  const logical = text.replace(/\\\r?\n[ \t]*/g, "").split(/\r?\n/);
  for (const raw of logical) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue;
    const match = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line);
    if (!match) throw new ClientPropertiesError(`not a property line: "${line}"`);
    properties.set(match[1] as string, (match[2] as string).trim());
  }
  return properties;
}

/** Reads username and password from a PlainLoginModule or ScramLoginModule JAAS line. */
function credentialsOf(jaas: string): { username: string; password: string } {
  if (!/(PlainLoginModule|ScramLoginModule)\s+required/.test(jaas))
    throw new ClientPropertiesError(
      "sasl.jaas.config: only org.apache.kafka.common.security.plain.PlainLoginModule and …scram.ScramLoginModule are supported",
    );
  const option = (name: string) => new RegExp(`\\b${name}\\s*=\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(jaas)?.[1];
  const username = option("username");
  const password = option("password");
  if (username === undefined || password === undefined)
    throw new ClientPropertiesError('sasl.jaas.config needs username="…" and password="…"');
  return { username: username.replace(/\\(.)/g, "$1"), password: password.replace(/\\(.)/g, "$1") };
}

/**
 * Turns Kafka client properties into connection options. TLS trust and client certificates are PEM,
 * inline (`ssl.truststore.certificates`, `ssl.keystore.certificate.chain`, `ssl.keystore.key`, with
 * `ssl.*.type=PEM`) or as a PEM file in `ssl.truststore.location` / `ssl.keystore.location`.
 */
export function clientOptionsOf(
  properties: Map<string, string>,
  readFile: (path: string) => string,
): Omit<KafkaClientOptions, "bootstrapServers"> {
  for (const key of properties.keys()) {
    if (!SUPPORTED.has(key))
      throw new ClientPropertiesError(
        `unsupported client property "${key}" (supported: ${[...SUPPORTED].join(", ")})`,
      );
  }
  const get = (key: string) => properties.get(key);
  const protocol = get("security.protocol") ?? "PLAINTEXT";
  if (!(SECURITY_PROTOCOLS as readonly string[]).includes(protocol))
    throw new ClientPropertiesError(`security.protocol must be one of ${SECURITY_PROTOCOLS.join(", ")}`);
  const usesTls = protocol === "SSL" || protocol === "SASL_SSL";
  const usesSasl = protocol.startsWith("SASL_");

  for (const key of ["ssl.truststore.type", "ssl.keystore.type"]) {
    const type = get(key);
    if (type !== undefined && type !== "PEM")
      throw new ClientPropertiesError(`${key}=${type}: only PEM is supported (JKS and PKCS12 are not)`);
  }
  const identification = get("ssl.endpoint.identification.algorithm");
  if (identification !== undefined && identification !== "" && identification.toLowerCase() !== "https")
    throw new ClientPropertiesError('ssl.endpoint.identification.algorithm must be "https" or empty');
  if (!usesTls && [...properties.keys()].some((k) => k.startsWith("ssl.")))
    throw new ClientPropertiesError(
      `ssl.* properties need security.protocol SSL or SASL_SSL, not ${protocol}`,
    );
  if (!usesSasl && [...properties.keys()].some((k) => k.startsWith("sasl.")))
    throw new ClientPropertiesError(
      `sasl.* properties need security.protocol SASL_PLAINTEXT or SASL_SSL, not ${protocol}`,
    );

  const options: Omit<KafkaClientOptions, "bootstrapServers"> = {};
  const clientId = get("client.id");
  if (clientId) options.clientId = clientId;
  const timeout = get("request.timeout.ms");
  if (timeout !== undefined) {
    const ms = Number(timeout);
    if (!Number.isInteger(ms) || ms < 1)
      throw new ClientPropertiesError("request.timeout.ms must be a positive integer");
    options.requestTimeoutMs = ms;
  }
  if (usesTls) {
    const pem = (inline: string, location: string) => {
      const text = get(inline);
      const file = get(location);
      return text ?? (file ? readFile(file) : undefined);
    };
    const ca = pem("ssl.truststore.certificates", "ssl.truststore.location");
    const cert = pem("ssl.keystore.certificate.chain", "ssl.keystore.location");
    const key = get("ssl.keystore.key") ?? (get("ssl.keystore.location") ? cert : undefined);
    options.tls = tlsOptionsOf({ ca, cert, key, identification });
  }
  if (usesSasl) {
    const mechanism = get("sasl.mechanism") ?? "GSSAPI";
    if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism))
      throw new ClientPropertiesError(
        `sasl.mechanism must be one of ${SASL_MECHANISMS.join(", ")}, not ${mechanism}`,
      );
    const jaas = get("sasl.jaas.config");
    if (!jaas) throw new ClientPropertiesError("sasl.jaas.config is required with SASL");
    options.sasl = { mechanism: mechanism as (typeof SASL_MECHANISMS)[number], ...credentialsOf(jaas) };
  }
  return options;
}

/** TLS options from PEM trust and client certificates, and Kafka's ssl.endpoint.identification.algorithm. */
export function tlsOptionsOf(pem: {
  ca?: string;
  cert?: string;
  key?: string;
  identification?: string;
}): NonNullable<KafkaClientOptions["tls"]> {
  const { ca, cert, key, identification } = pem;
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    // Kafka's default "https" checks the broker's host name; empty turns the check off, as in Kafka.
    ...(identification === "" ? { checkServerIdentity: () => undefined } : {}),
  };
}
