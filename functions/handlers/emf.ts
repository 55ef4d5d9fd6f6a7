import type { Logger } from "@aws-lambda-powertools/logger";
import { type Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { ManagedAnswer, RunObserver } from "../api/managed-run.ts";
import type { ReachFailure } from "../store/store.ts";

/**
 * The run metrics of SPEC §4 as CloudWatch metrics through the Embedded Metric Format, one EMF record per
 * run with the cluster id as the only dimension. Broker ids are unbounded, so per-broker counts go into
 * the record's metadata and the structured log, not into dimensions.
 *
 * Every record also has Powertools' `service` dimension.
 */
export class EmfObserver implements RunObserver {
  constructor(
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {}

  runCompleted(clusterId: string, answer: ManagedAnswer): void {
    const { metrics } = answer;
    const outOfSync = Object.values(metrics.outOfSyncPreferredPartitionCount).reduce((sum, n) => sum + n, 0);
    this.metrics.addDimension("ClusterId", clusterId);
    this.metrics.addMetric("Runs", MetricUnit.Count, 1);
    this.metrics.addMetric("DeferredRuns", MetricUnit.Count, answer.deferred === null ? 0 : 1);
    this.metrics.addMetric("Elections", MetricUnit.Count, metrics.electionCount);
    this.metrics.addMetric("ElectionsSkippedByGate", MetricUnit.Count, metrics.electionsSkippedByGate);
    this.metrics.addMetric(
      "ElectionsDeferredByThrottle",
      MetricUnit.Count,
      metrics.electionsDeferredByThrottle,
    );
    this.metrics.addMetric("GatedBrokerCount", MetricUnit.Count, metrics.gatedBrokerCount);
    this.metrics.addMetric("MaxWaitExpiredBrokerCount", MetricUnit.Count, metrics.maxWaitExpiredBrokerCount);
    this.metrics.addMetric("OutOfSyncPreferredPartitionCount", MetricUnit.Count, outOfSync);
    this.metrics.addMetadata("decisionId", answer.decisionId);
    this.metrics.addMetadata(
      "outOfSyncPreferredPartitionCountByBroker",
      JSON.stringify(metrics.outOfSyncPreferredPartitionCount),
    );
    this.metrics.publishStoredMetrics();
    // The same escape count once more without the cluster: one fleet-wide series that an alarm can watch
    // (CloudWatch alarms cannot aggregate across dimension values).
    this.metrics
      .singleMetric()
      .addMetric("FleetMaxWaitExpiredBrokerCount", MetricUnit.Count, metrics.maxWaitExpiredBrokerCount);
    this.logger.info("run completed", {
      clusterId,
      decisionId: answer.decisionId,
      stateVersion: answer.stateVersion,
      deferred: answer.deferred,
      elections: metrics.electionCount,
      moreWorkRemains: answer.moreWorkRemains,
      nextDelayMs: answer.nextDelayMs,
      gatedBrokers: answer.brokers.filter((b) => b.gated).map((b) => b.id),
      maxWaitExpiredBrokers: answer.brokers.filter((b) => b.reason === "max-wait-expired").map((b) => b.id),
      outOfSyncPreferredPartitionCount: metrics.outOfSyncPreferredPartitionCount,
    });
  }

  /**
   * A cluster the worker reaches itself could not be read: one per job, per cluster and once more
   * fleet-wide, where the alarm on clusters that cannot be reached watches.
   */
  clusterUnreachable(clusterId: string, reach: ReachFailure | undefined): void {
    this.metrics.addDimension("ClusterId", clusterId);
    this.metrics.addMetric("ClusterUnreachable", MetricUnit.Count, 1);
    this.metrics.addMetadata("reach", reach ?? "unreachable");
    this.metrics.publishStoredMetrics();
    this.metrics.singleMetric().addMetric("FleetClusterUnreachable", MetricUnit.Count, 1);
    this.logger.warn("cluster unreachable", { clusterId, reach });
  }
}
