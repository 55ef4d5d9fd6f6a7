import { createServer, type Server } from "node:http";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { AgentObserver, FailedStep, RunReport } from "../agent/agent.ts";

/** The `step` label of a failed run. */
const STEP_LABELS: Record<FailedStep, string> = {
  "reading the cluster": "cluster",
  "asking the pacer": "pacer",
};

/** The agent's runs as Prometheus metrics, served on `--metrics-port`. */
export class AgentMetrics implements AgentObserver {
  readonly registry = new Registry();
  private readonly runs = new Counter({
    name: "leadership_pacer_agent_runs_total",
    help: "Agent runs, by outcome (ok, failed)",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  private readonly failedRuns = new Counter({
    name: "leadership_pacer_agent_failed_runs_total",
    help: "Runs that elected nothing because a step failed, by step (cluster: reading it; pacer: asking it)",
    labelNames: ["step"],
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

  private readonly throttleRate = new Gauge({
    name: "leadership_pacer_agent_catch_up_throttle_bytes_per_second",
    help: "Catch-up pacing: the follower replication rate the agent holds on a broker catching up (absent when none)",
    labelNames: ["broker"],
    registers: [this.registry],
  });
  private readonly throttledReplicas = new Gauge({
    name: "leadership_pacer_agent_catch_up_throttled_replicas",
    help: "Catch-up pacing: a throttled broker's replicas still outside the ISR",
    labelNames: ["broker"],
    registers: [this.registry],
  });
  private readonly throttleErrors = new Counter({
    name: "leadership_pacer_agent_catch_up_throttle_errors_total",
    help: "Catch-up pacing: steps that could not be carried out (tried again next run)",
    registers: [this.registry],
  });

  run(report: RunReport): void {
    this.runs.inc({ outcome: report.error === undefined ? "ok" : "failed" });
    if (report.error !== undefined) {
      this.failedRuns.inc({ step: report.failedStep ? STEP_LABELS[report.failedStep] : "unknown" });
      return;
    }
    const e = report.elections;
    this.asked.inc(e.asked);
    if (!report.dryRun) {
      this.elections.inc({ result: "done" }, e.done);
      this.elections.inc({ result: "not_needed" }, e.notNeeded);
      for (const [code, n] of Object.entries(e.failed)) this.elections.inc({ result: `failed_${code}` }, n);
      if (e.requestError) this.elections.inc({ result: "request_failed" }, e.asked);
    }
    this.heldBack.set(report.heldBack.length);
    if (report.catchUp && !report.dryRun) {
      this.throttleRate.reset();
      this.throttledReplicas.reset();
      for (const t of report.catchUp.throttled) {
        this.throttleRate.set({ broker: String(t.broker) }, t.rateBytesPerSecond);
        this.throttledReplicas.set({ broker: String(t.broker) }, t.replicas);
      }
      this.throttleErrors.inc(report.catchUp.errors.length);
    }
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
