import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TokenAuth } from "../../functions/api/auth.ts";
import type { Election } from "../../schemas/answer.ts";
import type { ConfigOverrides } from "../../schemas/config.ts";
import { afterElections, preferredPartitionsOf, snapshotOf } from "../support/cluster.ts";
import { openServer } from "../support/stores.ts";

/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against a server
 * whose state comes from a recovery replayed through the managed endpoint. Screenshots are kept in
 * report/console/.
 */

const SCREENSHOTS = "report/console";
const PACED: ConfigOverrides = {
  "leader.imbalance.election.algorithm": "wait-for-sync",
  "leader.imbalance.election.wait.for.sync.threshold.percent": 5,
  "leader.imbalance.election.max.per.run": 20,
};
/** Broker 1 back after a restart, catching up: 40, then 25, then 12 of its 100 partitions behind. */
const recoveringSnapshot = (outOfSync: number) => snapshotOf(preferredPartitionsOf(1, 100, { outOfSync }));

type Server = Awaited<ReturnType<typeof openServer>>;

async function call(server: Server, method: string, path: string, body: unknown, token?: string) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  expect(response.status, `${method} ${path}`).toBe(200);
}

async function replayRecovery(server: Server, clusterId: string, token?: string) {
  await call(server, "PUT", `/v1/clusters/${clusterId}/config`, PACED, token);
  for (const outOfSync of [40, 25, 12])
    await call(
      server,
      "POST",
      `/v1/clusters/${clusterId}/evaluate`,
      { snapshot: recoveringSnapshot(outOfSync) },
      token,
    );
  await call(server, "PUT", `/v1/clusters/${clusterId}/snapshot`, recoveringSnapshot(12), token);
}

/**
 * Broker 1 catching up step by step (its out-of-sync counts), each run's elections carried out
 * before the next snapshot, as its agent would.
 */
async function walkBack(server: Server, clusterId: string, steps: number[]) {
  let snapshot = recoveringSnapshot(steps[0] ?? 0);
  for (const outOfSync of steps) {
    const caughtUp = recoveringSnapshot(outOfSync);
    const leaders = snapshot.partitions.map((p) => p.leader);
    snapshot = {
      ...caughtUp,
      partitions: caughtUp.partitions.map((p, i) => ({ ...p, leader: leaders[i] ?? p.leader })),
    };
    const response = await fetch(`${server.url}/v1/clusters/${clusterId}/evaluate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ snapshot }),
    });
    expect(response.status).toBe(200);
    snapshot = afterElections(snapshot, (await response.json()) as { elections: Election[] });
  }
  return snapshot;
}

// The browser's own globals, for the functions below that run in the page.
// biome-ignore lint/suspicious/noExplicitAny: typed by the browser, not by this project's Node types
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const window: any;

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's violations on the page as it is, of any impact, as "rule: target" lines. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is the script evaluated just above
    const axe = (window as any).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map(
      (v: { id: string; nodes: { target: string[] }[] }) =>
        `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    );
  });
  return violations as string[];
}

/** Nothing on the page is wider than the window: wide tables and charts scroll in their own boxes. */
async function overflowsWindow(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: inject("chromiumPath"),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
    ],
  });
});
afterAll(() => browser?.close());

/** A page at laptop size that fails the test on any request leaving the server. */
async function openPage(server: Server): Promise<{ page: Page; foreign: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
  const foreign: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(server.url)) foreign.push(request.url());
  });
  return { page, foreign };
}

