import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import type { Context } from "hono";
import { Hono } from "hono";
import { compress } from "hono/compress";
import { BROKER_ID_RULE, MAX_BROKER_ID } from "../../schemas/checks.ts";
import {
  type ConfigOverrides,
  ConfigOverrides as ConfigOverridesSchema,
  effectiveConfig,
} from "../../schemas/config.ts";
import { ClusterConnection } from "../../schemas/connection.ts";
import { invalidInput, type ProblemDetails, problem, validateWith } from "../../schemas/problems.ts";
import { CLUSTER_ID, validateManagedRequest } from "../../schemas/request.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import { VersionedThrottleRecord } from "../../schemas/throttle-record.ts";
import { SnapshotTooLargeError } from "../store/dynamo-store.ts";
import { type PacerStore, StoreRejectedError, StoreUnavailableError } from "../store/store.ts";
import { mayAccess, type TokenAuth } from "./auth.ts";
import { type BodyStream, parseJsonBytes, readBodyBytes, readJsonBody } from "./body.ts";
import { brokerReadiness, type LastRun } from "./broker-readiness.ts";
import heavyWork, { type HeavyResult, type HeavyTask } from "./heavy-work.ts";
import {
  connectedConflict,
  inProcess,
  managedRun,
  type RunnableRequest,
  type RunObserver,
} from "./managed-run.ts";
import type { Offload } from "./offload.ts";
import { openApiDocument } from "./openapi.ts";
import { clusterView, fleetRow } from "./resources.ts";
import { snapshotIdOf } from "./tick.ts";

export interface AppOptions {
  store: PacerStore;
  /** Worker threads for large bodies (the local server); absent: everything runs in-process. */
  offload?: Offload;
  clock?: () => number;
  auth?: TokenAuth;
  /** Request bodies above this many bytes (before or after gzip) get 413. */
  maxBodyBytes?: number;
  decisionTtlMs?: number;
  idempotencyTtlMs?: number;
  /** Seconds a client should wait after a 503. */
  retryAfterSeconds?: number;
  /** Told of every managed run: metrics and logs. */
  observer?: RunObserver;
  /** Routes of pages served beside the API, for /openapi.json to list (the console's). */
  documentedPages?: Record<string, unknown>;
  /** Prometheus exposition text for GET /metrics (the local server); absent: no such route. */
  metricsText?: () => Promise<string>;
}

type Env = { Variables: { patterns: RegExp[] | undefined; fleetScoped: boolean } };

const DAY_MS = 86_400_000;
export const DECISION_TTL_MS = 7 * DAY_MS;
export const IDEMPOTENCY_TTL_MS = DAY_MS;
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Answers smaller than this go uncompressed: a few elections read better as plain JSON. */
const COMPRESS_ABOVE_BYTES = 16 * 1024;

function send(
  c: Context,
  body: ProblemDetails | string | Uint8Array<ArrayBuffer>,
  status?: number,
): Response {
  const problemBody = typeof body !== "string" && !(body instanceof Uint8Array);
  const text = problemBody ? JSON.stringify(body) : body;
  const code = status ?? (problemBody ? body.status : 200);
  const contentType = code >= 400 ? "application/problem+json" : "application/json";
  return c.body(text, code as 200, {
    "content-type": contentType,
    // Lets the compression below leave small answers as they are.
    "content-length": String(Buffer.byteLength(text)),
    // The rest of a body that was too large is never read: closing the connection tells the client
    // (some wait to finish sending before they read the answer) instead of leaving it hanging.
    ...(code === 413 ? { connection: "close" } : {}),
  });
}

/**
 * The request's body as it arrives: where Node serves the app (the local server), Node's own
 * request stream, read without the web stream the Request wraps around it; elsewhere (Lambda, tests
 * through app.request) the Request's.
 */
function bodyStream(c: Context): BodyStream {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return incoming instanceof Readable ? incoming : c.req.raw.body;
}

