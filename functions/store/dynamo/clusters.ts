import { setTimeout as delay } from "node:timers/promises";
import {
  type AttributeValue,
  BatchGetItemCommand,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { ConfigOverrides } from "../../../schemas/config.ts";
import type { ClusterRecord, DecisionSummary, DeferredRun, PacerStore, Page, TickOutcome } from "../store.ts";
import { TABLE } from "../table.ts";
import { FLEET_KEY } from "./fleet.ts";
import {
  clusterKey,
  conditionally,
  deleteIfExists,
  guarded,
  IDENTITY,
  identityValues,
  json,
  n,
  num,
  parsed,
  s,
  type Table,
} from "./items.ts";

/** The cluster item: its run state and version, its config, its last decision, tick and snapshot. */

function clusterOf(item: Record<string, AttributeValue>): ClusterRecord {
  return {
    clusterId: item[TABLE.clustersIndexSortKey]?.S ?? "",
    version: num(item, "version"),
    state: parsed(item, "state", null),
    config: parsed(item, "config", {}),
    lastDecision: parsed(item, "lastDecision", null),
    snapshot: parsed(item, "snapshot", null),
    lastTick: parsed(item, "lastTick", null),
    lastTickKey: item.lastTickKey?.S ?? null,
    connected: item.connected?.BOOL === true,
    deferredRuns: num(item, "deferredRuns"),
    lastDeferred: parsed(item, "lastDeferred", null),
    createdAtMs: num(item, "createdAtMs"),
    updatedAtMs: num(item, "updatedAtMs"),
  };
}

export function getCluster(table: Table, clusterId: string) {
  return guarded(async () => {
    const { Item } = await table.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: clusterKey(clusterId), ConsistentRead: true }),
    );
    return Item ? clusterOf(Item) : null;
  });
}

export function getClusterAndFleet(table: Table, clusterId: string) {
  return guarded(async () => {
    let keys = [clusterKey(clusterId), FLEET_KEY];
    const items: Record<string, AttributeValue>[] = [];
    for (let attempt = 0; keys.length > 0; attempt++) {
      if (attempt === 5) throw new Error("BatchGetItem left the cluster and fleet items unprocessed");
      // Unprocessed keys mean throttling: back off before asking again.
      if (attempt > 0) await delay(25 * 2 ** attempt);
      const { Responses, UnprocessedKeys } = await table.client.send(
        new BatchGetItemCommand({
          RequestItems: { [table.tableName]: { Keys: keys, ConsistentRead: true } },
        }),
      );
      items.push(...(Responses?.[table.tableName] ?? []));
      keys = (UnprocessedKeys?.[table.tableName]?.Keys ?? []) as typeof keys;
    }
    const fleet = items.find((item) => item[TABLE.partitionKey]?.S === FLEET_KEY[TABLE.partitionKey].S);
    const cluster = items.find((item) => item !== fleet);
    return {
      cluster: cluster ? clusterOf(cluster) : null,
      fleetConfig: fleet ? parsed<ConfigOverrides>(fleet, "config", {}) : {},
    };
  });
}

export async function saveRun(
  table: Table,
  clusterId: string,
  expectedVersion: number,
  run: Parameters<PacerStore["saveRun"]>[2],
) {
  const versionHolds =
    expectedVersion === 0 ? "(attribute_not_exists(version) OR version = :expected)" : "version = :expected";
  // A tick's run: no run of this tick key or a later one was saved (a redelivered job, a stale ramp).
  const tick = run.tick
    ? {
        set: ", lastTick = :tick, lastTickKey = :tickKey",
        condition: " AND (attribute_not_exists(lastTickKey) OR lastTickKey < :tickKey)",
        values: { ":tick": json(run.tick.outcome), ":tickKey": s(run.tick.key) },
      }
    : { set: "", condition: "", values: {} as Record<string, AttributeValue> };
  return conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: `SET #state = :state, version = :next, lastDecision = :decision${tick.set}, ${IDENTITY}`,
        ConditionExpression: versionHolds + tick.condition,
        ExpressionAttributeNames: { "#state": "state" },
        ExpressionAttributeValues: {
          ":state": json(run.state),
          ":decision": json(run.lastDecision),
          ":next": n(expectedVersion + 1),
          ":expected": n(expectedVersion),
          ...tick.values,
          ...identityValues(clusterId, run.nowMs),
        },
      }),
    ),
  );
}

export async function putConfig(table: Table, clusterId: string, config: ConfigOverrides, nowMs: number) {
  await guarded(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: `SET config = :config, ${IDENTITY}`,
        ExpressionAttributeValues: { ":config": json(config), ...identityValues(clusterId, nowMs) },
      }),
    ),
  );
}

export function deleteCluster(table: Table, clusterId: string) {
  return deleteIfExists(table, clusterKey(clusterId));
}

export async function resetState(table: Table, clusterId: string, nowMs: number) {
  return conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        // The version still goes up, so that a run that read the old state cannot save over the reset.
        UpdateExpression:
          "REMOVE #state SET version = if_not_exists(version, :zero) + :one, updatedAtMs = :now",
        ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
        ExpressionAttributeNames: { "#state": "state" },
        ExpressionAttributeValues: { ":zero": n(0), ":one": n(1), ":now": n(nowMs) },
      }),
    ),
  );
}

export function listClusters(table: Table, limit: number, cursor?: string) {
  return guarded(async (): Promise<Page<ClusterRecord>> => {
    const result = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        IndexName: TABLE.clustersIndex,
        KeyConditionExpression: `${TABLE.clustersIndexPartitionKey} = :kind`,
        ExpressionAttributeValues: { ":kind": s("cluster") },
        Limit: limit,
        ExclusiveStartKey: cursor ? JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) : undefined,
      }),
    );
    const next = result.LastEvaluatedKey;
    return {
      items: (result.Items ?? []).map(clusterOf),
      ...(next ? { cursor: Buffer.from(JSON.stringify(next)).toString("base64url") } : {}),
    };
  });
}

export async function recordDeferred(table: Table, clusterId: string, deferred: DeferredRun) {
  await conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: "ADD deferredRuns :one SET lastDeferred = :deferred",
        ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
        ExpressionAttributeValues: { ":one": n(1), ":deferred": json(deferred) },
      }),
    ),
  );
}

export async function recordTick(table: Table, clusterId: string, outcome: TickOutcome) {
  await conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: "SET lastTick = :tick",
        ConditionExpression: `attribute_exists(${TABLE.partitionKey})`,
        ExpressionAttributeValues: { ":tick": json(outcome) },
      }),
    ),
  );
}

export function recordCarriedOut(
  table: Table,
  clusterId: string,
  version: number,
  lastDecision: DecisionSummary,
  outcome: TickOutcome,
) {
  return conditionally(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: clusterKey(clusterId),
        UpdateExpression: "SET lastDecision = :decision, lastTick = :tick",
        ConditionExpression: "version = :version",
        ExpressionAttributeValues: {
          ":decision": json(lastDecision),
          ":tick": json(outcome),
          ":version": n(version),
        },
      }),
    ),
  );
}
