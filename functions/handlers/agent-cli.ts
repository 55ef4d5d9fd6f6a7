import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { ConfigOverrides } from "../../schemas/config.ts";
import { validateWith } from "../../schemas/problems.ts";
import { type ClusterAccess, type RunReport, runAgent } from "../agent/agent.ts";
import { CatchUpThrottler } from "../agent/catch-up-throttle.ts";
import { ClientPropertiesError, parseProperties } from "../agent/client-properties.ts";
import { bearerFetch, type Fetch, PacerClient, sigV4Fetch } from "../agent/pacer-client.ts";
import { runScheduledAgent } from "../agent/scheduled.ts";
import { readCluster } from "../agent/snapshot.ts";
import { StoredThrottleRecord } from "../agent/throttle-record.ts";
import { createApi, DECISION_TTL_MS, IDEMPOTENCY_TTL_MS } from "../api/app.ts";
import { formatRun } from "../format/agent-run.ts";
import type { KafkaAdminClient } from "../kafka/admin.ts";
import { dynamoClient, ensureTable } from "../store/client.ts";
import { DynamoStore } from "../store/dynamo-store.ts";
import { startEmbeddedStore } from "../store/embedded.ts";
import { AgentMetrics } from "./agent-metrics.ts";
import { adminClientOf, bootstrapServersOf, setupFailure, UsageError } from "./kafka-args.ts";

export const AGENT_USAGE = `usage: pacer agent --bootstrap-server HOST:PORT[,…] (--embedded | --pacer-url URL --cluster-id ID) [options]
  --command-config FILE     Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config,
                            ssl.truststore.certificates|location (PEM), ssl.keystore.* (PEM), client.id,
                            request.timeout.ms
  --config FILE             pacing config: Kafka names, as a properties file or a JSON object
  --embedded                decide in this process, state in the embedded store under --data-dir
  --data-dir DIR            the embedded store's folder (default ./.pacer-agent); the store, embedded
                            or the service's, keeps the record of the catch-up throttles the agent set
  --pacer-url URL           the service; a bearer token from PACER_TOKEN, or --sigv4 (AWS_REGION) for
                            the deployed Function URL
  --cluster-id ID           the cluster's id at the service (default with --embedded: Kafka's cluster id)
  --scheduled               store snapshots and carry out the service's tick decisions
  --snapshot-interval-ms N  --scheduled: how often a snapshot is stored (default 5000)
  --once                    one run, then exit (status 1 if it failed): for cron
  --dry-run                 print each batch, elect nothing
  --read-lag-bytes          send each broker's bytes still to fetch (the max-lag-bytes gate's signal;
                            on whenever --config sets …wait.for.sync.max.lag.bytes)
  --metrics-port N          Prometheus metrics at http://127.0.0.1:N/metrics
  --json                    one JSON object per run instead of a line for a person`;

function readConfig(file: string | undefined): ConfigOverrides {
  if (!file) return {};
  const text = readFileSync(file, "utf8");
  const raw = text.trimStart().startsWith("{")
    ? (JSON.parse(text) as unknown)
    : Object.fromEntries(parseProperties(text));
  const valid = validateWith(ConfigOverrides, raw);
  if (!valid.ok)
    throw new UsageError(
      `--config ${file}: ${valid.problems.map((p) => `${p.pointer} ${p.detail}`).join("; ")}`,
    );
  return valid.value as ConfigOverrides;
}

export async function agentCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "bootstrap-server": { type: "string" },
      "command-config": { type: "string" },
      config: { type: "string" },
      embedded: { type: "boolean", default: false },
      "data-dir": { type: "string", default: "./.pacer-agent" },
      "pacer-url": { type: "string" },
      "cluster-id": { type: "string" },
      sigv4: { type: "boolean", default: false },
      scheduled: { type: "boolean", default: false },
      "snapshot-interval-ms": { type: "string", default: "5000" },
      once: { type: "boolean", default: false },
      "dry-run": { type: "boolean", default: false },
      "read-lag-bytes": { type: "boolean", default: false },
      "metrics-port": { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(AGENT_USAGE);
    return 0;
  }
  try {
    return await agent(values);
  } catch (error) {
    if (!(error instanceof UsageError || error instanceof ClientPropertiesError)) throw error;
    console.error(`pacer agent: ${error.message}\n${AGENT_USAGE}`);
    return 2;
  }
}

