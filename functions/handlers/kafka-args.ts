import { readFileSync } from "node:fs";
import { clientOptionsOf, parseProperties } from "../agent/client-properties.ts";
import { KafkaAdminClient, KafkaConnectError, parseHostPort } from "../kafka/admin.ts";

/** The Kafka options pacer agent and pacer wait share: where the cluster is and how to reach it. */

/** A bad argument: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}

export function bootstrapServersOf(value: string | undefined): string[] {
  const servers = (value ?? "").split(",").filter((s) => s.trim() !== "");
  if (servers.length === 0) throw new UsageError("--bootstrap-server is required");
  for (const server of servers) {
    try {
      parseHostPort(server);
    } catch (error) {
      throw new UsageError(`--bootstrap-server: ${(error as Error).message}`);
    }
  }
  return servers;
}

/** An admin client for the servers, with the client properties of --command-config if given. */
export function adminClientOf(servers: string[], commandConfig: string | undefined): KafkaAdminClient {
  const properties = commandConfig
    ? parseProperties(readFileSync(commandConfig, "utf8"))
    : new Map<string, string>();
  return new KafkaAdminClient({
    bootstrapServers: servers,
    ...clientOptionsOf(properties, (path) => readFileSync(path, "utf8")),
  });
}

/**
 * Whether the first connection fails in a way that retrying cannot mend — a TLS handshake the broker's
 * certificate or ours fails, or SASL credentials refused — and then the message to stop with. A server
 * that is merely unreachable (not started yet) is not such a failure.
 */
export async function setupFailure(kafka: KafkaAdminClient): Promise<string | undefined> {
  try {
    await kafka.readsWith();
    return undefined;
  } catch (error) {
    return error instanceof KafkaConnectError && error.kind !== "unreachable" ? error.message : undefined;
  }
}
