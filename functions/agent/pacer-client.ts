import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentityProvider, SourceData } from "@smithy/types";
import type { ConfigOverrides } from "../../schemas/config.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import type { ThrottleRecord, VersionedThrottleRecord } from "../../schemas/throttle-record.ts";
import type { ManagedAnswer } from "../api/managed-run.ts";
import { PacerError } from "./pacer-error.ts";

/**
 * The agent's side of the HTTP API: a managed run, a stored snapshot, the decisions feed. The same
 * client talks to a remote service (`fetch` over the network, with a bearer token or SigV4) and to
 * the app inside the agent's own process (`--embedded`: the app's `fetch`, no socket).
 */

export type Fetch = (request: Request) => Promise<Response>;

/** A decision as the feed lists it: the managed answer without its per-partition explanation. */
export type FeedDecision = ManagedAnswer;

export class PacerClient {
  constructor(
    private readonly baseUrl: string,
    private readonly clusterId: string,
    private readonly send: Fetch,
  ) {}

  /** One managed run on this snapshot; `config` overrides the cluster's stored config for this run. */
  async evaluate(snapshot: Snapshot, config: ConfigOverrides, dryRun = false): Promise<ManagedAnswer> {
    return this.json("POST", dryRun ? "evaluate?dryRun=true" : "evaluate", { snapshot, config });
  }

  async putConfig(config: ConfigOverrides): Promise<void> {
    await this.json("PUT", "config", config);
  }

  async putSnapshot(snapshot: Snapshot): Promise<{ snapshotId: string }> {
    return this.json("PUT", "snapshot", snapshot);
  }

  /** What the agent set for catch-up pacing on this cluster, with the record's version. */
  async getThrottleRecord(): Promise<VersionedThrottleRecord> {
    return this.json("GET", "catch-up-throttles");
  }

  /** Replaces the record read at `version`; the new version (a PacerError 409 if it changed since). */
  async putThrottleRecord(record: ThrottleRecord, version: number): Promise<number> {
    return (await this.json<VersionedThrottleRecord>("PUT", "catch-up-throttles", { version, record }))
      .version;
  }

  /** Decisions newer than `afterDecisionId` (all recent ones without it), oldest first. */
  async decisionsAfter(afterDecisionId: string | undefined, limit = 100): Promise<FeedDecision[]> {
    const query = new URLSearchParams({ limit: String(limit) });
    if (afterDecisionId) query.set("after", afterDecisionId);
    const { decisions } = await this.json<{ decisions: FeedDecision[] }>("GET", `decisions?${query}`);
    return decisions.sort((a, b) => (a.decisionId < b.decisionId ? -1 : a.decisionId > b.decisionId ? 1 : 0));
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, "")}/v1/clusters/${encodeURIComponent(this.clusterId)}/${path}`;
    const response = await this.send(
      new Request(url, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    if (!response.ok) {
      let detail = text.slice(0, 500);
      let type: string | undefined;
      try {
        const problem = JSON.parse(text) as { detail?: string; title?: string; type?: string };
        detail = problem.detail ?? problem.title ?? detail;
        type = problem.type;
      } catch {}
      throw new PacerError(response.status, detail, type);
    }
    return JSON.parse(text) as T;
  }
}

/** A fetch that sends `Authorization: Bearer <token>`. */
export function bearerFetch(token: string, base: Fetch = fetch): Fetch {
  return (request) => {
    const signed = new Request(request);
    signed.headers.set("authorization", `Bearer ${token}`);
    return base(signed);
  };
}

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** SHA-256 (and HMAC-SHA-256 with a secret) for the SigV4 signer, on node:crypto. */
class Sha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }
  update(data: Uint8Array | string): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined
      ? createHash("sha256")
      : createHmac(
          "sha256",
          typeof this.secret === "string" ? this.secret : Buffer.from(this.secret as Uint8Array),
        );
  }
}

/**
 * A fetch that signs each request with AWS SigV4 for a Lambda Function URL (service `lambda`), as its
 * IAM auth type requires. Credentials come from the SDK's default chain (env, profile, SSO, instance
 * or task role), refreshed as they expire.
 */
export function sigV4Fetch(
  region: string,
  credentials: AwsCredentialIdentityProvider = defaultProvider(),
  base: Fetch = fetch,
): Fetch {
  const signer = new SignatureV4({ service: "lambda", region, credentials, sha256: Sha256 });
  return async (request) => {
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const url = new URL(request.url);
    const headers: Record<string, string> = { host: url.host };
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const signed = await signer.sign({
      method: request.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
    });
    const { host: _host, ...outgoing } = signed.headers;
    return base(new Request(request.url, { method: request.method, headers: outgoing, body }));
  };
}