async function agent(values: {
  "bootstrap-server"?: string;
  "command-config"?: string;
  config?: string;
  embedded: boolean;
  "data-dir": string;
  "pacer-url"?: string;
  "cluster-id"?: string;
  sigv4: boolean;
  scheduled: boolean;
  "snapshot-interval-ms": string;
  once: boolean;
  "dry-run": boolean;
  "read-lag-bytes": boolean;
  "metrics-port"?: string;
  json: boolean;
}): Promise<number> {
  const servers = bootstrapServersOf(values["bootstrap-server"]);
  if (values.embedded === (values["pacer-url"] !== undefined))
    throw new UsageError("give exactly one of --embedded and --pacer-url");
  if (values.scheduled && values.embedded)
    throw new UsageError("--scheduled needs a service that ticks (--pacer-url)");
  if (values["pacer-url"] && !values["cluster-id"]) throw new UsageError("--pacer-url needs --cluster-id");
  const snapshotIntervalMs = Number(values["snapshot-interval-ms"]);
  if (!Number.isInteger(snapshotIntervalMs) || snapshotIntervalMs < 100)
    throw new UsageError("--snapshot-interval-ms must be an integer ≥ 100");
  const metricsPort = values["metrics-port"] === undefined ? undefined : Number(values["metrics-port"]);
  if (
    metricsPort !== undefined &&
    !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort < 65536)
  )
    throw new UsageError("--metrics-port must be a port number");

  const kafka = adminClientOf(servers, values["command-config"]);
  const config = readConfig(values.config);
  const readLagBytes =
    values["read-lag-bytes"] || (config["leader.imbalance.election.wait.for.sync.max.lag.bytes"] ?? 0) > 0;
  const cluster = clusterAccessOf(kafka, readLagBytes);

  const cleanups: (() => Promise<void>)[] = [() => kafka.close()];
  const stop = new AbortController();
  let catchUp: CatchUpThrottler | undefined;
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    const failure = await setupFailure(kafka);
    if (failure) {
      console.error(`pacer agent: ${failure}; nothing elected`);
      return 1;
    }
    const pacer = await connectToPacer(values, kafka, cleanups);
    // The record of what is throttled lives in the pacer's store: each run reads it, and a run that
    // cannot sets nothing and says so.
    catchUp = new CatchUpThrottler(kafka, new StoredThrottleRecord(pacer));

    const metrics = new AgentMetrics();
    if (metricsPort !== undefined) {
      const server = await metrics.serve(metricsPort);
      cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
      console.error(`metrics on http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
    }
    const observer = {
      run(report: RunReport) {
        metrics.run(report);
        console.log(values.json ? JSON.stringify(report) : formatRun(report));
      },
      skipped(decision: { decisionId: string }, ageMs: number) {
        console.log(
          `decision ${decision.decisionId} skipped: made ${Math.round(ageMs / 1000)} s ago, too old to carry out`,
        );
      },
    };
    const dryRun = values["dry-run"];
    if (values.scheduled) {
      const ran = await runScheduledAgent({
        storeConfig: values.config !== undefined,
        cluster,
        pacer,
        config,
        dryRun,
        observer,
        signal: stop.signal,
        catchUp,
        snapshotIntervalMs,
        maxDecisionAgeMs: 60_000,
      });
      return ran ? 0 : 1;
    }
    const ok = await runAgent({
      cluster,
      pacer,
      config,
      dryRun,
      once: values.once,
      observer,
      signal: stop.signal,
      catchUp,
    });
    return ok ? 0 : 1;
  } finally {
    // Stopped by a signal: nothing of ours stays throttled behind us. `--once` (cron) leaves what the
    // run set for the next run to keep or lift.
    if (stop.signal.aborted && !values["dry-run"] && catchUp) await liftOnExit(catchUp);
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  }
}

/** Lifts every catch-up throttle the record holds, and says so. */
async function liftOnExit(catchUp: CatchUpThrottler): Promise<void> {
  try {
    if (!(await catchUp.holdsAny())) return;
    const report = await catchUp.liftAll();
    const lifted = report.lifted.length ? `broker ${report.lifted.join(", broker ")}` : "replica lists only";
    console.log(
      report.errors.length
        ? `stopping: catch-up throttle not all lifted (${report.errors.join("; ")}); the next start lifts the rest`
        : `stopping: catch-up throttle lifted (${lifted})`,
    );
  } catch (error) {
    console.error(`stopping: catch-up throttle not lifted: ${(error as Error).message}`);
  }
}

/**
 * The cluster as the agent's runs see it: one read of three admin calls (four with the replicas' sizes
 * for the max-lag-bytes gate), and the elections.
 */
function clusterAccessOf(kafka: KafkaAdminClient, readLagBytes: boolean): ClusterAccess {
  return {
    read: () => readCluster(kafka, readLagBytes),
    electPreferred: (partitions) => kafka.electPreferred(partitions),
  };
}

/**
 * Where decisions come from: the app itself in this process over an embedded store (`--embedded`),
 * or the service at `--pacer-url`, with SigV4 or a bearer token.
 */
async function connectToPacer(
  values: {
    embedded: boolean;
    "data-dir": string;
    "pacer-url"?: string;
    "cluster-id"?: string;
    sigv4: boolean;
  },
  kafka: KafkaAdminClient,
  cleanups: (() => Promise<void>)[],
): Promise<PacerClient> {
  if (values.embedded) {
    const embedded = await startEmbeddedStore({ dataDir: values["data-dir"] });
    const client = dynamoClient({ endpoint: embedded.endpoint });
    cleanups.unshift(async () => {
      client.destroy();
      await embedded.close();
    });
    await ensureTable(client, "leadership-pacer");
    const app = createApi({
      store: new DynamoStore(client, "leadership-pacer"),
      decisionTtlMs: DECISION_TTL_MS,
      idempotencyTtlMs: IDEMPOTENCY_TTL_MS,
    });
    const clusterId = values["cluster-id"] ?? (await kafkaClusterId(kafka));
    return new PacerClient("http://embedded", clusterId, async (request) => app.fetch(request));
  }
  let send: Fetch;
  if (values.sigv4) {
    const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
    if (!region) throw new UsageError("--sigv4 needs AWS_REGION");
    send = sigV4Fetch(region);
  } else {
    send = process.env.PACER_TOKEN ? bearerFetch(process.env.PACER_TOKEN) : (r) => fetch(r);
  }
  return new PacerClient(values["pacer-url"] as string, values["cluster-id"] as string, send);
}

/** Kafka's own cluster id, the embedded agent's default cluster id; retried until the cluster answers. */
async function kafkaClusterId(kafka: KafkaAdminClient): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await kafka.describeCluster()).clusterId;
    } catch (error) {
      if (attempt >= 4)
        throw new UsageError(`cannot read the cluster id (give --cluster-id): ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 1000 * 2 ** attempt));
    }
  }
}