/** A positive integer query parameter, or a problem naming it. */
function intParam(c: Context, name: string, fallback: number, max: number): number | ProblemDetails {
  const raw = c.req.query(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    return invalidInput([{ pointer: `/query/${name}`, detail: `${name} must be an integer 1–${max}` }]);
  }
  return value;
}

/** A large managed request: each attempt runs in a worker on the state the store holds then. */
function inWorker(offload: Offload, bytes: Buffer): RunnableRequest {
  return {
    async run(state, nowMs, context) {
      const result = await offload.run({ kind: "run-managed", bytes, state, nowMs, context });
      if (result.kind !== "run") throw new Error(`a checked request failed in its worker: ${result.kind}`);
      return result.answer;
    },
  };
}

/** The HTTP API: /v1, /healthz, /openapi.json, /metrics, with errors and unknown routes as problems. */
export function createApi(options: AppOptions): Hono<Env> {
  const { store, auth, offload } = options;
  const clock = options.clock ?? Date.now;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const app = new Hono<Env>();

  app.onError((error, c) => {
    if (error instanceof StoreRejectedError) {
      return send(c, problem("store-rejected", `${error.message}. Leadership stays where it is.`));
    }
    if (error instanceof StoreUnavailableError) {
      c.header("retry-after", String(options.retryAfterSeconds ?? 5));
      return send(c, problem("store-unavailable", `${error.message}. Leadership stays where it is.`));
    }
    console.error(error);
    return send(c, {
      type: "about:blank",
      title: "Internal error",
      status: 500,
      detail: "An unexpected error; see the service log",
    });
  });
  // Server-Timing tells a caller (and the HTTP benchmark) how long the service itself took.
  app.use("*", async (c, next) => {
    const start = performance.now();
    await next();
    c.res.headers.set("server-timing", `app;dur=${(performance.now() - start).toFixed(1)}`);
  });
  // Large answers (an explained run lists every imbalanced partition) go gzip'd to clients that take
  // it, which also keeps them under Lambda's 6 MB response limit.
  app.use("*", compress({ threshold: COMPRESS_ABOVE_BYTES }));
  app.notFound((c) => send(c, problem("not-found", `No route ${c.req.method} ${c.req.path}`)));

  // Auth: /healthz and /openapi.json are open; everything under /v1 needs a token when auth is on.
  app.use("/v1/*", async (c, next) => {
    if (!auth) return next();
    const scope = auth.scopeOf(c.req.header("authorization"));
    if (!scope) {
      c.header("www-authenticate", 'Bearer realm="leadership-pacer"');
      return send(c, problem("unauthorized", "Send Authorization: Bearer <token>"));
    }
    c.set("patterns", scope.patterns);
    c.set("fleetScoped", scope.fleet);
    return next();
  });
  app.use("/v1/clusters/:clusterId/*", async (c, next) => {
    const clusterId = c.req.param("clusterId") ?? "";
    if (!CLUSTER_ID.test(clusterId)) {
      return send(
        c,
        invalidInput([{ pointer: "/path/clusterId", detail: "cluster ids are 1–128 of [A-Za-z0-9._:-]" }]),
      );
    }
    const patterns = c.get("patterns");
    if (patterns && !mayAccess(patterns, clusterId)) {
      return send(c, problem("forbidden", `This token may not act on cluster "${clusterId}"`));
    }
    return next();
  });

  app.get("/healthz", async (c) => {
    await store.ping();
    return c.json({ status: "ok" });
  });
  app.get("/openapi.json", (c) => c.json(openApiDocument(options.documentedPages)));
  const { metricsText } = options;
  if (metricsText) {
    app.get("/metrics", async (c) =>
      c.body(await metricsText(), 200, { "content-type": "text/plain; version=0.0.4" }),
    );
  }

  /** Parse, validate and run: in a worker for a large body, here for a small one. */
  const heavy = (task: HeavyTask): Promise<HeavyResult> | HeavyResult =>
    offload?.wants(task.bytes.byteLength) ? offload.run(task, { handOver: true }) : heavyWork(task);

  app.post("/v1/evaluate", async (c) => {
    const body = await readBodyBytes(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    const explain = c.req.query("explain") === "partitions";
    const result = await heavy({ kind: "evaluate", bytes: body.bytes, clockMs: clock(), explain });
    if (result.kind === "problem") return send(c, result.problem);
    if (result.kind !== "answer") throw new Error(`unexpected ${result.kind} from an evaluation`);
    return send(c, result.body);
  });

  app.post("/v1/clusters/:clusterId/evaluate", async (c) => {
    const clusterId = c.req.param("clusterId");
    const explain = c.req.query("explain") === "partitions";
    const idempotencyKey = c.req.header("idempotency-key");
    if (idempotencyKey !== undefined && (idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
      return send(
        c,
        invalidInput([{ pointer: "/header/Idempotency-Key", detail: "must be 1–255 characters" }]),
      );
    }
    const body = await readBodyBytes(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    let request: RunnableRequest;
    if (offload?.wants(body.bytes.byteLength)) {
      // Checked once in the worker; each attempt below parses it there again, off this thread.
      const checked = await offload.run({ kind: "check-managed", bytes: body.bytes });
      if (checked.kind === "problem") return send(c, checked.problem);
      request = inWorker(offload, body.bytes);
    } else {
      const parsed = parseJsonBytes(body.bytes);
      if (!parsed.ok) return send(c, parsed.problem);
      const valid = validateManagedRequest(parsed.value);
      if (!valid.ok) return send(c, invalidInput(valid.problems));
      request = inProcess(valid.value);
    }
    const response = await managedRun(store, clusterId, request, body.bytes, {
      clock,
      dryRun: c.req.query("dryRun") === "true",
      explain,
      idempotencyKey,
      observer: options.observer,
      decisionTtlMs: options.decisionTtlMs ?? DECISION_TTL_MS,
      idempotencyTtlMs: options.idempotencyTtlMs ?? IDEMPOTENCY_TTL_MS,
    });
    if (response.replayed) c.header("idempotent-replayed", "true");
    return send(c, response.body, response.status);
  });

  app.get("/v1/clusters", async (c) => {
    const limit = intParam(c, "limit", 100, 1000);
    if (typeof limit !== "number") return send(c, limit);
    const [page, fleetConfig] = await Promise.all([
      store.listClusters(limit, c.req.query("cursor")),
      store.getFleetConfig(),
    ]);
    const patterns = c.get("patterns");
    const visible = patterns ? page.items.filter((r) => mayAccess(patterns, r.clusterId)) : page.items;
    const nowMs = clock();
    return c.json({
      clusters: visible.map((record) => fleetRow(record, fleetConfig, nowMs)),
      ...(page.cursor ? { cursor: page.cursor } : {}),
    });
  });

  // The middleware above (it matches the bare path too) has checked the id and the token.
  app.get("/v1/clusters/:clusterId", async (c) => {
    const clusterId = c.req.param("clusterId");
    const [record, fleetConfig] = await Promise.all([store.getCluster(clusterId), store.getFleetConfig()]);
    if (!record) {
      return send(c, problem("not-found", `No cluster "${clusterId}": PUT its config or run it first`));
    }
    return c.json(clusterView(record, clusterId, fleetConfig, clock()));
  });

  app.put("/v1/clusters/:clusterId/config", async (c) => {
    const clusterId = c.req.param("clusterId");
    const body = await readJsonBody(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    const config = validateWith(ConfigOverridesSchema, body.value);
    if (!config.ok) return send(c, invalidInput(config.problems, "configuration"));
    await store.putConfig(clusterId, config.value as ConfigOverrides, clock());
    const [record, fleetConfig] = await Promise.all([store.getCluster(clusterId), store.getFleetConfig()]);
    return c.json(clusterView(record, clusterId, fleetConfig, clock()));
  });

  app.put("/v1/clusters/:clusterId/snapshot", async (c) => {
    const clusterId = c.req.param("clusterId");
    const body = await readJsonBody(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    const snapshot = validateSnapshot(body.value);
    if (!snapshot.ok) return send(c, invalidInput(snapshot.problems, "snapshot"));
    if ((await store.getCluster(clusterId))?.connected) {
      const refused = connectedConflict(clusterId);
      return send(c, refused.body, refused.status);
    }
    const receivedAtMs = clock();
    try {
      const meta = await store.putSnapshot(clusterId, gzipSync(body.bytes), {
        snapshotId: snapshotIdOf(body.bytes, receivedAtMs),
        receivedAtMs,
        partitionCount: snapshot.value.partitions.length,
      });
      return c.json(meta);
    } catch (error) {
      if (error instanceof SnapshotTooLargeError) return send(c, problem("payload-too-large", error.message));
      throw error;
    }
  });

  app.get("/v1/fleet/config", async (c) => {
    const config = await store.getFleetConfig();
    return c.json({ config, effectiveConfig: effectiveConfig(config) });
  });

  app.put("/v1/fleet/config", async (c) => {
    if (auth && !c.get("fleetScoped")) {
      return send(
        c,
        problem(
          "forbidden",
          'The fleet config changes every cluster: it needs a token whose scope is "*" or "@fleet"',
        ),
      );
    }
    const body = await readJsonBody(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    const config = validateWith(ConfigOverridesSchema, body.value);
    if (!config.ok) return send(c, invalidInput(config.problems, "configuration"));
    await store.putFleetConfig(config.value, clock());
    return c.json({ config: config.value, effectiveConfig: effectiveConfig(config.value) });
  });

  // A cluster leaves the fleet: no more listing, no more ticks. Its decisions stay readable until
  // they expire; a later run under the same id starts a new cluster.
  app.delete("/v1/clusters/:clusterId", async (c) => {
    const clusterId = c.req.param("clusterId");
    // Its connection goes with it: the worker no longer reaches a cluster removed from the fleet.
    const [cluster, connection] = await Promise.all([
      store.deleteCluster(clusterId),
      store.deleteConnection(clusterId),
    ]);
    if (!cluster && !connection) return send(c, problem("not-found", `No cluster "${clusterId}"`));
    return c.body(null, 204);
  });

  app.delete("/v1/clusters/:clusterId/state", async (c) => {
    const clusterId = c.req.param("clusterId");
    if (!(await store.resetState(clusterId, clock())))
      return send(c, problem("not-found", `No cluster "${clusterId}"`));
    return c.body(null, 204);
  });

  app.get("/v1/clusters/:clusterId/brokers/:brokerId", async (c) => {
    const clusterId = c.req.param("clusterId");
    const broker = Number(c.req.param("brokerId"));
    if (!/^\d+$/.test(c.req.param("brokerId")) || broker > MAX_BROKER_ID)
      return send(c, invalidInput([{ pointer: "/path/brokerId", detail: `expected ${BROKER_ID_RULE}` }]));
    const [record, fleetConfig] = await Promise.all([store.getCluster(clusterId), store.getFleetConfig()]);
    if (!record)
      return send(c, problem("not-found", `No cluster "${clusterId}": PUT its config or run it first`));
    const decisionId = record.lastDecision?.decisionId;
    const decision = decisionId ? await store.getDecision(clusterId, decisionId) : null;
    const run = decision ? (JSON.parse(decision.body) as LastRun) : null;
    const config = effectiveConfig(fleetConfig, record.config);
    return c.json(brokerReadiness(clusterId, broker, run, config, clock()));
  });

  app.get("/v1/clusters/:clusterId/decisions", async (c) => {
    const clusterId = c.req.param("clusterId");
    const limit = intParam(c, "limit", 20, 100);
    if (typeof limit !== "number") return send(c, limit);
    const decisions = await store.listDecisions(clusterId, {
      limit,
      after: c.req.query("after"),
      nowMs: clock(),
    });
    return send(c, `{"decisions":[${decisions.map((d) => d.body).join(",")}]}`);
  });

  // What the agent set for catch-up pacing, so that its next start (or another agent) lifts it. A
  // cluster removed from the fleet keeps it: Kafka may still hold the throttle it describes.
  app.get("/v1/clusters/:clusterId/catch-up-throttles", async (c) =>
    c.json(await store.getThrottleRecord(c.req.param("clusterId"))),
  );

  app.put("/v1/clusters/:clusterId/catch-up-throttles", async (c) => {
    const clusterId = c.req.param("clusterId");
    const body = await readJsonBody(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    const put = validateWith(VersionedThrottleRecord, body.value);
    if (!put.ok) return send(c, invalidInput(put.problems, "catch-up throttle record"));
    const { version, record } = put.value;
    const written = await store.putThrottleRecord(clusterId, record, version, clock());
    if (written === null) {
      const current = await store.getThrottleRecord(clusterId);
      return send(
        c,
        problem(
          "record-changed",
          `The catch-up throttle record of "${clusterId}" is at version ${current.version}, not ${version}: another agent paces this cluster too; read it again`,
        ),
      );
    }
    return c.json({ version: written, record });
  });

  // How the worker reaches the cluster itself: references to secrets, never a secret (schemas/connection.ts).
  app.get("/v1/clusters/:clusterId/connection", async (c) => {
    const clusterId = c.req.param("clusterId");
    const connection = await store.getConnection(clusterId);
    if (!connection)
      return send(c, problem("not-found", `No connection registered for "${clusterId}": PUT one`));
    return c.json(connection);
  });

  app.put("/v1/clusters/:clusterId/connection", async (c) => {
    const body = await readJsonBody(c.req.raw, maxBodyBytes, bodyStream(c));
    if (!body.ok) return send(c, body.problem);
    const put = validateWith(ClusterConnection, body.value);
    if (!put.ok) return send(c, invalidInput(put.problems, "connection"));
    await store.putConnection(c.req.param("clusterId"), put.value, clock());
    return c.json(put.value);
  });

  app.delete("/v1/clusters/:clusterId/connection", async (c) => {
    const clusterId = c.req.param("clusterId");
    if (!(await store.deleteConnection(clusterId)))
      return send(c, problem("not-found", `No connection registered for "${clusterId}"`));
    return c.body(null, 204);
  });

  // Known paths with a method they do not serve: 405 with the methods they do.
  const allowed: [string, string][] = [
    ["/healthz", "GET"],
    ["/openapi.json", "GET"],
    ["/v1/evaluate", "POST"],
    ["/v1/clusters", "GET"],
    ["/v1/clusters/:clusterId", "GET, DELETE"],
    ["/v1/clusters/:clusterId/evaluate", "POST"],
    ["/v1/clusters/:clusterId/config", "PUT"],
    ["/v1/clusters/:clusterId/state", "DELETE"],
    ["/v1/clusters/:clusterId/decisions", "GET"],
    ["/v1/clusters/:clusterId/brokers/:brokerId", "GET"],
    ["/v1/clusters/:clusterId/snapshot", "PUT"],
    ["/v1/clusters/:clusterId/catch-up-throttles", "GET, PUT"],
    ["/v1/clusters/:clusterId/connection", "GET, PUT, DELETE"],
    ["/v1/fleet/config", "GET, PUT"],
  ];
  for (const [path, methods] of allowed) {
    app.all(path, (c) => {
      c.header("allow", methods);
      return send(
        c,
        problem("method-not-allowed", `${c.req.method} is not served at ${c.req.path}; use ${methods}`),
      );
    });
  }
  return app;
}
