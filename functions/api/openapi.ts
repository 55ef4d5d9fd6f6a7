import * as z from "zod";
import { RunAnswer } from "../../schemas/answer.ts";
import { ConfigOverrides } from "../../schemas/config.ts";
import { ClusterConnection } from "../../schemas/connection.ts";
import { ProblemDetails } from "../../schemas/problems.ts";
import { ClusterId, EvaluateRequest, ManagedEvaluateRequest } from "../../schemas/request.ts";
import { Snapshot } from "../../schemas/snapshot.ts";
import { PacerState } from "../../schemas/state.ts";
import { VersionedThrottleRecord } from "../../schemas/throttle-record.ts";
import {
  BrokerReadinessView,
  ClusterView,
  DecisionList,
  FleetConfigView,
  FleetListing,
  ManagedAnswer,
  SnapshotMeta,
} from "./views.ts";

/** The OpenAPI document, generated from the same zod schemas that validate and type the service. */

export const REF = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** Every schema with an id, as OpenAPI components: inputs as accepted, outputs as sent. */
function components(): Record<string, unknown> {
  const defsOf = (schema: z.ZodType, io: "input" | "output") =>
    (z.toJSONSchema(schema, { io, target: "openapi-3.0" }) as { definitions?: Record<string, unknown> })
      .definitions ?? {};
  const inputs = defsOf(
    z.object({
      EvaluateRequest,
      ManagedEvaluateRequest,
      ConfigOverrides,
      Snapshot,
      PacerState,
      ClusterId,
      VersionedCatchUpThrottleRecord: VersionedThrottleRecord,
      ClusterConnection,
    }),
    "input",
  );
  const outputs = defsOf(
    z.object({
      RunAnswer,
      ManagedAnswer,
      ClusterView,
      FleetListing,
      DecisionList,
      ProblemDetails,
      SnapshotMeta,
      FleetConfigView,
      BrokerReadiness: BrokerReadinessView,
    }),
    "output",
  );
  const merged = JSON.stringify({ ...outputs, ...inputs }).replaceAll(
    '"#/definitions/',
    '"#/components/schemas/',
  );
  return JSON.parse(merged);
}

const json = (id: string) => ({ content: { "application/json": { schema: REF(id) } } });
const problems = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [
      String(status),
      {
        description: "A problem",
        content: { "application/problem+json": { schema: REF("ProblemDetails") } },
      },
    ]),
  );
const clusterIdParameter = { name: "clusterId", in: "path", required: true, schema: REF("ClusterId") };

