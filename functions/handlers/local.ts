import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { DECISION_TTL_MS, DEFAULT_MAX_BODY_BYTES } from "../api/app.ts";
import { TokenAuth } from "../api/auth.ts";
import { Offload } from "../api/offload.ts";
import type { DecisionPublisher } from "../api/tick-job.ts";
import { createApp } from "../app.ts";
import { ClusterConnections } from "../kafka/cluster-connections.ts";
import { LocalTicker } from "../queue/local-ticker.ts";
import { dynamoClient, ensureTable } from "../store/client.ts";
import { DynamoStore } from "../store/dynamo-store.ts";
import { startEmbeddedStore } from "../store/embedded.ts";
import type { PacerStore } from "../store/store.ts";
import { startSweeper } from "../store/sweeper.ts";
import { PrometheusObserver } from "./prometheus.ts";
import { secretsManagerReaderOf } from "./secrets-manager.ts";

export interface LocalServerOptions {
  port: number;
  host: string;
  /** The embedded store's LevelDB folder; ignored when `dynamoEndpoint` is set. */
  dataDir: string;
  /** A DynamoDB-protocol endpoint to use instead of the embedded store ("aws" for AWS's own). */
  dynamoEndpoint?: string;
  tableName: string;
  auth?: TokenAuth;
  maxBodyBytes: number;
  /** Seconds between ticks of the local schedule; 0 = no ticks. */
  tickSeconds: number;
  /** Clusters a tick runs at once; default {@link DEFAULT_TICK_CONCURRENCY}. */
  tickConcurrency?: number;
  /** Seconds between sweeps of expired items from the embedded store; default 600. */
  sweepSeconds?: number;
  /** Bodies of at least this many bytes are parsed and run in a worker thread; 0 = never. */
  workerMinBytes?: number;
  /** Socket timeouts; see {@link SOCKET_TIMEOUTS}. */
  timeouts?: Partial<typeof SOCKET_TIMEOUTS>;
}

/** Expired items wait at most this long for the disk to be given back. */
export const DEFAULT_SWEEP_SECONDS = 600;

/** Each job waits on the store about four times: 16 at once keep two cores busy. */
export const DEFAULT_TICK_CONCURRENCY = 16;

/** 256 KiB of JSON parses in a few milliseconds: below that, a thread hop costs more than it saves. */
export const DEFAULT_WORKER_MIN_BYTES = 256 * 1024;

/**
 * Idle keep-alive connections live longer than the idle timeouts of the load balancers and SDKs in
 * front (60 s for AWS's), so the server never closes one a client is about to reuse. A client gets
 * 30 s to send its headers and 120 s for the whole request (an 8 MiB body at 70 KB/s): a slow-loris
 * client cannot hold a socket for longer. Node checks these every `checkIntervalMs`.
 */
export const SOCKET_TIMEOUTS = {
  keepAliveMs: 65_000,
  headersMs: 30_000,
  requestMs: 120_000,
  checkIntervalMs: 5_000,
};

export interface LocalServer {
  url: string;
  close(): Promise<void>;
}

export function optionsFromEnvironment(env: NodeJS.ProcessEnv): LocalServerOptions {
  return {
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? "127.0.0.1",
    dataDir: env.PACER_DATA_DIR ?? "./.pacer-data",
    dynamoEndpoint: env.DYNAMODB_ENDPOINT,
    tableName: env.PACER_TABLE ?? "leadership-pacer",
    auth: TokenAuth.fromEnvironment(env),
    maxBodyBytes: Number(env.PACER_MAX_BODY_BYTES ?? DEFAULT_MAX_BODY_BYTES),
    tickSeconds: Number(env.PACER_TICK_SECONDS ?? 60),
    tickConcurrency: Number(env.PACER_TICK_CONCURRENCY ?? DEFAULT_TICK_CONCURRENCY),
    sweepSeconds: Number(env.PACER_SWEEP_SECONDS ?? DEFAULT_SWEEP_SECONDS),
    workerMinBytes: Number(env.PACER_WORKER_MIN_BYTES ?? DEFAULT_WORKER_MIN_BYTES),
  };
}

