import {
  apiVersionsV3,
  Connection,
  type ConnectionOptions,
  describeConfigsV4,
  describeLogDirsV4,
  describeTopicPartitionsV0,
  incrementalAlterConfigsV1,
  listPartitionReassignmentsV0,
  metadataV12,
} from "@platformatic/kafka";
import { describeClusterV2, ELECTION_TYPE_PREFERRED, electLeadersV2 } from "./protocol.ts";

/**
 * The few admin calls the agent makes, on one connection to any broker of the cluster. A KRaft broker
 * forwards the two that the controller answers (ElectLeaders, ListPartitionReassignments); a
 * ZooKeeper-mode broker that is not the controller refuses them (NOT_CONTROLLER), so there they go to
 * the broker Metadata names as controller, as Kafka's own admin client sends them. A failed call
 * closes its connection; the next call reconnects, trying the next bootstrap server first.
 */

export interface KafkaClientOptions {
  bootstrapServers: string[];
  tls?: ConnectionOptions["tls"];
  sasl?:
    | { mechanism: "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"; username: string; password: string }
    /** The token, or what makes one for each connection's authentication (MSK IAM's expire). */
    | { mechanism: "OAUTHBEARER"; token: string | (() => Promise<string>) };
  requestTimeoutMs?: number;
  clientId?: string;
}

export interface KafkaBroker {
  id: number;
  fenced: boolean;
}

export interface KafkaPartition {
  topic: string;
  partition: number;
  replicas: number[];
  isr: number[];
  leader: number;
  elr: number[];
}

export interface TopicPartition {
  topic: string;
  partition: number;
}

/** One partition's answer to ElectLeaders: 0 done, 84 not needed, 80 preferred not available, … */
export interface ElectionResult extends TopicPartition {
  errorCode: number;
  errorMessage: string | null;
}

/**
 * Replica sizes as each broker reports its own logs: `topic\u0000partition` → broker id → bytes. A broker
 * that could not be asked is missing from `answered` and from every entry.
 */
export interface ReplicaSizes {
  answered: Set<number>;
  bytes: Map<string, Map<number, number>>;
}

/**
 * Where a config's value comes from (DescribeConfigs' ConfigSource): set on this topic, on this broker,
 * as the cluster-wide broker default, in the broker's properties file, or Kafka's own default.
 */
export type ConfigSource = "topic" | "broker" | "cluster-default" | "static" | "default" | "other";

export interface ConfigValue {
  value: string | null;
  source: ConfigSource;
}

/** One resource's changes for IncrementalAlterConfigs: APPEND and SUBTRACT edit a list config in place. */
export interface ConfigChange {
  resource: { type: "broker" | "topic"; name: string };
  configs: { name: string; op: "set" | "delete" | "append" | "subtract"; value?: string }[];
}

/** One resource's answer: 0 done, 3 unknown topic, 29/32 not authorized, 40 invalid value, … */
export interface ConfigChangeResult {
  resource: ConfigChange["resource"];
  errorCode: number;
  errorMessage: string | null;
}

interface BrokerEndpoint {
  id: number;
  host: string;
  port: number;
}

export const partitionKey = (p: TopicPartition) => `${p.topic}\u0000${p.partition}`;

export class KafkaRequestError extends Error {
  constructor(
    readonly api: string,
    readonly errorCode: number,
    message: string | null,
  ) {
    super(`${api} failed with Kafka error ${errorCode}${message ? `: ${message}` : ""}`);
  }
}

/** A call meant for one broker (its own configs, its log dirs), which is down. */
export class BrokerDownError extends Error {
  constructor(
    readonly brokerId: number,
    message: string,
  ) {
    super(message);
  }
}

/** The broker is not in the cluster's metadata: down, or not yet registered. */
export class BrokerNotInMetadataError extends BrokerDownError {
  constructor(brokerId: number, role: string) {
    super(brokerId, `${role} ${brokerId} is not in the cluster's metadata (down, or not yet registered)`);
  }
}

/**
 * The broker is in the metadata but does not answer (the connection refused, closed or timed out):
 * stopped a moment ago or shutting down, and still listed until its session times out (KRaft) or its
 * ZooKeeper node goes.
 */
