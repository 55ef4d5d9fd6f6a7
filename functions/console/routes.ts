import type { Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { ConfigOverrides as ConfigOverridesSchema, effectiveConfig } from "../../schemas/config.ts";
import { validateWith } from "../../schemas/problems.ts";
import { CLUSTER_ID } from "../../schemas/request.ts";
import { validateSnapshot } from "../../schemas/snapshot.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { mayAccess, type TokenAuth } from "../api/auth.ts";
import { readLimited } from "../api/body.ts";
import { fleetRow } from "../api/resources.ts";
import { evaluate } from "../policy/run.ts";
import type { ClusterRecord, PacerStore } from "../store/store.ts";
import { CONSOLE_CSS, CONSOLE_JS } from "./assets.ts";
import type { Html } from "./html.ts";
import {
  clusterLive,
  clusterPage,
  FLEET_SORTS,
  type FleetQuery,
  type FleetSort,
  fleetPage,
  fleetTable,
  loginPage,
  messagePage,
  type StoredAnswer,
  whatIfPage,
} from "./pages.ts";
import { CLUSTER_STATES, type ClusterState, clusterStateOf } from "./state.ts";

/**
 * The web console: the fleet, a cluster's way back, and what-if runs, as pages of the same app. It
 * reads what the API reads and writes nothing. With tokens configured it asks for one, keeps it in
 * an HttpOnly, SameSite=Strict cookie, and shows only the clusters the token may see.
 */

const COOKIE = "pacer_token";
/** The console reads the whole listing per view: fine for thousands of clusters, one query per 100. */
const MAX_CLUSTERS = 20_000;
const DECISIONS_SHOWN = 100;
/** A console form holds a token or a few config overrides: far less than this. */
const FORM_MAX_BYTES = 64 * 1024;

/**
 * Every console response: scripts and styles from this server only (no inline script or style), no
 * framing, no other origin reached.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};

/** A posted form (url-encoded), or null when it is larger than a form of ours can be. */
async function readForm(c: Context): Promise<URLSearchParams | null> {
  const bytes = await readLimited(c.req.raw.body, FORM_MAX_BYTES);
  return bytes && new URLSearchParams(bytes.toString("utf8"));
}

export interface ConsoleOptions {
  store: PacerStore;
  clock: () => number;
  auth?: TokenAuth;
}

type Viewer = { patterns: RegExp[] | null; signedIn: boolean };

// biome-ignore lint/suspicious/noExplicitAny: the console needs none of the app's own variables
export function addConsole(app: Hono<any>, options: ConsoleOptions): void {
  const { store, clock, auth } = options;
  const page = (c: Context, body: Html, status = 200) => c.html(body.text, status as 200, SECURITY_HEADERS);

  /** Who is looking: everyone when auth is off; else the cookie's token, or a sign-in page. */
  const viewerOf = (c: Context): Viewer | null => {
    if (!auth) return { patterns: null, signedIn: false };
    const token = getCookie(c, COOKIE);
    const scope = token ? auth.scopeOf(`Bearer ${token}`) : null;
    return scope ? { patterns: scope.patterns, signedIn: true } : null;
  };
  const signIn = (c: Context) => page(c, loginPage(), 401);
  const mayView = (viewer: Viewer, clusterId: string) =>
    !viewer.patterns || mayAccess(viewer.patterns, clusterId);

  app.get("/console/console.css", (c) =>
    c.body(CONSOLE_CSS, 200, {
      "content-type": "text/css; charset=utf-8",
      "x-content-type-options": "nosniff",
    }),
  );
  app.get("/console/console.js", (c) =>
    c.body(CONSOLE_JS, 200, {
      "content-type": "text/javascript; charset=utf-8",
      "x-content-type-options": "nosniff",
    }),
  );

  app.post("/console/login", async (c) => {
    if (!auth) return c.redirect("/", 303);
    const form = await readForm(c);
    if (!form) return page(c, loginPage("That form is larger than a token can be."), 413);
    const token = (form.get("token") ?? "").trim();
    if (!auth.scopeOf(`Bearer ${token}`)) return page(c, loginPage("That token is not known here."), 401);
    setCookie(c, COOKIE, token, {
      httpOnly: true,
      sameSite: "Strict",
      path: "/",
      secure: new URL(c.req.url).protocol === "https:",
      maxAge: 12 * 3600,
    });
    return c.redirect("/", 303);
  });
  app.post("/console/logout", (c) => {
    deleteCookie(c, COOKIE, { path: "/" });
    return c.redirect("/", 303);
  });

  app.get("/", async (c) => {
    const viewer = viewerOf(c);
    if (!viewer) return signIn(c);
    const query = fleetQueryOf(c);
    const nowMs = clock();
    const fleetConfig = await store.getFleetConfig();
    const rows = (await allClusters(store))
      .filter((record) => mayView(viewer, record.clusterId))
      .map((record) => {
        const config = effectiveConfig(fleetConfig, record.config);
        return { ...fleetRow(record, fleetConfig, nowMs), state: clusterStateOf(record, config, nowMs) };
      });
    if (c.req.query("fragment") === "live") return page(c, fleetTable(rows, query, nowMs));
    return page(c, fleetPage(rows, query, nowMs, viewer.signedIn));
  });

  /** The cluster named in the path, if the viewer may see it; else the page to answer with. */
  const clusterFor = async (c: Context, viewer: Viewer): Promise<ClusterRecord | Response> => {
    const clusterId = c.req.param("clusterId") ?? "";
    const notFound = () =>
      page(c, messagePage("Not found", `No cluster “${clusterId}” here.`, viewer.signedIn), 404);
    if (!CLUSTER_ID.test(clusterId)) return notFound();
    if (!mayView(viewer, clusterId))
      return page(
        c,
        messagePage("Forbidden", `This token may not see cluster “${clusterId}”.`, viewer.signedIn),
        403,
      );
    return (await store.getCluster(clusterId)) ?? notFound();
  };

  app.get("/clusters/:clusterId", async (c) => {
    const viewer = viewerOf(c);
    if (!viewer) return signIn(c);
    const record = await clusterFor(c, viewer);
    if (record instanceof Response) return record;
    const nowMs = clock();
    const fleetConfig = await store.getFleetConfig();
    const config = effectiveConfig(fleetConfig, record.config);
    const decisions = (await store.listDecisions(record.clusterId, { limit: DECISIONS_SHOWN, nowMs })).map(
      (d) => JSON.parse(d.body) as StoredAnswer,
    );
    const data = {
      record,
      fleetConfig,
      config,
      state: clusterStateOf(record, config, nowMs),
      decisions,
      nowMs,
      signedIn: viewer.signedIn,
    };
    return page(c, c.req.query("fragment") === "live" ? clusterLive(data) : clusterPage(data));
  });

  const whatIf = async (c: Context, overridesText: string | null) => {
    const viewer = viewerOf(c);
    if (!viewer) return signIn(c);
    const record = await clusterFor(c, viewer);
    if (record instanceof Response) return record;
    const clusterId = record.clusterId;
    const shown = overridesText ?? JSON.stringify(record.config, null, 1);
    const answer = (problem: string, status: number) =>
      page(c, whatIfPage({ clusterId, overrides: shown, problem, signedIn: viewer.signedIn }), status);
    if (overridesText === null)
      return page(c, whatIfPage({ clusterId, overrides: shown, signedIn: viewer.signedIn }));

    let parsed: unknown;
    try {
      parsed = JSON.parse(overridesText);
    } catch {
      return answer('The overrides are not JSON: write an object such as {"key": value}.', 400);
    }
    const overrides = validateWith(ConfigOverridesSchema, parsed);
    if (!overrides.ok)
      return answer(overrides.problems.map((p) => `${p.pointer || "config"}: ${p.detail}`).join("; "), 400);
    const text = record.snapshot && (await store.getSnapshot(clusterId, record.snapshot));
    if (!text) return answer("The cluster has no stored snapshot to run: its agent uploads one.", 409);
    const snapshot = validateSnapshot(JSON.parse(text));
    if (!snapshot.ok) return answer("The stored snapshot no longer validates.", 409);
    const fleetConfig = await store.getFleetConfig();
    const run = (config: ReturnType<typeof effectiveConfig>) =>
      evaluate({
        snapshot: snapshot.value,
        config,
        state: record.state ?? INITIAL_STATE,
        nowMs: clock(),
        explain: false,
      });
    return page(
      c,
      whatIfPage({
        clusterId,
        overrides: overridesText,
        signedIn: viewer.signedIn,
        result: {
          current: run(effectiveConfig(fleetConfig, record.config)),
          proposed: run(effectiveConfig(fleetConfig, record.config, overrides.value)),
        },
      }),
    );
  };
  app.get("/clusters/:clusterId/what-if", (c) => whatIf(c, null));
  app.post("/clusters/:clusterId/what-if", async (c) => {
    const form = await readForm(c);
    if (!form) {
      const tooLarge = `The overrides are larger than ${FORM_MAX_BYTES} bytes.`;
      return page(c, messagePage("Too large", tooLarge, viewerOf(c)?.signedIn), 413);
    }
    return whatIf(c, form.get("overrides") ?? "");
  });
}

async function allClusters(store: PacerStore): Promise<ClusterRecord[]> {
  const records: ClusterRecord[] = [];
  let cursor: string | undefined;
  do {
    const next = await store.listClusters(100, cursor);
    records.push(...next.items);
    cursor = next.cursor;
  } while (cursor && records.length < MAX_CLUSTERS);
  return records;
}

function fleetQueryOf(c: Context): FleetQuery {
  const rawSort = c.req.query("sort") ?? "state";
  const descending = rawSort.startsWith("-");
  const sort = rawSort.replace(/^-/, "");
  const state = c.req.query("state") ?? "";
  return {
    q: (c.req.query("q") ?? "").slice(0, 128),
    state: (CLUSTER_STATES as readonly string[]).includes(state) ? (state as ClusterState) : "",
    sort: sort in FLEET_SORTS ? (sort as FleetSort) : "state",
    descending,
    page: Math.max(1, Number.parseInt(c.req.query("page") ?? "1", 10) || 1),
  };
}
