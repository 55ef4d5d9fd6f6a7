import { Counter, Gauge, Registry } from "prom-client";
import type { ManagedAnswer, RunObserver } from "../api/managed-run.ts";
import type { ReachFailure } from "../store/store.ts";

/** The run metrics of SPEC §4 as Prometheus counters and gauges, for the local server's GET /metrics. */
export class PrometheusObserver implements RunObserver {
  readonly registry = new Registry();
  private readonly runs = this.counter("leadership_pacer_runs_total", "Managed runs, by outcome", [
    "cluster",
    "outcome",
  ]);
  private readonly elections = this.counter(
    "leadership_pacer_elections_total",
    "Preferred-leader elections returned",
  );
  private readonly skippedByGate = this.counter(
    "leadership_pacer_elections_skipped_by_gate_total",
    "Eligible elections held back by the gate",
  );
  private readonly deferredByThrottle = this.counter(
    "leadership_pacer_elections_deferred_by_throttle_total",
    "Eligible elections deferred by the cap or the throttle",
  );
  private readonly maxWaitExpired = this.counter(
    "leadership_pacer_max_wait_expired_total",
    "Brokers let through by the max-wait escape hatch (a broker that never caught up)",
  );
  private readonly unreachable = this.counter(
    "leadership_pacer_cluster_unreachable_total",
    "Tick jobs that could not read a cluster the worker reaches itself, by why",
    ["cluster", "reach"],
  );
  private readonly gatedBrokers = new Gauge({
    name: "leadership_pacer_gated_brokers",
    help: "Brokers the gate held back in the cluster's last run",
    labelNames: ["cluster"],
    registers: [this.registry],
  });
  private readonly outOfSync = new Gauge({
    name: "leadership_pacer_out_of_sync_preferred_partitions",
    help: "Per broker with imbalanced preferred partitions: those it is not in sync on",
    labelNames: ["cluster", "broker"],
    registers: [this.registry],
  });

  private counter(name: string, help: string, labelNames: string[] = ["cluster"]) {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** Brokers each cluster last reported, so that a broker that left its group stops being reported. */
  private readonly reportedBrokers = new Map<string, string[]>();

  runCompleted(cluster: string, answer: ManagedAnswer): void {
    const { metrics } = answer;
    this.runs.inc({ cluster, outcome: answer.deferred ?? "ran" });
    this.deferredByThrottle.inc({ cluster }, metrics.electionsDeferredByThrottle);
    // A run that did not happen evaluated no gate: the gauges keep the last run's values.
    if (answer.deferred !== null) return;
    this.elections.inc({ cluster }, metrics.electionCount);
    this.skippedByGate.inc({ cluster }, metrics.electionsSkippedByGate);
    this.maxWaitExpired.inc({ cluster }, metrics.maxWaitExpiredBrokerCount);
    this.gatedBrokers.set({ cluster }, metrics.gatedBrokerCount);
    for (const broker of this.reportedBrokers.get(cluster) ?? []) this.outOfSync.remove({ cluster, broker });
    const brokers = Object.entries(metrics.outOfSyncPreferredPartitionCount);
    for (const [broker, count] of brokers) this.outOfSync.set({ cluster, broker }, count);
    this.reportedBrokers.set(
      cluster,
      brokers.map(([broker]) => broker),
    );
  }

  clusterUnreachable(cluster: string, reach: ReachFailure | undefined): void {
    this.unreachable.inc({ cluster, reach: reach ?? "unreachable" });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
