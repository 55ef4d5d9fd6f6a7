import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { ConfigOverrides } from "../../schemas/config.ts";
import { validateWith } from "../../schemas/problems.ts";
import { type AgentObserver, type ClusterAccess, type RunReport, runAgent } from "../agent/agent.ts";
import { ClientPropertiesError, clientOptionsOf, parseProperties } from "../agent/client-properties.ts";
import { bearerFetch, type Fetch, PacerClient, sigV4Fetch } from "../agent/pacer-client.ts";
import { runScheduledAgent } from "../agent/scheduled.ts";
import { createApp, DECISION_TTL_MS, IDEMPOTENCY_TTL_MS } from "../api/app.ts";
import { KafkaAdminClient, parseHostPort } from "../kafka/admin.ts";
import { dynamoClient, ensureTable } from "../store/client.ts";
import { DynamoStore } from "../store/dynamo-store.ts";
import { startEmbeddedStore } from "../store/embedded.ts";

export const AGENT_USAGE = `usage: pacer agent --bootstrap-server HOST:PORT[,…] (--embedded | --pacer-url URL --cluster-id ID) [options]
  --command-config FILE     Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config,
                            ssl.truststore.certificates|location (PEM), ssl.keystore.* (PEM), client.id,
                            request.timeout.ms
  --config FILE             pacing config: Kafka names, as a properties file or a JSON object
  --embedded                decide in this process, state in the embedded store under --data-dir
  --data-dir DIR            the embedded store's folder (default ./.pacer-agent)
  --pacer-url URL           the service; a bearer token from PACER_TOKEN, or --sigv4 (AWS_REGION) for
                            the deployed Function URL
  --cluster-id ID           the cluster's id at the service (default with --embedded: Kafka's cluster id)
  --scheduled               store snapshots and carry out the service's tick decisions
  --snapshot-interval-ms N  --scheduled: how often a snapshot is stored (default 5000)
  --once                    one run, then exit (status 1 if it failed): for cron
  --dry-run                 print each batch, elect nothing
  --metrics-port N          Prometheus metrics at http://127.0.0.1:N/metrics
  --json                    one JSON object per run instead of a line for a person`;

class UsageError extends Error {}

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

/** The line a person reads for each run. */
export function formatRun(report: RunReport): string {
  const time = new Date(report.atMs).toISOString();
  if (report.error !== undefined) return `${time} run failed, nothing elected: ${report.error}`;
  const e = report.elections;
  const failed = Object.values(e.failed).reduce((a, b) => a + b, 0);
  const codes = Object.entries(e.failed).map(([code, n]) => `${n}×${code}`);
  const parts = [
    report.dryRun
      ? `asked ${e.asked} (dry run: nothing elected)`
      : `asked ${e.asked}, done ${e.done}, not needed ${e.notNeeded}, failed ${failed}${codes.length ? ` (${codes.join(", ")})` : ""}`,
  ];
  if (e.requestError) parts.push(`request failed: ${e.requestError}`);
  if (report.deferred) parts.push(`deferred: ${report.deferred}`);
  parts.push(
    report.heldBack.length
      ? `held back: ${report.heldBack.map((b) => `broker ${b.id} ${b.reason} (${b.outOfSync}/${b.total} out of sync)`).join(", ")}`
      : "held back: none",
  );
  parts.push(`next in ${(report.nextDelayMs / 1000).toFixed(report.nextDelayMs < 10_000 ? 1 : 0)} s`);
  return `${time} ${parts.join("; ")}`;
}

