import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Offload } from "../../functions/api/offload.ts";
import { call } from "../support/http.ts";
import { openServer } from "../support/stores.ts";

/**
 * Large bodies are parsed, validated and run in a worker thread: the answers are exactly those of the
 * in-process path, problems included, and managed runs save their state the same way.
 */

const example = JSON.parse(readFileSync("examples/evaluate.json", "utf8"));

describe("bodies handled by the worker pool", () => {
  let inWorker: Awaited<ReturnType<typeof openServer>>;
  let inProcess: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    // Every body of 1 byte or more goes to the worker on one server, none on the other.
    [inWorker, inProcess] = await Promise.all([
      openServer("dynalite", { workerMinBytes: 1 }),
      openServer("dynalite", { workerMinBytes: 0 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([inWorker?.close(), inProcess?.close()]);
  });

  it("answers a pure evaluation exactly as the in-process path does", async () => {
    const [a, b] = await Promise.all(
      [inWorker, inProcess].map((s) => call(`${s.url}/v1/evaluate?explain=partitions`, { body: example })),
    );
    expect(a?.status).toBe(200);
    expect(a?.json).toEqual(b?.json);
    expect(a?.json.elections).toHaveLength(4);
  });

  it("refuses invalid JSON and invalid snapshots with the same problems", async () => {
    const bad = { ...example, snapshot: { ...example.snapshot, brokers: [1, 2, 3] } };
    for (const init of [
      { raw: "{not json", headers: { "content-type": "application/json" } },
      { body: bad },
    ]) {
      const [a, b] = await Promise.all([inWorker, inProcess].map((s) => call(`${s.url}/v1/evaluate`, init)));
      expect(a?.status).toBe(400);
      expect(a?.json).toEqual(b?.json);
    }
  });

  it("runs a managed evaluation in the worker and saves its state; a bad body saves nothing", async () => {
    const { snapshot, config } = example;
    const first = await call(`${inWorker.url}/v1/clusters/w/evaluate`, { body: { snapshot, config } });
    expect(first.status).toBe(200);
    expect(first.json.stateVersion).toBe(1);
    expect(first.json.brokers[0]).toMatchObject({ id: 1, gated: true, reason: "over-threshold" });
    const refused = await call(`${inWorker.url}/v1/clusters/w/evaluate`, {
      body: { snapshot: { ...snapshot, partitions: null }, config },
    });
    expect(refused.status).toBe(400);
    expect(refused.json.errors[0]).toEqual({
      pointer: "/snapshot/partitions",
      detail: "expected an array of partitions",
    });
    const stored = await call(`${inWorker.url}/v1/clusters/w`);
    expect(stored.json.stateVersion).toBe(1);
    expect(stored.json.gate).toEqual([{ id: 1, gatedSinceMs: first.json.evaluatedAtMs, clearRuns: 0 }]);
  });

  it("replays an idempotent managed run without running it again", async () => {
    const body = { snapshot: example.snapshot, config: example.config };
    const headers = { "idempotency-key": "k-1" };
    const first = await call(`${inWorker.url}/v1/clusters/idem/evaluate`, { body, headers });
    const again = await call(`${inWorker.url}/v1/clusters/idem/evaluate`, { body, headers });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
  });

  it("will not start on a worker that cannot load its code, rather than leave large requests waiting", async () => {
    const entry = new URL("../support/unloadable-worker.ts", import.meta.url);
    await expect(Offload.start(1, entry)).rejects.toThrow("this worker cannot load its code");
  });
});