export class BrokerUnreachableError extends BrokerDownError {
  constructor(brokerId: number, role: string, cause: unknown) {
    super(
      brokerId,
      `${role} ${brokerId} is listed but could not be connected to: ${(cause as Error)?.message ?? cause}`,
    );
  }
}

const API_DESCRIBE_TOPIC_PARTITIONS = 75;
const RESOURCE_TOPIC = 2;
const RESOURCE_BROKER = 4;
const CONFIG_SOURCES: Record<number, ConfigSource> = {
  1: "topic",
  2: "broker",
  3: "cluster-default",
  4: "static",
  5: "default",
};
const CONFIG_OPERATIONS = { set: 0, delete: 1, append: 2, subtract: 3 } as const;
const NOT_CONTROLLER = 41;
/** The client library's code for a connection closed, refused or timed out under a call. */
const NETWORK_ERROR = "PLT_KFK_NETWORK";
const API_DESCRIBE_CLUSTER = 60;
/** Partitions per DescribeTopicPartitions page; brokers cap it at max.request.partition.size.limit (2000). */
const PAGE_PARTITIONS = 2000;

export class KafkaAdminClient {
  private connection: Connection | undefined;
  /** DescribeLogDirs is asked of each broker, and two calls of the controller: a connection to each, kept. */
  private brokerConnections = new Map<number, Connection>();
  private apiMaxVersions = new Map<number, number>();
  private nextServer = 0;

  constructor(private readonly options: KafkaClientOptions) {
    if (options.bootstrapServers.length === 0) throw new Error("no bootstrap servers");
  }

  /** The cluster id and every registered broker with its fenced state (Metadata omits fenced ones). */
  async describeCluster(): Promise<{ clusterId: string; brokers: KafkaBroker[] }> {
    return this.call(async (connection) => {
      if ((this.apiMaxVersions.get(API_DESCRIBE_CLUSTER) ?? -1) < 2) {
        // Before Kafka 4.0 no API lists fenced brokers: the unfenced ones are all that can be listed,
        // and an unlisted broker is as inactive to the policy as a fenced one.
        const metadata = await metadataV12.api.async(connection, [], false, false);
        const brokers = [...metadata.brokers.values()].map((b) => ({ id: b.nodeId, fenced: false }));
        return { clusterId: metadata.clusterId ?? "", brokers };
      }
      const response = await describeClusterV2.async(connection, true);
      if (response.errorCode !== 0)
        throw new KafkaRequestError("DescribeCluster", response.errorCode, response.errorMessage);
      const brokers = response.brokers.map((b) => ({ id: b.brokerId, fenced: b.isFenced }));
      return { clusterId: response.clusterId, brokers };
    });
  }

  /**
   * The APIs this cluster's brokers answer the two reads with: Kafka 4.0 and later list fenced brokers
   * (DescribeCluster v2); KRaft from 3.7 pages partitions with DescribeTopicPartitions. Older, or in
   * ZooKeeper mode, Metadata answers both, and a broker that is down is simply not listed.
   */
  async readsWith(): Promise<{ brokers: string; partitions: string }> {
    await this.connect();
    const fencedListed = (this.apiMaxVersions.get(API_DESCRIBE_CLUSTER) ?? -1) >= 2;
    return {
      brokers: fencedListed ? "DescribeCluster v2" : "Metadata",
      partitions: this.apiMaxVersions.has(API_DESCRIBE_TOPIC_PARTITIONS)
        ? "DescribeTopicPartitions"
        : "Metadata",
    };
  }

  /** Every partition of every topic: DescribeTopicPartitions, paged (Metadata where the broker lacks it). */
  async describePartitions(): Promise<KafkaPartition[]> {
    return this.call(async (connection) => {
      if (!this.apiMaxVersions.has(API_DESCRIBE_TOPIC_PARTITIONS))
        return this.partitionsFromMetadata(connection);
      const partitions: KafkaPartition[] = [];
      let cursor: { topicName: string; partitionIndex: number } | undefined;
      do {
        // A leaderless partition is listed with leader -1 and no error (checked on Kafka 4.1).
        const page = await describeTopicPartitionsV0.api.async(
          connection,
          [], // every topic the caller may describe
          PAGE_PARTITIONS,
          cursor,
        );
        for (const topic of page.topics) {
          for (const p of topic.partitions) {
            partitions.push({
              topic: topic.name as string,
              partition: p.partitionIndex,
              replicas: p.replicaNodes,
              isr: p.isrNodes,
              leader: p.leaderId,
              elr: p.eligibleLeaderReplicas ?? [],
            });
          }
        }
        cursor = page.nextCursor;
      } while (cursor);
      return partitions;
    });
  }