class AgentMetrics implements AgentObserver {
  readonly registry = new Registry();
  private readonly runs = new Counter({
    name: "leadership_pacer_agent_runs_total",
    help: "Agent runs, by outcome (ok, failed)",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  private readonly elections = new Counter({
    name: "leadership_pacer_agent_elections_total",
    help: "Preferred-leader elections carried out, by result (done, not_needed, failed_<code>, request_failed)",
    labelNames: ["result"],
    registers: [this.registry],
  });
  private readonly asked = new Counter({
    name: "leadership_pacer_agent_elections_asked_total",
    help: "Elections the pacer returned",
    registers: [this.registry],
  });
  private readonly heldBack = new Gauge({
    name: "leadership_pacer_agent_brokers_held_back",
    help: "Brokers the gate held back in the last run",
    registers: [this.registry],
  });
  private readonly lastRun = new Gauge({
    name: "leadership_pacer_agent_last_run_timestamp_seconds",
    help: "When the last successful run started",
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: "leadership_pacer_agent_run_duration_seconds",
    help: "A run's metadata read, decision and elections",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  run(report: RunReport): void {
    this.runs.inc({ outcome: report.error === undefined ? "ok" : "failed" });
    if (report.error !== undefined) return;
    const e = report.elections;
    this.asked.inc(e.asked);
    if (!report.dryRun) {
      this.elections.inc({ result: "done" }, e.done);
      this.elections.inc({ result: "not_needed" }, e.notNeeded);
      for (const [code, n] of Object.entries(e.failed)) this.elections.inc({ result: `failed_${code}` }, n);
      if (e.requestError) this.elections.inc({ result: "request_failed" }, e.asked);
    }
    this.heldBack.set(report.heldBack.length);
    this.lastRun.set(report.atMs / 1000);
    this.duration.observe(report.durationMs / 1000);
  }

  async serve(port: number): Promise<Server> {
    const server = createServer(async (request, response) => {
      if (request.url !== "/metrics") {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": this.registry.contentType });
      response.end(await this.registry.metrics());
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    return server;
  }
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
  "metrics-port"?: string;
  json: boolean;
}): Promise<number> {
  const servers = (values["bootstrap-server"] ?? "").split(",").filter((s) => s.trim() !== "");
  if (servers.length === 0) throw new UsageError("--bootstrap-server is required");
  for (const server of servers) {
    try {
      parseHostPort(server);
    } catch (error) {
      throw new UsageError(`--bootstrap-server: ${(error as Error).message}`);
    }
  }
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

  const properties = values["command-config"]
    ? parseProperties(readFileSync(values["command-config"], "utf8"))
    : new Map<string, string>();
  const kafka = new KafkaAdminClient({
    bootstrapServers: servers,
    ...clientOptionsOf(properties, (path) => readFileSync(path, "utf8")),
  });
  const config = readConfig(values.config);
  const cluster: ClusterAccess = {
    async read() {
      const { brokers } = await kafka.describeCluster();
      const partitions = await kafka.describePartitions();
      const reassigning = await kafka.listReassignments();
      return { brokers, partitions, reassigning };
    },
    electPreferred: (partitions) => kafka.electPreferred(partitions),
  };

  const cleanups: (() => Promise<void>)[] = [() => kafka.close()];
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    let send: Fetch;
    let clusterId = values["cluster-id"];
    let baseUrl = values["pacer-url"] ?? "http://embedded";
    if (values.embedded) {
      const embedded = await startEmbeddedStore({ dataDir: values["data-dir"] });
      const client = dynamoClient({ endpoint: embedded.endpoint });
      cleanups.unshift(async () => {
        client.destroy();
        await embedded.close();
      });
      await ensureTable(client, "leadership-pacer");
      const app = createApp({
        store: new DynamoStore(client, "leadership-pacer"),
        decisionTtlMs: DECISION_TTL_MS,
        idempotencyTtlMs: IDEMPOTENCY_TTL_MS,
      });
      send = async (request) => app.fetch(request);
      clusterId ??= await kafkaClusterId(kafka);
      baseUrl = "http://embedded";
    } else if (values.sigv4) {
      const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
      if (!region) throw new UsageError("--sigv4 needs AWS_REGION");
      send = sigV4Fetch(region);
    } else {
      send = process.env.PACER_TOKEN ? bearerFetch(process.env.PACER_TOKEN) : (r) => fetch(r);
    }
    const pacer = new PacerClient(baseUrl, clusterId as string, send);

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
      await runScheduledAgent({
        storeConfig: values.config !== undefined,
        cluster,
        pacer,
        config,
        dryRun,
        observer,
        signal: stop.signal,
        snapshotIntervalMs,
        maxDecisionAgeMs: 60_000,
      });
      return 0;
    }
    const ok = await runAgent({
      cluster,
      pacer,
      config,
      dryRun,
      once: values.once,
      observer,
      signal: stop.signal,
    });
    return ok ? 0 : 1;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  }
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
