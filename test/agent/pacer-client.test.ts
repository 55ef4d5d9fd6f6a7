import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearerFetch, PacerClient, sigV4Fetch } from "../../functions/agent/pacer-client.ts";
import { PacerError } from "../../functions/agent/pacer-error.ts";

/** The agent's HTTP client against a listening server that records what arrives. */
describe("the agent's client of the pacer service", () => {
  const seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
  let url: string;
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
      if (request.url?.includes("/broken/")) {
        response.writeHead(503, { "content-type": "application/problem+json" });
        response.end(JSON.stringify({ title: "unavailable", detail: "store unavailable" }));
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        request.url?.includes("/decisions") ? '{"decisions":[{"decisionId":"b"},{"decisionId":"a"}]}' : "{}",
      );
    });
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const snapshot = { brokers: [{ id: 1 }], partitions: [] };

  it("signs each request with SigV4 for the Lambda Function URL, body intact", async () => {
    const credentials = async () => ({
      accessKeyId: "AKIDEXAMPLE",
      secretAccessKey: "secret",
      sessionToken: "session",
    });
    const client = new PacerClient(url, "prod-1", sigV4Fetch("eu-west-1", credentials));
    await client.evaluate(snapshot, { "leader.imbalance.election.max.per.run": 5 });
    const request = seen.at(-1);
    expect(request?.url).toBe("/v1/clusters/prod-1/evaluate");
    expect(JSON.parse(request?.body ?? "")).toEqual({
      snapshot,
      config: { "leader.imbalance.election.max.per.run": 5 },
    });
    expect(request?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(request?.headers["x-amz-date"]).toMatch(/^\d{8}T\d{6}Z$/);
    expect(request?.headers["x-amz-security-token"]).toBe("session");
  });

  it("sends the bearer token, asks for a dry run, and reads decisions oldest first", async () => {
    const client = new PacerClient(`${url}/`, "prod-1", bearerFetch("t0ken"));
    await client.evaluate(snapshot, {}, true);
    expect(seen.at(-1)?.url).toBe("/v1/clusters/prod-1/evaluate?dryRun=true");
    expect(seen.at(-1)?.headers.authorization).toBe("Bearer t0ken");
    const decisions = await client.decisionsAfter("0001");
    expect(seen.at(-1)?.url).toBe("/v1/clusters/prod-1/decisions?limit=100&after=0001");
    expect(decisions.map((d) => d.decisionId)).toEqual(["a", "b"]);
  });

  it("turns a problem answer into an error with its status and detail", async () => {
    const client = new PacerClient(url, "broken", (r) => fetch(r));
    await expect(client.evaluate(snapshot, {})).rejects.toThrow(PacerError);
    await expect(client.evaluate(snapshot, {})).rejects.toThrow("pacer answered 503: store unavailable");
  });
});