  /** Partitions with a reassignment in progress (ListPartitionReassignments, all topics). */
  async listReassignments(): Promise<TopicPartition[]> {
    return this.onController(async (connection) => {
      const response = await listPartitionReassignmentsV0.api.async(
        connection,
        this.options.requestTimeoutMs ?? 30_000,
        null as unknown as [],
      );
      return response.topics.flatMap((t) =>
        t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex })),
      );
    });
  }

  /**
   * Preferred-leader elections for exactly these partitions. Per-partition errors are results; a
   * request-level error throws, and then nothing more is elected by this call.
   */
  async electPreferred(partitions: TopicPartition[], timeoutMs = 30_000): Promise<ElectionResult[]> {
    if (partitions.length === 0) return [];
    const byTopic = new Map<string, number[]>();
    for (const { topic, partition } of partitions) {
      const list = byTopic.get(topic) ?? [];
      list.push(partition);
      byTopic.set(topic, list);
    }
    const topics = [...byTopic].map(([topic, list]) => ({ topic, partitions: list }));
    return this.onController(async (connection) => {
      const response = await electLeadersV2.async(connection, ELECTION_TYPE_PREFERRED, topics, timeoutMs);
      if (response.errorCode !== 0) throw new KafkaRequestError("ElectLeaders", response.errorCode, null);
      const results = response.results.flatMap((t) =>
        t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, ...withoutPartition(p) })),
      );
      // A ZooKeeper-mode controller that lost its role since Metadata named it refuses every partition.
      if (results.every((r) => r.errorCode === NOT_CONTROLLER))
        throw new KafkaRequestError(
          "ElectLeaders",
          NOT_CONTROLLER,
          "sent to a broker that is no longer the controller",
        );
      return results;
    });
  }

  /**
   * Every replica's size on every broker Metadata lists (DescribeLogDirs v4, Kafka 3.3 and later, asked of
   * each broker for its own logs). A broker that fails to answer is left out, never guessed.
   */
  async replicaSizes(): Promise<ReplicaSizes> {
    const { endpoints } = await this.brokerMetadata();
    const sizes: ReplicaSizes = { answered: new Set(), bytes: new Map() };
    await Promise.all(
      endpoints.map(async (endpoint) => {
        const { id } = endpoint;
        try {
          const connection = await this.brokerConnection(endpoint);
          const response = await describeLogDirsV4.api.async(connection, null as unknown as []);
          for (const dir of response.results) {
            for (const topic of dir.topics) {
              for (const p of topic.partitions) {
                if (p.isFutureKey) continue; // a copy being moved between log dirs, not the replica
                const key = partitionKey({ topic: topic.name, partition: p.partitionIndex });
                const perBroker = sizes.bytes.get(key) ?? new Map<number, number>();
                perBroker.set(id, Number(p.partitionSize));
                sizes.bytes.set(key, perBroker);
              }
            }
          }
          sizes.answered.add(id);
        } catch {
          await this.dropBrokerConnection(id);
          for (const perBroker of sizes.bytes.values()) perBroker.delete(id);
        }
      }),
    );
    return sizes;
  }

  /**
   * A broker's current values of `names`. Asked of that broker itself: a broker answers for its own
   * dynamic config (Kafka's admin client sends it there too).
   */
  async describeBrokerConfigs(brokerId: number, names: string[]): Promise<Map<string, ConfigValue>> {
    const resource = {
      resourceType: RESOURCE_BROKER,
      resourceName: String(brokerId),
      configurationKeys: names,
    };
    const [result] = await this.onBroker(brokerId, (connection) => describeConfigs(connection, [resource]));
    return configValuesOf(result);
  }

  /** Topics' current values of `names`, by topic; a topic that no longer exists is left out. */
  async describeTopicConfigs(
    topics: string[],
    names: string[],
  ): Promise<Map<string, Map<string, ConfigValue>>> {
    if (topics.length === 0) return new Map();
    const resources = topics.map((topic) => ({
      resourceType: RESOURCE_TOPIC,
      resourceName: topic,
      configurationKeys: names,
    }));
    const results = await this.call((connection) => describeConfigs(connection, resources));
    return new Map(
      results
        .filter((r) => r.errorCode !== ERROR_UNKNOWN_TOPIC)
        .map((r) => [r.resourceName, configValuesOf(r)] as const),
    );
  }

  /**
   * IncrementalAlterConfigs: topic changes on any broker (KRaft forwards them to the controller), a
   * broker's own config on that broker (Kafka refuses another broker's id). Each resource's error is a
   * result; a failed request throws.
   */
  async alterConfigs(changes: ConfigChange[], brokerId?: number): Promise<ConfigChangeResult[]> {
    if (changes.length === 0) return [];
    const resources: Parameters<typeof incrementalAlterConfigsV1.api.async>[1] = changes.map(
      ({ resource, configs }) => ({
        resourceType: resource.type === "broker" ? RESOURCE_BROKER : RESOURCE_TOPIC,
        resourceName: resource.name,
        configs: configs.map(({ name, op, value }) =>
          op === "delete"
            ? { name, configOperation: CONFIG_OPERATIONS.delete }
            : { name, configOperation: CONFIG_OPERATIONS[op] as 0 | 2 | 3, value: value ?? "" },
        ),
      }),
    );
    const send = async (connection: Connection) => {
      const response = await withResourceErrors(
        incrementalAlterConfigsV1.api.async(connection, resources, false),
      );
      return response.responses.map((r, i) => ({
        resource: (changes[i] as ConfigChange).resource,
        errorCode: r.errorCode,
        errorMessage: r.errorMessage ?? null,
      }));
    };
    return brokerId === undefined ? this.call(send) : this.onBroker(brokerId, send);
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    const others = [...this.brokerConnections.values()];
    this.brokerConnections.clear();
    await Promise.all([connection, ...others].map((c) => c?.close().catch(() => undefined)));
  }

  private async partitionsFromMetadata(connection: Connection): Promise<KafkaPartition[]> {
    const metadata = await withPartitionErrors(metadataV12.api.async(connection, null, false, false));
    return metadata.topics.flatMap((t) =>
      t.partitions.map((p) => ({
        topic: t.name as string,
        partition: p.partitionIndex,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        leader: p.leaderId,
        elr: [],
      })),
    );
  }

  /** Every registered broker's endpoint, and which of them Metadata names as the controller. */
  private async brokerMetadata(): Promise<{ controllerId: number; endpoints: BrokerEndpoint[] }> {
    return this.call(async (connection) => {
      const metadata = await metadataV12.api.async(connection, [], false, false);
      const endpoints = [...metadata.brokers.values()].map((b) => ({
        id: b.nodeId,
        host: b.host,
        port: b.port,
      }));
      return { controllerId: metadata.controllerId, endpoints };
    });
  }

  /**
   * `body` where the controller's calls are answered. A KRaft broker forwards them to the controller:
   * the one connection serves (brokers with DescribeTopicPartitions, 3.7 on, are KRaft's). Otherwise,
   * the broker Metadata names as controller, on a connection kept to it; a call that fails on a kept
   * connection (that broker may have restarted since) is tried once more on a new one. Both calls
   * may be repeated: a preferred election already done answers ELECTION_NOT_NEEDED.
   */
  private async onController<T>(body: (connection: Connection) => Promise<T>): Promise<T> {
    await this.connect();
    if (this.apiMaxVersions.has(API_DESCRIBE_TOPIC_PARTITIONS)) return this.call(body);
    const { controllerId } = await this.brokerMetadata();
    return this.onBroker(controllerId, body, "controller");
  }

  /**
   * `body` on a connection kept to one broker, found in Metadata. A call that fails on a kept connection
   * (that broker may have restarted since) is tried once more on a new one: every call sent this way
   * may be repeated.
   */
  private async onBroker<T>(
    brokerId: number,
    body: (connection: Connection) => Promise<T>,
    role = "broker",
  ): Promise<T> {
    const { endpoints } = await this.brokerMetadata();
    const endpoint = endpoints.find((e) => e.id === brokerId);
    if (!endpoint) throw new BrokerNotInMetadataError(brokerId, role);
    for (let attempt = 0; ; attempt++) {
      const reused = this.brokerConnections.get(brokerId)?.isConnected() === true;
      let connection: Connection;
      try {
        connection = await this.brokerConnection(endpoint);
      } catch (error) {
        await this.dropBrokerConnection(brokerId);
        throw new BrokerUnreachableError(brokerId, role, error);
      }
      try {
        return await body(connection);
      } catch (error) {
        await this.dropBrokerConnection(brokerId);
        if (reused && attempt === 0) continue;
        // The connection closed or timed out under the call (a broker shutting down): it is down too.
        if ((error as { code?: string }).code === NETWORK_ERROR)
          throw new BrokerUnreachableError(brokerId, role, error);
        throw error;
      }
    }
  }

  /** A connection to one broker, kept between calls. */
  private async brokerConnection({ id, host, port }: BrokerEndpoint): Promise<Connection> {
    const kept = this.brokerConnections.get(id);
    if (kept?.isConnected()) return kept;
    await kept?.close().catch(() => undefined);
    const connection = this.newConnection();
    this.brokerConnections.set(id, connection);
    await connection.connect(host, port);
    return connection;
  }

  private async dropBrokerConnection(id: number): Promise<void> {
    await this.brokerConnections
      .get(id)
      ?.close()
      .catch(() => undefined);
    this.brokerConnections.delete(id);
  }

  private async call<T>(body: (connection: Connection) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const reused = this.connection?.isConnected() === true;
      const connection = await this.connect();
      try {
        return await body(connection);
      } catch (error) {
        await this.close();
        // A kept connection closed under the call (its broker stopped): once more on another server.
        // Every call sent this way may be repeated.
        if (!reused || attempt > 0 || (error as { code?: string }).code !== NETWORK_ERROR) throw error;
      }
    }
  }

  private async connect(): Promise<Connection> {
    if (this.connection?.isConnected()) return this.connection;
    await this.close();
    const servers = this.options.bootstrapServers;
    let lastError: unknown;
    for (let tried = 0; tried < servers.length; tried++) {
      const server = servers[this.nextServer % servers.length] as string;
      this.nextServer++;
      const { host, port } = parseHostPort(server);
      const connection = this.newConnection();
      try {
        await connection.connect(host, port);
        const versions = await apiVersionsV3.api.async(connection, "leadership-pacer", "1");
        this.apiMaxVersions = new Map(versions.apiKeys.map((a) => [a.apiKey, a.maxVersion]));
        this.connection = connection;
        return connection;
      } catch (error) {
        const socketError = socketErrors.get(connection);
        lastError =
          socketError === undefined
            ? error
            : new AggregateError([error, socketError], (error as Error).message);
        await connection.close().catch(() => undefined);
      }
    }
    throw new KafkaConnectError(servers, lastError);
  }

  private newConnection(): Connection {
    const connection = new Connection(this.options.clientId ?? "leadership-pacer", {
      tls: this.options.tls,
      sasl: this.options.sasl,
      requestTimeout: this.options.requestTimeoutMs ?? 30_000,
      connectTimeout: Math.min(this.options.requestTimeoutMs ?? 10_000, 10_000),
    });
    // A socket error (a broker killed, a TLS alert after the handshake) is emitted as an 'error' event,
    // which with no listener ends the process. The calls in flight fail all the same, with "Connection
    // closed": the error is kept for saying why, and the next call connects again.
    connection.on("error", (error) => socketErrors.set(connection, error));
    return connection;
  }
}

