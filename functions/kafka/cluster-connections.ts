import type { ClusterConnection } from "../../schemas/connection.ts";
import { KafkaAdminClient, type KafkaClientOptions } from "./admin.ts";
import { clientOptionsOfConnection, type SecretReader, secretArnsOf } from "./connection-options.ts";
import type { MskTokenSigner } from "./msk-iam.ts";

/**
 * The worker's Kafka clients, one per cluster, kept across jobs (and across a warm Lambda's
 * invocations): a tick a minute on a cluster should not pay a TLS and SASL handshake each time. A
 * client is made anew when the registered connection changes, after it failed (so that a rotated
 * secret is read again), when it sat unused past `idleMs` (a frozen Lambda's sockets may be gone),
 * and past `maxAgeMs` (an MSK IAM token lasts 15 minutes, and the broker closes the connection after).
 */

interface Kept {
  client: KafkaAdminClient;
  /** The registered connection it was made from, as JSON: a changed registration makes a new client. */
  registered: string;
  secretArns: string[];
  lastUsedMs: number;
  madeAtMs: number;
}

export interface ClusterClients {
  /** The cluster's client, and whether it was kept from an earlier job (a failure on it is worth one retry). */
  clientOf(
    clusterId: string,
    connection: ClusterConnection,
  ): Promise<{ client: KafkaAdminClient; kept: boolean }>;
  /** Closes and forgets a cluster's client: the next job connects anew, with its secrets read again. */
  drop(clusterId: string): Promise<void>;
  close(): Promise<void>;
}

export class ClusterConnections implements ClusterClients {
  private readonly kept = new Map<string, Kept>();

  constructor(
    private readonly secrets: SecretReader,
    private readonly options: {
      idleMs?: number;
      maxAgeMs?: number;
      clock?: () => number;
      requestTimeoutMs?: number;
      signMskToken?: MskTokenSigner;
    } = {},
  ) {}

  async clientOf(clusterId: string, connection: ClusterConnection) {
    const nowMs = this.now();
    await this.closeStale(nowMs);
    const registered = JSON.stringify(connection);
    const kept = this.kept.get(clusterId);
    if (kept && kept.registered === registered) {
      kept.lastUsedMs = nowMs;
      return { client: kept.client, kept: true };
    }
    if (kept) await this.drop(clusterId);
    const secretArns = secretArnsOf(connection);
    let options: KafkaClientOptions;
    try {
      options = await clientOptionsOfConnection(connection, this.secrets, this.options.signMskToken);
    } catch (error) {
      // A secret not in its shape (mid-rotation, say) is read again at the next job, not kept for the TTL.
      for (const arn of secretArns) this.secrets.forget?.(arn);
      throw error;
    }
    // The worker's budget per cluster bounds each call, unless the registration asks for less.
    const timeoutMs = this.options.requestTimeoutMs;
    if (timeoutMs !== undefined)
      options.requestTimeoutMs = Math.min(options.requestTimeoutMs ?? timeoutMs, timeoutMs);
    const client = new KafkaAdminClient(options);
    this.kept.set(clusterId, { client, registered, secretArns, lastUsedMs: nowMs, madeAtMs: nowMs });
    return { client, kept: false };
  }

  async drop(clusterId: string): Promise<void> {
    const kept = this.kept.get(clusterId);
    this.kept.delete(clusterId);
    // Its secrets are read again with the next client: after a rotation, the failure it caused mends at the next job.
    for (const arn of kept?.secretArns ?? []) this.secrets.forget?.(arn);
    await kept?.client.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await Promise.all([...this.kept.keys()].map((id) => this.drop(id)));
  }

  /** How many clusters have a client kept. */
  get size(): number {
    return this.kept.size;
  }

  private async closeStale(nowMs: number): Promise<void> {
    const idleMs = this.options.idleMs ?? 5 * 60_000;
    const maxAgeMs = this.options.maxAgeMs ?? 10 * 60_000;
    const stale = [...this.kept]
      .filter(([, k]) => nowMs - k.lastUsedMs > idleMs || nowMs - k.madeAtMs >= maxAgeMs)
      .map(([id]) => id);
    await Promise.all(stale.map((id) => this.drop(id)));
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }
}