describe("the console, without tokens", () => {
  let server: Server;
  beforeAll(async () => {
    server = await openServer("dynalite");
    await replayRecovery(server, "recovering-1");
    await call(server, "POST", "/v1/clusters/calm-2/evaluate", {
      snapshot: snapshotOf(preferredPartitionsOf(3, 10)),
    });
    // A whole way back: gated while behind, two clear runs, then 20 moves a run until it leads all.
    await call(server, "PUT", "/v1/clusters/back-3/config", PACED);
    await walkBack(server, "back-3", [40, 25, 12, 4, 2, 0, 0, 0, 0, 0, 0, 0]);
    // Half-way: 20 moved, a capped run 10 minutes apart, and a call inside the interval deferred.
    await call(server, "PUT", "/v1/clusters/ramping-5/config", {
      ...PACED,
      "leader.imbalance.election.throttle.interval.ms": 600_000,
    });
    await walkBack(server, "ramping-5", [40, 12, 4, 2, 0]);
    // Broker 1 down (fenced) for two runs, then back and behind.
    const behind = recoveringSnapshot(100);
    const fenced = {
      ...behind,
      brokers: behind.brokers.map((b) => (b.id === 1 ? { ...b, fenced: true } : b)),
    };
    await call(server, "PUT", "/v1/clusters/fenced-6/config", PACED);
    for (const snapshot of [fenced, fenced, behind])
      await call(server, "POST", "/v1/clusters/fenced-6/evaluate", { snapshot });
  });
  afterAll(() => server.close());

  it("shows the fleet with each cluster's state, sorts by keyboard, filters by state", async () => {
    const { page, foreign } = await openPage(server);
    await page.goto(`${server.url}/`);
    const gatedRow = page.locator("tr[data-cluster='recovering-1']");
    await expect(gatedRow.locator(".state").textContent()).resolves.toBe("gated");
    await expect(gatedRow.locator("td").nth(1).textContent()).resolves.toBe("broker 1: leads 0 / 100, gated");
    // Its last run handed broker 3 all it had to take back; back-3 has been led right for runs.
    await expect(page.locator("tr[data-cluster='calm-2'] .state").textContent()).resolves.toBe("recovered");
    await expect(page.locator("tr[data-cluster='back-3'] .state").textContent()).resolves.toBe("balanced");
    await expect(page.locator("tr[data-cluster='back-3'] td").nth(4).textContent()).resolves.toBe(
      "by its caller",
    );
    // Most urgent first by default; the cluster column sorts by id, reached and followed by keyboard.
    await expect(page.locator("tbody tr").first().getAttribute("data-cluster")).resolves.toBe("fenced-6");
    await page.getByRole("link", { name: "cluster", exact: true }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(/sort=cluster/);
    await expect(page.locator("tbody tr").first().getAttribute("data-cluster")).resolves.toBe("back-3");
    await page.getByLabel("State").selectOption("gated");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/state=gated/);
    await expect(page.locator("tbody tr").count()).resolves.toBe(2);
    await page.screenshot({ path: `${SCREENSHOTS}/fleet.png`, fullPage: true });
    expect(foreign).toEqual([]);
    await page.close();
  });

  it("refreshes the fleet by itself every 15 s, and not while paused", async () => {
    const { page } = await openPage(server);
    await page.clock.install();
    await page.goto(`${server.url}/?q=late`);
    await expect(page.locator("tr[data-cluster]").count()).resolves.toBe(0);
    await call(server, "PUT", "/v1/clusters/late-4/config", {});
    await page.getByRole("button", { name: "Pause updates" }).click();
    await page.clock.runFor(16_000);
    await expect(
      page.getByRole("button", { name: "Resume updates" }).getAttribute("aria-pressed"),
    ).resolves.toBe("true");
    await expect(page.locator("tr[data-cluster]").count()).resolves.toBe(0);
    await page.getByRole("button", { name: "Resume updates" }).click();
    await page.clock.runFor(16_000);
    await page.waitForSelector("tr[data-cluster='late-4']");
    expect(page.url()).toBe(`${server.url}/?q=late`);
    await page.close();
  });

  it("shows a recovering cluster: the gated broker and why, and a chart point per run", async () => {
    const { page, foreign } = await openPage(server);
    await page.goto(`${server.url}/clusters/recovering-1`);
    const broker = page.locator("tr[data-broker='1']");
    await expect(broker.locator("td").nth(0).textContent()).resolves.toBe("gated");
    await expect(broker.locator("td").nth(1).textContent()).resolves.toBe(
      "over the threshold: 12.0 % out of sync > 5 %",
    );
    await expect(broker.locator("td").nth(2).textContent()).resolves.toBe("12 of 100 (12.0 %)");
    // Three runs: three points of broker 1's share, three bars of moves (all 0), one gated stretch.
    const shares = await page.locator("#share circle.point title").allTextContents();
    expect(shares.map((s) => s.replace(/^.*: /, ""))).toEqual([
      "broker 1 40.0 % out of sync, gated",
      "broker 1 25.0 % out of sync, gated",
      "broker 1 12.0 % out of sync, gated",
    ]);
    await expect(page.locator("#moves rect.bar").count()).resolves.toBe(3);
    await expect(page.locator("#share rect.band").count()).resolves.toBe(1);
    await expect(page.getByRole("img", { name: /Out-of-sync share per broker/ }).count()).resolves.toBe(1);
    await expect(page.locator("tr[data-decision]").count()).resolves.toBe(3);
    // Where each value comes from: the cluster's own, and the defaults.
    const threshold = page.locator("tr", { hasText: "wait.for.sync.threshold.percent" });
    await expect(threshold.locator("td").allTextContents()).resolves.toEqual(["5", "cluster"]);
    await expect(
      page
        .locator("tr", { hasText: "leader.imbalance.check.interval.seconds" })
        .locator("td")
        .allTextContents(),
    ).resolves.toEqual(["300", "default"]);
    await page.screenshot({ path: `${SCREENSHOTS}/cluster.png`, fullPage: true });
    expect(foreign).toEqual([]);
    await page.close();
  });

  it("draws a whole way back: the moves per run add up to the broker's 100 partitions", async () => {
    const { page } = await openPage(server);
    await page.goto(`${server.url}/clusters/back-3`);
    const moves = await page.locator("#moves rect.bar title").allTextContents();
    expect(moves).toHaveLength(12);
    const counts = moves.map((m) =>
      m.endsWith("no moves") ? 0 : Number(m.replace(/^.*: (\d+) moves$/, "$1")),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(100);
    // Gated for three runs, a first clear run, then 20 a run from the second: the runs that moved
    // nothing are marks too.
    expect(counts).toEqual([0, 0, 0, 0, 20, 20, 20, 20, 20, 0, 0, 0]);
    await expect(page.locator("#moves rect.bar.zero").count()).resolves.toBe(7);
    await expect(page.locator("#share rect.band").count()).resolves.toBe(1);
    await page.screenshot({ path: `${SCREENSHOTS}/recovery.png`, fullPage: true });
    await page.close();
  });

  it("tells how far along a ramping broker is, on the cluster page and the fleet's, and counts a deferred run", async () => {
    const { page } = await openPage(server);
    await page.goto(`${server.url}/clusters/ramping-5`);
    const row = page.locator("tr[data-recovering='1'] td");
    // 20 moved in the one capped run; 80 left at 20 a run, a run every 10 minutes. The call after it
    // was deferred and stored nothing: the page shows the capped run's snapshot (2 behind).
    await expect(row.allTextContents()).resolves.toEqual([
      "ramping",
      "98 / 100 (98.0 %)",
      "20 / 100 (20.0 %)",
      "–",
      "~40m 00s",
    ]);
    const deferred = page.locator("dt:text-is('Runs deferred') + dd");
    await expect(deferred.textContent()).resolves.toMatch(/^1, the last by the throttle .* ago$/);
    await expect(page.locator(".state").first().textContent()).resolves.toBe("ramping");
    await page.screenshot({ path: `${SCREENSHOTS}/ramping.png`, fullPage: true });
    await page.goto(`${server.url}/?state=ramping`);
    await expect(page.locator("tr[data-cluster='ramping-5'] td").nth(1).textContent()).resolves.toBe(
      "broker 1: leads 20 / 100, ramping, ~40m 00s left",
    );
    await page.close();
  });

  it("updates a cluster's progress by itself every 15 s", async () => {
    await call(server, "PUT", "/v1/clusters/live-7/config", PACED);
    await call(server, "POST", "/v1/clusters/live-7/evaluate", { snapshot: recoveringSnapshot(40) });
    const { page } = await openPage(server);
    await page.clock.install();
    await page.goto(`${server.url}/clusters/live-7`);
    const inSync = page.locator("tr[data-recovering='1'] td").nth(1);
    await expect(inSync.textContent()).resolves.toBe("60 / 100 (60.0 %)");
    await call(server, "POST", "/v1/clusters/live-7/evaluate", { snapshot: recoveringSnapshot(12) });
    await page.clock.runFor(16_000);
    await page.waitForFunction(
      () =>
        document.querySelector("tr[data-recovering='1'] td:nth-of-type(2)")?.textContent ===
        "88 / 100 (88.0 %)",
    );
    await expect(page.locator("tr[data-decision]").count()).resolves.toBe(1);
    await page.close();
  });

  it("draws a fenced broker as down, not as 100 % out of sync", async () => {
    const { page } = await openPage(server);
    await page.goto(`${server.url}/clusters/fenced-6`);
    const marks = await page.locator("#share .point title").allTextContents();
    expect(marks.map((m) => m.replace(/^.*: /, ""))).toEqual([
      "broker 1 fenced",
      "broker 1 fenced",
      "broker 1 100.0 % out of sync, gated",
    ]);
    await expect(page.locator("#share rect.point.down").count()).resolves.toBe(2);
    await page.close();
  });

  it("counts the internal-topic partitions held until last, where the extension is on", async () => {
    const snapshot = recoveringSnapshot(0);
    // Broker 1's first three preferred partitions are the consumer-offsets topic's.
    snapshot.partitions = snapshot.partitions.map((p, i) =>
      i < 3 ? { ...p, topic: "__consumer_offsets", partition: i } : p,
    );
    await call(server, "PUT", "/v1/clusters/internal-7/config", {
      ...PACED,
      "leader.imbalance.election.internal.topics.last": true,
    });
    await call(server, "POST", "/v1/clusters/internal-7/evaluate", { snapshot });
    const page = await (await fetch(`${server.url}/clusters/internal-7`)).text();
    const held = page.slice(page.indexOf('id="held-h"'));
    expect(held).toContain("internal topics, held until last");
    expect(held).toMatch(/: 3 internal-topic partitions held until the broker/);
    // A cluster without the extension draws no such series.
    const other = await (await fetch(`${server.url}/clusters/fenced-6`)).text();
    expect(other).not.toContain("internal topics, held until last");
  });

  it("shows a broker's catch-up throttle: the rate, the replicas behind, since when", async () => {
    await call(server, "PUT", "/v1/clusters/catch-up-8/config", {
      ...PACED,
      "pacer.catch.up.replication.throttled.rate": 2_000_000,
    });
    for (const outOfSync of [40, 25])
      await call(server, "POST", "/v1/clusters/catch-up-8/evaluate", {
        snapshot: recoveringSnapshot(outOfSync),
      });
    const page = await (await fetch(`${server.url}/clusters/catch-up-8`)).text();
    const row = page
      .slice(page.indexOf('data-recovering="1"'))
      .split("</tr>")[0]
      ?.replace(/<[^>]+>/g, "");
    const decisions = (await (await fetch(`${server.url}/v1/clusters/catch-up-8/decisions`)).json()) as {
      decisions: { evaluatedAtMs: number }[];
    };
    const first = new Date(decisions.decisions.at(-1)?.evaluatedAtMs ?? 0)
      .toISOString()
      .slice(0, 19)
      .replace("T", " ");
    expect(row).toContain(`throttled at 2.0 MB/s (25 replicas behind, since ${first})`);
    // Without the extension, nothing is throttled.
    const other = await (await fetch(`${server.url}/clusters/ramping-5`)).text();
    expect(other).not.toContain("throttled at");
  });

  it("says why a cluster the worker reads could not be reached, and what became of another's batch", async () => {
    const connection = { "bootstrap.servers": "b-1.kafka.example:9096", "security.protocol": "PLAINTEXT" };
    await call(server, "PUT", "/v1/clusters/refused-9/connection", connection);
    await server.store.recordTick("refused-9", {
      atMs: Date.now(),
      outcome: "unreachable",
      reach: "authentication",
      detail: "SASL authentication failed",
    });
    // A run as the worker's would be (once connected, an agent's run is refused).
    await call(server, "PUT", "/v1/clusters/carried-10/config", { ...PACED, "pacer.tick.enabled": true });
    await call(server, "POST", "/v1/clusters/carried-10/evaluate", { snapshot: recoveringSnapshot(0) });
    await call(server, "PUT", "/v1/clusters/carried-10/connection", connection);
    const record = await server.store.getCluster("carried-10");
    const summary = record?.lastDecision;
    if (!record || !summary) throw new Error("carried-10 has no run");
    const carriedOut = { asked: 20, done: 18, notNeeded: 0, failed: { "80": 2 } };
    const outcome = { atMs: Date.now(), outcome: "ran" as const, carriedOut };
    expect(
      await server.store.recordCarriedOut("carried-10", record.version, { ...summary, carriedOut }, outcome),
    ).toBe(true);
    // A later run saved since: what the worker carried out no longer describes the last run.
    expect(await server.store.recordCarriedOut("carried-10", record.version - 1, summary, outcome)).toBe(
      false,
    );

    const fleet = await (await fetch(`${server.url}/`)).text();
    const rowText = (id: string) =>
      fleet
        .slice(fleet.indexOf(`data-cluster="${id}"`))
        .split("</tr>")[0]
        ?.replace(/<[^>]+>/g, "");
    expect(rowText("refused-9")).toContain("unreachable (credentials refused) SASL authentication failed");
    // The state, then the last tick.
    expect(rowText("refused-9")?.split("unreachable")).toHaveLength(3);
    expect(rowText("carried-10")).toContain("asked 20, done 18, not needed 0; 2 failed with Kafka error 80");
    const page = await (await fetch(`${server.url}/clusters/carried-10`)).text();
    expect(page).toContain("on: the service reads the cluster and elects itself");
  });

  it("passes axe-core on every page and state, at laptop and phone widths, within the window", async () => {
    const paths = [
      "/",
      "/?state=gated",
      "/?q=no-such-cluster",
      "/clusters/recovering-1",
      "/clusters/back-3",
      "/clusters/ramping-5",
      "/clusters/fenced-6",
      "/clusters/recovering-1/what-if",
      "/clusters/no-such-cluster",
    ];
    for (const viewport of [
      { width: 1280, height: 900 },
      { width: 390, height: 844 },
    ]) {
      const page = await browser.newPage({ viewport });
      for (const path of paths) {
        await page.goto(`${server.url}${path}`);
        expect(await axeViolations(page), `${path} at ${viewport.width} px`).toEqual([]);
        expect(await overflowsWindow(page), `${path} at ${viewport.width} px`).toBe(false);
      }
      // The what-if page with an answer, and with a refusal.
      await page.goto(`${server.url}/clusters/recovering-1/what-if`);
      await page
        .getByLabel("Overrides (JSON, Kafka's names)")
        .fill('{"leader.imbalance.election.algorithm": "immediate"}');
      await page.getByRole("button", { name: "Run both" }).click();
      await page.waitForSelector("[data-elections]");
      expect(await axeViolations(page), `what-if answer at ${viewport.width} px`).toEqual([]);
      await page.getByLabel("Overrides (JSON, Kafka's names)").fill("{not json");
      await page.getByRole("button", { name: "Run both" }).click();
      await page.waitForSelector("[role=alert]");
      expect(await axeViolations(page), `what-if refusal at ${viewport.width} px`).toEqual([]);
      if (viewport.width < 500) {
        // Chart text stays legible on a phone: the chart scrolls in its box rather than shrinking.
        await page.goto(`${server.url}/clusters/back-3`);
        const tickHeights = await page
          .locator("#moves .tick")
          .evaluateAll((ticks) => ticks.map((t) => t.getBoundingClientRect().height));
        expect(Math.min(...tickHeights)).toBeGreaterThanOrEqual(10);
        const header = await page.locator("header").boundingBox();
        expect(header?.width).toBe(viewport.width);
        await page.screenshot({ path: `${SCREENSHOTS}/phone-cluster.png`, fullPage: true });
      }
      await page.close();
    }
  });

  it("sends a content security policy with no inline script and no framing, and a heading on a 404", async () => {
    const response = await fetch(`${server.url}/clusters/no-such-cluster`);
    expect(response.status).toBe(404);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(await response.text()).toMatch(/<h1>Not found<\/h1>/);
    // No page carries a script or a style of its own that the policy would block.
    for (const path of ["/", "/clusters/back-3", "/clusters/recovering-1/what-if"]) {
      const body = await (await fetch(`${server.url}${path}`)).text();
      expect(body, path).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|\sstyle="|<style/);
    }
  });

  it("refuses a form larger than a form of its own can be, with 413", async () => {
    const response = await fetch(`${server.url}/clusters/recovering-1/what-if`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `overrides=${"x".repeat(1024 * 1024)}`,
    });
    expect(response.status).toBe(413);
    expect(await response.text()).toMatch(/larger than 65536 bytes/);
  });

  it("runs the stored snapshot under another config beside the current one, and refuses bad JSON", async () => {
    const before = JSON.stringify(await server.store.getCluster("recovering-1"));
    const { page } = await openPage(server);
    await page.goto(`${server.url}/clusters/recovering-1/what-if`);
    await page
      .getByLabel("Overrides (JSON, Kafka's names)")
      .fill('{"leader.imbalance.election.algorithm": "immediate"}');
    await page.getByRole("button", { name: "Run both" }).click();
    const current = page.getByRole("region", { name: "As configured" });
    const proposed = page.getByRole("region", { name: "With the overrides" });
    await expect(current.locator("[data-elections]").getAttribute("data-elections")).resolves.toBe("0");
    await expect(proposed.locator("[data-elections]").getAttribute("data-elections")).resolves.toBe("20");
    await page.screenshot({ path: `${SCREENSHOTS}/what-if.png`, fullPage: true });

    await page.getByLabel("Overrides (JSON, Kafka's names)").fill("{not json");
    const response = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith("/what-if")),
      page.getByRole("button", { name: "Run both" }).click(),
    ]);
    expect(response[0].status()).toBe(400);
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/not JSON/);
    await page
      .getByLabel("Overrides (JSON, Kafka's names)")
      .fill('{"leader.imbalance.election.max.per.run": -1}');
    await page.getByRole("button", { name: "Run both" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/max\.per\.run/);
    expect(JSON.stringify(await server.store.getCluster("recovering-1"))).toBe(before);
    await page.close();
  });
});

describe("the console, with tokens", () => {
  let server: Server;
  beforeAll(async () => {
    server = await openServer("dynalite", { auth: new TokenAuth({ "team-a": ["team-a-*"], ops: ["*"] }) });
    await replayRecovery(server, "team-a-1", "ops");
    await replayRecovery(server, "team-b-1", "ops");
  });
  afterAll(() => server.close());

  it("asks for a token, then shows only the clusters it may see", async () => {
    const { page } = await openPage(server);
    const first = await page.goto(`${server.url}/`);
    expect(first?.status()).toBe(401);
    expect(await axeViolations(page)).toEqual([]);
    await page.getByLabel("Token").fill("nobody");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/not known/);
    expect(await axeViolations(page)).toEqual([]);
    await page.getByLabel("Token").fill("team-a");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("tr[data-cluster]");
    await expect(
      page.locator("tr[data-cluster]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-cluster"))),
    ).resolves.toEqual(["team-a-1"]);
    const other = await page.goto(`${server.url}/clusters/team-b-1`);
    expect(other?.status()).toBe(403);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Forbidden");
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByLabel("Token").count()).resolves.toBe(1);
    await page.close();
  });
});