/**
 * Metadata marks a partition without a leader (LEADER_NOT_AVAILABLE) or with a replica offline with
 * an error code of its own, and the client library then refuses the whole answer. Those codes
 * describe the partition, which is listed all the same (leader -1): the answer is used. Any other
 * error, or one about a whole topic, still fails the read.
 */
async function withPartitionErrors<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    const { response, errors } = error as { response?: T; errors?: { path?: string }[] };
    const partitionsOnly = errors?.every((e) => /\/partitions\/\d+$/.test(e.path ?? ""));
    if (response !== undefined && errors?.length && partitionsOnly) return response;
    throw error;
  }
}

const ERROR_UNKNOWN_TOPIC = 3;

/** DescribeConfigs v4, each resource's error a result rather than a thrown answer. */
async function describeConfigs(
  connection: Connection,
  resources: { resourceType: number; resourceName: string; configurationKeys: string[] }[],
) {
  const response = await withResourceErrors(
    describeConfigsV4.api.async(
      connection,
      resources as Parameters<typeof describeConfigsV4.api.async>[1],
      false,
      false,
    ),
  );
  return response.results;
}

type DescribeConfigsResult = Awaited<ReturnType<typeof describeConfigs>>[number];

function configValuesOf(result: DescribeConfigsResult | undefined): Map<string, ConfigValue> {
  if (result === undefined) throw new Error("DescribeConfigs answered no resource");
  if (result.errorCode !== 0)
    throw new KafkaRequestError(
      `DescribeConfigs ${result.resourceName}`,
      result.errorCode,
      result.errorMessage ?? null,
    );
  return new Map(
    result.configs.map((c) => [
      c.name,
      { value: c.value ?? null, source: CONFIG_SOURCES[c.configSource] ?? "other" },
    ]),
  );
}