/** The document; `pages`: the routes of pages served beside the API (the console's), to list too. */
export function openApiDocument(pages: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    openapi: "3.0.3",
    info: {
      title: "leadership-pacer",
      version: "1",
      description:
        "Paces preferred-leader elections for recovering Kafka brokers: a gate, a throttle and round-robin fairness.",
    },
    paths: {
      "/v1/evaluate": {
        post: {
          summary: "One run, pure: the caller passes the state back next time",
          parameters: [{ name: "explain", in: "query", schema: { type: "string", enum: ["partitions"] } }],
          requestBody: { required: true, ...json("EvaluateRequest") },
          responses: {
            200: { description: "The run's answer", ...json("RunAnswer") },
            ...problems(400, 401, 413, 415),
          },
        },
      },
      "/v1/clusters/{clusterId}/evaluate": {
        post: {
          summary: "One managed run: state loaded from and saved to the store",
          parameters: [
            clusterIdParameter,
            { name: "dryRun", in: "query", schema: { type: "boolean" } },
            { name: "explain", in: "query", schema: { type: "string", enum: ["partitions"] } },
            { name: "Idempotency-Key", in: "header", schema: { type: "string", maxLength: 255 } },
          ],
          requestBody: { required: true, ...json("ManagedEvaluateRequest") },
          responses: {
            200: { description: "The run's answer", ...json("ManagedAnswer") },
            ...problems(400, 401, 403, 409, 413, 415, 422, 503, 507),
          },
        },
      },
      "/v1/clusters": {
        get: {
          summary: "The fleet: one row per cluster",
          parameters: [
            { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 1000 } },
            { name: "cursor", in: "query", schema: { type: "string" } },
          ],
          responses: { 200: { description: "Clusters", ...json("FleetListing") }, ...problems(401, 503) },
        },
      },
      "/v1/clusters/{clusterId}": {
        get: {
          summary: "A cluster: effective config, gate state, last run",
          parameters: [clusterIdParameter],
          responses: {
            200: { description: "The cluster", ...json("ClusterView") },
            ...problems(401, 403, 404, 503),
          },
        },
        delete: {
          summary: "Remove a cluster from the fleet (its decisions stay readable until they expire)",
          parameters: [clusterIdParameter],
          responses: { 204: { description: "Removed" }, ...problems(400, 401, 403, 404, 503) },
        },
      },
      "/v1/clusters/{clusterId}/config": {
        put: {
          summary: "Replace the cluster's stored configuration",
          parameters: [clusterIdParameter],
          requestBody: { required: true, ...json("ConfigOverrides") },
          responses: {
            200: { description: "The cluster", ...json("ClusterView") },
            ...problems(400, 401, 403, 415, 503),
          },
        },
      },
      "/v1/clusters/{clusterId}/state": {
        delete: {
          summary: "Forget the gate state, like a controller failover",
          parameters: [clusterIdParameter],
          responses: { 204: { description: "Forgotten" }, ...problems(401, 403, 404, 503) },
        },
      },
      "/v1/clusters/{clusterId}/decisions": {
        get: {
          summary: "Recent decisions, newest first",
          parameters: [
            clusterIdParameter,
            { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100 } },
            {
              name: "after",
              in: "query",
              schema: { type: "string" },
              description: "Only decisions newer than this id",
            },
          ],
          responses: {
            200: { description: "Decisions", ...json("DecisionList") },
            ...problems(400, 401, 403, 503),
          },
        },
      },
      "/v1/clusters/{clusterId}/brokers/{brokerId}": {
        get: {
          summary:
            "Whether a broker is back after a restart, from the cluster's last run: for a rolling restart",
          parameters: [
            clusterIdParameter,
            { name: "brokerId", in: "path", required: true, schema: { type: "integer", minimum: 0 } },
          ],
          responses: {
            200: { description: "Ready or not, and why", ...json("BrokerReadiness") },
            ...problems(400, 401, 403, 404, 503),
          },
        },
      },
      "/v1/clusters/{clusterId}/snapshot": {
        put: {
          summary:
            "Store the cluster's latest snapshot for the scheduled tick (409 cluster-connected if the service reads the cluster itself)",
          parameters: [clusterIdParameter],
          requestBody: { required: true, ...json("Snapshot") },
          responses: {
            200: { description: "Stored", ...json("SnapshotMeta") },
            ...problems(400, 401, 403, 409, 413, 415, 503),
          },
        },
      },
      "/v1/clusters/{clusterId}/catch-up-throttles": {
        get: {
          summary:
            "What the agent set for catch-up pacing (version 0, empty, if nothing): for it to lift after a restart",
          parameters: [clusterIdParameter],
          responses: {
            200: { description: "The record", ...json("VersionedCatchUpThrottleRecord") },
            ...problems(400, 401, 403, 503),
          },
        },
        put: {
          summary: "Replace the record; `version` is the one read (409 if it changed since)",
          parameters: [clusterIdParameter],
          requestBody: { required: true, ...json("VersionedCatchUpThrottleRecord") },
          responses: {
            200: { description: "Written, with its new version", ...json("VersionedCatchUpThrottleRecord") },
            ...problems(400, 401, 403, 409, 415, 503, 507),
          },
        },
      },
      "/v1/clusters/{clusterId}/connection": {
        get: {
          summary: "How the worker reaches the cluster itself: secrets only by reference, never a secret",
          parameters: [clusterIdParameter],
          responses: {
            200: { description: "The connection", ...json("ClusterConnection") },
            ...problems(400, 401, 403, 404, 503),
          },
        },
        put: {
          summary:
            "Register or replace it; a secret given inline (sasl.jaas.config, ssl.keystore.key, passwords) is refused",
          parameters: [clusterIdParameter],
          requestBody: { required: true, ...json("ClusterConnection") },
          responses: {
            200: { description: "Stored", ...json("ClusterConnection") },
            ...problems(400, 401, 403, 413, 415, 503),
          },
        },
        delete: {
          summary: "Forget it: the worker stops reaching the cluster (the cluster's removal does too)",
          parameters: [clusterIdParameter],
          responses: { 204: { description: "Forgotten" }, ...problems(400, 401, 403, 404, 503) },
        },
      },
      "/v1/fleet/config": {
        get: {
          summary: "Configuration defaults for every cluster",
          responses: {
            200: { description: "The fleet config", ...json("FleetConfigView") },
            ...problems(401, 503),
          },
        },
        put: {
          summary: "Replace the fleet's configuration defaults (a fleet-wide token: * or @fleet)",
          requestBody: { required: true, ...json("ConfigOverrides") },
          responses: {
            200: { description: "The fleet config", ...json("FleetConfigView") },
            ...problems(400, 401, 403, 415, 503),
          },
        },
      },
      "/healthz": {
        get: {
          summary: "Liveness and store reachability",
          responses: { 200: { description: "OK" }, 503: { description: "Store unreachable" } },
        },
      },
      "/openapi.json": {
        get: { summary: "This document", responses: { 200: { description: "OpenAPI 3.0" } } },
      },
      "/metrics": {
        get: {
          summary:
            "The run metrics in Prometheus text (the local server; on AWS they are CloudWatch metrics)",
          responses: {
            200: {
              description: "Counters and gauges",
              content: { "text/plain; version=0.0.4": { schema: { type: "string" } } },
            },
          },
        },
      },
      ...pages,
    },
    components: { schemas: components() },
  };
}
