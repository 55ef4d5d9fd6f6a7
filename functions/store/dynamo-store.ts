import { DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import * as clusters from "./dynamo/clusters.ts";
import * as connections from "./dynamo/connections.ts";
import * as decisions from "./dynamo/decisions.ts";
import * as fleet from "./dynamo/fleet.ts";
import * as idempotency from "./dynamo/idempotency.ts";
import { guarded, type Table } from "./dynamo/items.ts";
import * as snapshots from "./dynamo/snapshots.ts";
import * as throttleRecords from "./dynamo/throttle-records.ts";
import type { PacerStore } from "./store.ts";

export { SnapshotTooLargeError } from "./dynamo/snapshots.ts";

/**
 * The store on DynamoDB: one table, each cluster's items under one partition key. Each kind of item
 * has a module of its own under dynamo/ (the cluster item, decisions, idempotency records, snapshots,
 * catch-up throttle records, connections, the fleet's config); this class only hands each operation its table.
 */
export class DynamoStore implements PacerStore {
  private readonly table: Table;

  constructor(client: DynamoDBClient, tableName: string) {
    this.table = { client, tableName };
  }

  getCluster(...args: Parameters<PacerStore["getCluster"]>) {
    return clusters.getCluster(this.table, ...args);
  }

  getClusterAndFleet(...args: Parameters<PacerStore["getClusterAndFleet"]>) {
    return clusters.getClusterAndFleet(this.table, ...args);
  }

  saveRun(...args: Parameters<PacerStore["saveRun"]>) {
    return clusters.saveRun(this.table, ...args);
  }

  putConfig(...args: Parameters<PacerStore["putConfig"]>) {
    return clusters.putConfig(this.table, ...args);
  }

  deleteCluster(...args: Parameters<PacerStore["deleteCluster"]>) {
    return clusters.deleteCluster(this.table, ...args);
  }

  resetState(...args: Parameters<PacerStore["resetState"]>) {
    return clusters.resetState(this.table, ...args);
  }

  listClusters(...args: Parameters<PacerStore["listClusters"]>) {
    return clusters.listClusters(this.table, ...args);
  }

  recordDeferred(...args: Parameters<PacerStore["recordDeferred"]>) {
    return clusters.recordDeferred(this.table, ...args);
  }

  getThrottleRecord(...args: Parameters<PacerStore["getThrottleRecord"]>) {
    return throttleRecords.getThrottleRecord(this.table, ...args);
  }

  putThrottleRecord(...args: Parameters<PacerStore["putThrottleRecord"]>) {
    return throttleRecords.putThrottleRecord(this.table, ...args);
  }

  getConnection(...args: Parameters<PacerStore["getConnection"]>) {
    return connections.getConnection(this.table, ...args);
  }

  putConnection(...args: Parameters<PacerStore["putConnection"]>) {
    return connections.putConnection(this.table, ...args);
  }

  deleteConnection(...args: Parameters<PacerStore["deleteConnection"]>) {
    return connections.deleteConnection(this.table, ...args);
  }

  recordTick(...args: Parameters<PacerStore["recordTick"]>) {
    return clusters.recordTick(this.table, ...args);
  }

  recordCarriedOut(...args: Parameters<PacerStore["recordCarriedOut"]>) {
    return clusters.recordCarriedOut(this.table, ...args);
  }

  putDecision(...args: Parameters<PacerStore["putDecision"]>) {
    return decisions.putDecision(this.table, ...args);
  }

  listDecisions(...args: Parameters<PacerStore["listDecisions"]>) {
    return decisions.listDecisions(this.table, ...args);
  }

  getDecision(...args: Parameters<PacerStore["getDecision"]>) {
    return decisions.getDecision(this.table, ...args);
  }

  claimIdempotency(...args: Parameters<PacerStore["claimIdempotency"]>) {
    return idempotency.claimIdempotency(this.table, ...args);
  }

  stageIdempotency(...args: Parameters<PacerStore["stageIdempotency"]>) {
    return idempotency.stageIdempotency(this.table, ...args);
  }

  commitIdempotency(...args: Parameters<PacerStore["commitIdempotency"]>) {
    return idempotency.commitIdempotency(this.table, ...args);
  }

  takeOverIdempotency(...args: Parameters<PacerStore["takeOverIdempotency"]>) {
    return idempotency.takeOverIdempotency(this.table, ...args);
  }

  releaseIdempotency(...args: Parameters<PacerStore["releaseIdempotency"]>) {
    return idempotency.releaseIdempotency(this.table, ...args);
  }

  getFleetConfig(...args: Parameters<PacerStore["getFleetConfig"]>) {
    return fleet.getFleetConfig(this.table, ...args);
  }

  putFleetConfig(...args: Parameters<PacerStore["putFleetConfig"]>) {
    return fleet.putFleetConfig(this.table, ...args);
  }

  putSnapshot(...args: Parameters<PacerStore["putSnapshot"]>) {
    return snapshots.putSnapshot(this.table, ...args);
  }

  getSnapshot(...args: Parameters<PacerStore["getSnapshot"]>) {
    return snapshots.getSnapshot(this.table, ...args);
  }

  async ping() {
    await guarded(() =>
      this.table.client.send(new DescribeTableCommand({ TableName: this.table.tableName })),
    );
  }
}