/** The client library refuses an answer with any resource's error; those errors are results here. */
async function withResourceErrors<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    const { response, errors } = error as { response?: T; errors?: unknown };
    if (response !== undefined && errors !== undefined) return response;
    throw error;
  }
}

function withoutPartition(p: { errorCode: number; errorMessage: string | null }) {
  return { errorCode: p.errorCode, errorMessage: p.errorMessage };
}

export function parseHostPort(server: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(server.trim());
  const port = Number(match?.[2]);
  if (!match || !(port > 0 && port < 65536)) throw new Error(`"${server}" is not host:port`);
  return { host: match[1] as string, port };
}

/** The socket error each connection last emitted: what its failed calls ("Connection closed") do not say. */
const socketErrors = new WeakMap<Connection, unknown>();

/**
 * No bootstrap server could be connected to, and why, for the last one tried: `tls` when the TLS
 * handshake failed (the broker's certificate not trusted, expired, not for its name; the broker refusing
 * ours), `authentication` when SASL did. Neither mends itself by retrying, unlike a broker not up yet.
 */
export class KafkaConnectError extends Error {
  readonly kind: "tls" | "authentication" | "unreachable";

  constructor(servers: string[], error: unknown) {
    const chain = causesOf(error);
    const tls = chain.find(isTlsError);
    const sasl = chain.some((e) => /SASL|[Aa]uthentication/.test(e.message));
    const why = tls
      ? `TLS handshake failed: ${tls.message}${tls.code ? ` (${tls.code})` : ""}`
      : describe(error);
    super(`cannot connect to any bootstrap server (${servers.join(",")}): ${why}`);
    this.kind = tls ? "tls" : sasl ? "authentication" : "unreachable";
  }
}

type CodedError = Error & { code?: string };

function causesOf(error: unknown): CodedError[] {
  if (error instanceof AggregateError) return [error, ...error.errors.flatMap(causesOf)];
  if (!(error instanceof Error)) return [];
  return [error, ...(error.cause === undefined ? [] : causesOf(error.cause))];
}

/** Node's errors for a failed TLS handshake: OpenSSL's verify codes, its alerts, and its own checks. */
function isTlsError(error: CodedError): boolean {
  return (
    /^(CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_TLS_|ERR_SSL_|HOSTNAME_)/.test(error.code ?? "") ||
    /\b(SSL|TLS) alert\b|certificate/i.test(error.message)
  );
}

/** An error with its causes, which say why a connection failed (refused, TLS, SASL). */
function describe(error: unknown): string {
  if (error instanceof AggregateError) return error.errors.map(describe).join("; ");
  if (!(error instanceof Error)) return String(error);
  return error.cause === undefined ? error.message : `${error.message} (${describe(error.cause)})`;
}
