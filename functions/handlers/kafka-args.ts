import { readFileSync } from "node:fs";
import { clientOptionsOf, parseProperties } from "../agent/client-properties.ts";
import { KafkaAdminClient, parseHostPort } from "../kafka/admin.ts";

/** The Kafka options pacer agent and pacer wait share: where the cluster is and how to reach it. */

/** A bad --bootstrap-server: the command prints it with its usage and exits 2. */
export class KafkaArgumentError extends Error {}

export function bootstrapServersOf(value: string | undefined): string[] {
  const servers = (value ?? "").split(",").filter((s) => s.trim() !== "");
  if (servers.length === 0) throw new KafkaArgumentError("--bootstrap-server is required");
  for (const server of servers) {
    try {
      parseHostPort(server);
    } catch (error) {
      throw new KafkaArgumentError(`--bootstrap-server: ${(error as Error).message}`);
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