/** The service as a plain Node server, on the embedded store unless pointed at another. */
export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  const embedded = options.dynamoEndpoint
    ? undefined
    : await startEmbeddedStore({ dataDir: options.dataDir });
  const endpoint =
    options.dynamoEndpoint === "aws" ? undefined : (options.dynamoEndpoint ?? embedded?.endpoint);
  const client = dynamoClient({ endpoint });
  if (endpoint) await ensureTable(client, options.tableName);
  const store = new DynamoStore(client, options.tableName);
  const metrics = new PrometheusObserver();
  const workerMinBytes = options.workerMinBytes ?? DEFAULT_WORKER_MIN_BYTES;
  const offload = workerMinBytes > 0 ? await Offload.start(workerMinBytes) : undefined;
  const app = createApp({
    store,
    offload,
    auth: options.auth,
    maxBodyBytes: options.maxBodyBytes,
    observer: metrics,
    metricsText: () => metrics.text(),
  });
  const timeouts = { ...SOCKET_TIMEOUTS, ...options.timeouts };
  const ticker = options.tickSeconds > 0 ? startTicker(store, metrics, options) : undefined;
  // dynalite has no TTL: without a sweeper the embedded store's disk would only grow.
  const sweeper = embedded
    ? startSweeper(
        client,
        options.tableName,
        (options.sweepSeconds ?? DEFAULT_SWEEP_SECONDS) * 1000,
        (outcome) => {
          if ("error" in outcome)
            console.error(JSON.stringify({ message: "sweep failed", error: outcome.error.message }));
        },
      )
    : undefined;

  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve(
      {
        fetch: app.fetch,
        port: options.port,
        hostname: options.host,
        serverOptions: {
          keepAliveTimeout: timeouts.keepAliveMs,
          headersTimeout: timeouts.headersMs,
          requestTimeout: timeouts.requestMs,
          connectionsCheckingInterval: timeouts.checkIntervalMs,
        },
      },
      () => resolve(started),
    );
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    close: async () => {
      await ticker?.stop();
      await sweeper?.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await offload?.close();
      client.destroy();
      await embedded?.close();
    },
  };
}

/** Locally the decisions endpoint is the feed; the log says when a tick produced one. */
const logPublisher: DecisionPublisher = {
  async publish(clusterId, answer) {
    console.log(
      JSON.stringify({
        message: "election batch",
        clusterId,
        decisionId: answer.decisionId,
        elections: answer.elections.length,
      }),
    );
  },
};

function startTicker(store: PacerStore, observer: PrometheusObserver, options: LocalServerOptions) {
  const ticker = new LocalTicker({
    store,
    observer,
    publisher: logPublisher,
    tickMs: options.tickSeconds * 1000,
    concurrency: options.tickConcurrency ?? DEFAULT_TICK_CONCURRENCY,
    decisionTtlMs: DECISION_TTL_MS,
    // Clusters with a connection are read and elected on by the ticker itself; their secrets come
    // from Secrets Manager (SECRETSMANAGER_ENDPOINT for a Secrets Manager-protocol server).
    clients: new ClusterConnections(secretsManagerReaderOf(process.env)),
    onJob: (result) => {
      if (result.status !== "unreachable") return;
      observer.clusterUnreachable(result.clusterId, result.reach);
      console.error(
        JSON.stringify({
          message: "cluster unreachable",
          clusterId: result.clusterId,
          reach: result.reach,
          detail: result.detail,
        }),
      );
    },
    onFailure: (clusterId, error) =>
      console.error(JSON.stringify({ message: "tick job failed", clusterId, error: error.message })),
  });
  ticker.start(
    (report) => {
      if (report.queued > 0 || report.failed > 0)
        console.log(JSON.stringify({ message: "tick", queued: report.queued, failed: report.failed }));
    },
    (error) => console.error(JSON.stringify({ message: "tick failed", error: error.message })),
  );
  return ticker;
}

export async function serveFromEnvironment(): Promise<void> {
  const options = optionsFromEnvironment(process.env);
  const server = await startLocalServer(options);
  const store = options.dynamoEndpoint
    ? `DynamoDB at ${options.dynamoEndpoint}`
    : `embedded store in ${options.dataDir}`;
  console.log(
    `leadership-pacer listening on ${server.url} (${store}, table ${options.tableName}${options.auth ? ", bearer-token auth on" : ""})`,
  );
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
