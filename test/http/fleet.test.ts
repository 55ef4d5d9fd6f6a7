import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer, STORE_KINDS } from "../support/stores.ts";

const behind = snapshotOf(preferredPartitionsOf(1, 20, { outOfSync: 10 }));
const caughtUp = snapshotOf(preferredPartitionsOf(1, 20));

describe.each(STORE_KINDS)("fleet config, snapshots and metrics on %s", (kind) => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer(kind);
  });
  afterAll(() => server.close());

  it("layers defaults, fleet, cluster and request config in that order", async () => {
    const fleet = await call(`${server.url}/v1/fleet/config`, {
      method: "PUT",
      body: {
        ...WAIT_FOR_SYNC,
        "leader.imbalance.election.max.per.run": 7,
        "leader.imbalance.election.throttle.interval.ms": 1000,
      },
    });
    expect(fleet.status).toBe(200);
    expect(fleet.json.effectiveConfig["leader.imbalance.check.interval.seconds"]).toBe(300);
    await call(`${server.url}/v1/clusters/layered/config`, {
      method: "PUT",
      body: { "leader.imbalance.election.max.per.run": 5 },
    });
    const view = await call(`${server.url}/v1/clusters/layered`);
    expect(view.json.effectiveConfig).toMatchObject({
      "leader.imbalance.election.algorithm": "wait-for-sync",
      "leader.imbalance.election.max.per.run": 5,
      "leader.imbalance.election.throttle.interval.ms": 1000,
    });
    const run = await call(`${server.url}/v1/clusters/layered/evaluate`, {
      body: { snapshot: caughtUp, config: { "leader.imbalance.election.max.per.run": 3 } },
    });
    expect(run.json.elections).toHaveLength(3);
    expect(run.json.config["leader.imbalance.election.throttle.interval.ms"]).toBe(1000);
    expect(
      (await call(`${server.url}/v1/fleet/config`)).json.config["leader.imbalance.election.max.per.run"],
    ).toBe(7);
    await call(`${server.url}/v1/fleet/config`, { method: "PUT", body: {} });
  });

  it("rejects a bad fleet config with the key named", async () => {
    const bad = await call(`${server.url}/v1/fleet/config`, {
      method: "PUT",
      body: { "pacer.tick.enabeld": true },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0].detail).toContain('did you mean "pacer.tick.enabled"');
  });

  it("stores a validated snapshot and shows its age in the cluster and the fleet", async () => {
    const stored = await call(`${server.url}/v1/clusters/snap/snapshot`, { method: "PUT", body: behind });
    expect(stored.status).toBe(200);
    expect(stored.json).toMatchObject({ partitionCount: 20, chunks: 1 });
    await call(`${server.url}/v1/clusters/snap/config`, {
      method: "PUT",
      body: { "pacer.tick.enabled": true },
    });
    const view = await call(`${server.url}/v1/clusters/snap`);
    expect(view.json.snapshot).toMatchObject({ snapshotId: stored.json.snapshotId, partitionCount: 20 });
    expect(view.json.snapshot.ageMs).toBeGreaterThanOrEqual(0);
    const fleet = await call(`${server.url}/v1/clusters`);
    const row = fleet.json.clusters.find((c: { clusterId: string }) => c.clusterId === "snap");
    expect(row).toMatchObject({ ticking: true, lastTick: null });
    expect(row.snapshotAgeMs).toBeGreaterThanOrEqual(0);

    const invalid = await call(`${server.url}/v1/clusters/snap/snapshot`, {
      method: "PUT",
      body: { brokers: [], partitions: [{}] },
    });
    expect(invalid.status).toBe(400);
    expect((await call(`${server.url}/v1/clusters/snap`)).json.snapshot.snapshotId).toBe(
      stored.json.snapshotId,
    );
  });

  it("splits a large snapshot across items and refuses one beyond 16 of them with 413", async () => {
    // Random-looking topic names keep gzip from shrinking the snapshot below one item.
    const partitions = Array.from({ length: 40_000 }, (_, i) => ({
      topic: `t-${(i * 2654435761) % 1_000_003}-${(i * 40503) % 65_521}`,
      partition: i,
      replicas: [i % 7, (i + 1) % 7, (i + 2) % 7],
      isr: [i % 7, (i + 1) % 7],
      leader: (i + 1) % 7,
    }));
    const brokers = Array.from({ length: 7 }, (_, id) => ({ id }));
    const big = await call(`${server.url}/v1/clusters/big/snapshot`, {
      method: "PUT",
      body: { brokers, partitions },
    });
    expect(big.status).toBe(200);
    expect(big.json.chunks).toBeGreaterThan(1);
    const back = await server.store.getSnapshot("big", big.json);
    expect(JSON.parse(back ?? "{}").partitions).toHaveLength(40_000);
  });

  it("serves the run metrics as Prometheus text", async () => {
    await call(`${server.url}/v1/clusters/metered/evaluate`, {
      body: { snapshot: behind, config: WAIT_FOR_SYNC },
    });
    const metrics = await call(`${server.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(metrics.text).toContain('leadership_pacer_runs_total{cluster="metered",outcome="ran"} 1');
    expect(metrics.text).toContain('leadership_pacer_gated_brokers{cluster="metered"} 1');
    expect(metrics.text).toContain(
      'leadership_pacer_out_of_sync_preferred_partitions{cluster="metered",broker="1"} 10',
    );
    expect(metrics.text).toContain('leadership_pacer_elections_skipped_by_gate_total{cluster="metered"} 10');
  });
});
