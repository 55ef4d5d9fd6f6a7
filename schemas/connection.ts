import * as z from "zod";

/**
 * How the pacer reaches a cluster itself (the scheduled worker, with no agent beside the cluster):
 * under the names Kafka's clients read where one exists. Secrets are given only by reference, as AWS
 * Secrets Manager ARNs, so that the table, the API, the console and the logs never hold one: the
 * SASL credentials (a secret whose value is `{"username": …, "password": …}`) and the client
 * certificate's private key (a secret whose value is the PEM). Certificates themselves are public and
 * given inline, PEM.
 */

export const CONNECTION_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
/** AWS_MSK_IAM: OAUTHBEARER with a token signed for MSK from the worker's own IAM role; no secret. */
export const CONNECTION_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM"] as const;

const SECRET_ARN =
  /^arn:aws[a-z-]*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$/;
const HOST_PORT = /^[A-Za-z0-9.-]{1,253}:\d{1,5}$|^\[[0-9A-Fa-f:.]{2,45}\]:\d{1,5}$/;
const PEM_CERTIFICATE = /^\s*-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\s*$/;

/** Names that carry a secret in Kafka's client properties: refused, with the reference to give instead. */
export const INLINE_SECRETS: Record<string, string> = {
  "sasl.jaas.config": "sasl.credentials.secret.arn",
  "ssl.keystore.key": "ssl.keystore.key.secret.arn",
  "ssl.key.password": "ssl.keystore.key.secret.arn",
  "ssl.keystore.password": "ssl.keystore.key.secret.arn",
  "ssl.truststore.password": "ssl.truststore.certificates (PEM, no password)",
};

const secretArn = (what: string) =>
  z
    .string()
    .regex(SECRET_ARN, `expected the ARN of an AWS Secrets Manager secret holding ${what}`)
    .describe(`An AWS Secrets Manager secret ARN: ${what}. Only the reference is stored.`);

const bootstrapServers = z
  .string()
  .max(4096)
  .refine(
    (value) => {
      const servers = value.split(",").map((s) => s.trim());
      return (
        servers.length > 0 && servers.every((s) => HOST_PORT.test(s) && Number(s.split(":").at(-1)) <= 65535)
      );
    },
    { message: 'expected host:port[,host:port…], e.g. "b-1.kafka.example:9096,b-2.kafka.example:9096"' },
  );

const pemCertificates = z
  .string()
  .max(65_536)
  .regex(PEM_CERTIFICATE, "expected one or more PEM certificates (-----BEGIN CERTIFICATE----- …)");

const Fields = z
  .object({
    "bootstrap.servers": bootstrapServers,
    "security.protocol": z.enum(CONNECTION_PROTOCOLS).default("PLAINTEXT"),
    "sasl.mechanism": z.enum(CONNECTION_MECHANISMS).optional(),
    "sasl.credentials.secret.arn": secretArn('{"username": …, "password": …}').optional(),
    "ssl.truststore.certificates": pemCertificates.optional(),
    "ssl.keystore.certificate.chain": pemCertificates.optional(),
    "ssl.keystore.key.secret.arn": secretArn("the client certificate's private key, PEM").optional(),
    "ssl.endpoint.identification.algorithm": z.enum(["https", ""]).optional(),
    "client.id": z.string().min(1).max(255).optional(),
    "request.timeout.ms": z.number().int().min(1000).max(120_000).optional(),
    // A secret given inline is refused by name, with the reference to give instead.
    ...Object.fromEntries(
      Object.entries(INLINE_SECRETS).map(([name, instead]) => [
        name,
        z.never({ error: `secrets are never stored: give ${instead} instead` }).optional(),
      ]),
    ),
  })
  .strict();

/** One rule the fields must keep together: where it fails, and why. */
type Rule = { holds: (c: z.infer<typeof Fields>) => boolean; path: string; message: string };

const sasl = (c: z.infer<typeof Fields>) => c["security.protocol"].startsWith("SASL_");
const tls = (c: z.infer<typeof Fields>) => c["security.protocol"].endsWith("SSL");
const RULES: Rule[] = [
  {
    holds: (c) => !sasl(c) || c["sasl.mechanism"] !== undefined,
    path: "sasl.mechanism",
    message: "required with a SASL_ security.protocol",
  },
  {
    holds: (c) => sasl(c) || c["sasl.mechanism"] === undefined,
    path: "sasl.mechanism",
    message: "only with security.protocol SASL_PLAINTEXT or SASL_SSL",
  },
  {
    holds: (c) => c["sasl.mechanism"] !== "AWS_MSK_IAM" || c["security.protocol"] === "SASL_SSL",
    path: "security.protocol",
    message: "AWS_MSK_IAM needs SASL_SSL",
  },
  {
    holds: (c) =>
      !sasl(c) ||
      c["sasl.mechanism"] === undefined ||
      c["sasl.mechanism"] === "AWS_MSK_IAM" ||
      c["sasl.credentials.secret.arn"] !== undefined,
    path: "sasl.credentials.secret.arn",
    message: "required with PLAIN and SCRAM: the secret holding the username and password",
  },
  {
    holds: (c) =>
      c["sasl.credentials.secret.arn"] === undefined || (sasl(c) && c["sasl.mechanism"] !== "AWS_MSK_IAM"),
    path: "sasl.credentials.secret.arn",
    message: "only with PLAIN and SCRAM (AWS_MSK_IAM signs with the worker's own role)",
  },
  ...(
    [
      "ssl.truststore.certificates",
      "ssl.keystore.certificate.chain",
      "ssl.keystore.key.secret.arn",
      "ssl.endpoint.identification.algorithm",
    ] as const
  ).map((name) => ({
    holds: (c: z.infer<typeof Fields>) => tls(c) || c[name] === undefined,
    path: name,
    message: "only with security.protocol SSL or SASL_SSL",
  })),
  {
    holds: (c) =>
      (c["ssl.keystore.certificate.chain"] === undefined) ===
      (c["ssl.keystore.key.secret.arn"] === undefined),
    path: "ssl.keystore.key.secret.arn",
    message: "a client certificate needs both ssl.keystore.certificate.chain and ssl.keystore.key.secret.arn",
  },
];

/** A cluster's connection as `PUT /v1/clusters/{id}/connection` takes it and `GET` returns it. */
export const ClusterConnection = Fields.superRefine((connection, context) => {
  for (const rule of RULES)
    if (!rule.holds(connection))
      context.addIssue({ code: "custom", path: [rule.path], message: rule.message });
}).meta({ id: "ClusterConnection" });
export type ClusterConnection = z.output<typeof ClusterConnection>;
