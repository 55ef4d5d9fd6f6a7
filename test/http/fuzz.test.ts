import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preferredPartitionsOf, snapshotOf, WAIT_FOR_SYNC } from "../support/cluster.ts";
import { call } from "../support/http.ts";
import { openServer } from "../support/stores.ts";

/**
 * Whatever a client sends, the answer is a 2xx or a 4xx problem, never a 500; and a refused request
 * leaves the stored cluster as it was. The inputs are valid requests with one place broken.
 */

const snapshot = snapshotOf(preferredPartitionsOf(1, 4, { outOfSync: 2 }));
const VALID_BODIES: Record<string, { method: string; path: string; body: unknown }> = {
  pure: { method: "POST", path: "/v1/evaluate", body: { snapshot, config: WAIT_FOR_SYNC, now: 1_000 } },
  managed: { method: "POST", path: "/v1/clusters/fuzz/evaluate", body: { snapshot, config: WAIT_FOR_SYNC } },
  config: { method: "PUT", path: "/v1/clusters/fuzz/config", body: WAIT_FOR_SYNC },
  fleet: { method: "PUT", path: "/v1/fleet/config", body: { "leader.imbalance.election.max.per.run": 50 } },
  snapshot: { method: "PUT", path: "/v1/clusters/fuzz/snapshot", body: snapshot },
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every place in a JSON value, as a list of keys from the root. */
function placesOf(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  const places = [at];
  if (value === null || typeof value !== "object") return places;
  for (const [key, item] of Object.entries(value))
    places.push(...placesOf(item, [...at, Array.isArray(value) ? Number(key) : key]));
  return places;
}

/** A copy of `value` with the place `at` replaced by `replacement`, or removed when it is undefined. */
function broken(value: unknown, at: (string | number)[], replacement: Json | undefined): unknown {
  if (at.length === 0) return replacement;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = at[at.length - 1] as string | number;
  if (replacement === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else parent[last] = replacement;
  return copy;
}

const brokenRequest = fc
  .record({
    target: fc.constantFrom(...Object.keys(VALID_BODIES)),
    pick: fc.nat(),
    replacement: fc.option(fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, { nil: undefined }),
    raw: fc.option(fc.string({ maxLength: 40 }), { freq: 8, nil: undefined }),
    /** One request in ten goes unbroken, so that refusals are seen between accepted runs. */
    intact: fc.nat({ max: 9 }).map((n) => n === 0),
  })
  .map(({ target, pick, replacement, raw, intact }) => {
    const { method, path, body } = VALID_BODIES[target] as (typeof VALID_BODIES)[string];
    const places = placesOf(body);
    const at = places[pick % places.length] as (string | number)[];
    const text = intact ? JSON.stringify(body) : (raw ?? JSON.stringify(broken(body, at, replacement)) ?? "");
    return { method, path, text, label: `${method} ${path} ${at.join("/")}` };
  });

describe("the HTTP boundary under random broken input", () => {
  let server: Awaited<ReturnType<typeof openServer>>;
  beforeAll(async () => {
    server = await openServer("dynalite");
  });
  afterAll(() => server.close());

  it("never answers 500 and never changes stored state when it refuses a request", async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(brokenRequest, async ({ method, path, text, label }) => {
        const before = JSON.stringify(await server.store.getCluster("fuzz"));
        const reply = await call(`${server.url}${path}`, {
          method,
          raw: text,
          headers: { "content-type": "application/json" },
        });
        statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
        expect(reply.status, label).toBeLessThan(500);
        if (reply.status >= 400) {
          expect(reply.headers.get("content-type"), label).toBe("application/problem+json");
          expect(reply.json, label).toMatchObject({ status: reply.status, type: expect.any(String) });
          expect(JSON.stringify(await server.store.getCluster("fuzz")), label).toBe(before);
        }
      }),
      { numRuns: 250 },
    );
    // The generator reaches both sides: requests that are still valid and requests that are refused.
    expect(statuses.get(400) ?? 0).toBeGreaterThan(50);
    expect([...statuses.keys()].some((status) => status < 300)).toBe(true);
  });
});
