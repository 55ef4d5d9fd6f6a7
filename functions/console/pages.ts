import type { BrokerRow, RunAnswer } from "../../schemas/answer.ts";
import type { ConfigOverrides, EffectiveConfig } from "../../schemas/config.ts";
import type { ManagedAnswer } from "../api/managed-run.ts";
import { recoveryOf } from "../api/recovery.ts";
import type { fleetRow } from "../api/resources.ts";
import { formatDuration, formatRate, formatSpan } from "../format/text.ts";
import type { BrokerRecovery, CarriedOut, ClusterRecord, ReachFailure, TickOutcome } from "../store/store.ts";
import { barChart, legend, lineChart, type Series } from "./charts.ts";
import { type Html, html } from "./html.ts";
import { CLUSTER_STATES, type ClusterState, configWithSources } from "./state.ts";

/** The console's pages, as HTML strings from plain data: no I/O here. */

const clock = (ms: number | null | undefined) =>
  ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "–";
/** A tick's outcome in words: why a cluster could not be reached, or what became of its batch. */
function tickText(tick: TickOutcome): Html {
  const detail = tick.detail ? html` <span class="detail">${tick.detail}</span>` : "";
  if (tick.outcome === "unreachable")
    return html`unreachable (${REACH_TEXT[tick.reach ?? "unreachable"]})${detail}`;
  return tick.carriedOut
    ? html`${tick.outcome}: ${carriedText(tick.carriedOut)}`
    : html`${tick.outcome}${detail}`;
}

/** What the worker carried out of a batch, as its run line says it. */
function carriedText(done: CarriedOut): string {
  if (done.notCarriedOut) return `not carried out: ${done.notCarriedOut}`;
  const failed = Object.entries(done.failed).map(([code, n]) => `${n} failed with Kafka error ${code}`);
  const request = done.requestError ? [`request failed: ${done.requestError}`] : [];
  return [`asked ${done.asked}, done ${done.done}, not needed ${done.notNeeded}`, ...failed, ...request].join(
    "; ",
  );
}

const REACH_TEXT: Record<ReachFailure, string> = {
  unreachable: "no broker answered",
  tls: "TLS handshake failed",
  authentication: "credentials refused",
  authorization: "not authorized",
  setup: "connection not set up",
};

const ago = (nowMs: number, ms: number | null | undefined) => (ms ? `${formatSpan(nowMs - ms)} ago` : "–");
/** How often a page with live parts fetches them again. */
export const REFRESH_SECONDS = 15;
const percent = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : "–");

/** A page; with `refresh`, its element `#live` is fetched again every 15 s (console.js) unless paused. */
export function layout(
  title: string,
  body: Html,
  options: { refresh?: boolean; signedIn?: boolean } = {},
): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · leadership-pacer</title>
<link rel="stylesheet" href="/console/console.css">
<script src="/console/console.js" defer></script>
</head>
<body${options.refresh ? html` data-refresh="${REFRESH_SECONDS}"` : ""}>
<a class="skip" href="#main">Skip to content</a>
<header><nav aria-label="Console">
<a href="/" class="brand">leadership-pacer</a>
<a href="/">Fleet</a>
${options.signedIn ? html`<form method="post" action="/console/logout"><button type="submit">Sign out</button></form>` : ""}
</nav></header>
<main id="main">
${body}
</main>
</body>
</html>`;
}

/** A page that only says why there is nothing to show (403, 404, 413). */
/** The part of a page that updates by itself, with the button that pauses it. */
function live(content: Html): Html {
  return html`<p class="refresh"><button type="button" id="pause" aria-pressed="false">Pause updates</button> This part of the page updates every ${REFRESH_SECONDS} s.</p>
<div id="live" data-live>${content}</div>`;
}

export function messagePage(title: string, text: string, signedIn?: boolean): Html {
  return layout(
    title,
    html`<h1>${title}</h1>
<p>${text}</p>
<p><a href="/">Back to the fleet</a></p>`,
    {
      signedIn,
    },
  );
}

export function loginPage(message?: string): Html {
  return layout(
    "Sign in",
    html`<h1>Sign in</h1>
<p>This service asks for a bearer token. The console keeps it in a cookie that only this server reads.</p>
${message ? html`<p class="error" role="alert">${message}</p>` : ""}
<form method="post" action="/console/login" class="stack">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** The API's fleet row, with the state the console sums it up as. */
export type FleetRowView = ReturnType<typeof fleetRow> & { state: ClusterState };

/** When the tick runs the cluster next; none when ticking is off. */
const tickDueAtMs = (row: FleetRowView) => (row.ticking ? row.nextRunDueAtMs : null);

export const FLEET_SORTS = {
  cluster: "cluster",
  state: "state",
  "last-run": "last run",
  elections: "elections",
  "next-run": "next run",
  snapshot: "snapshot age",
} as const;
export type FleetSort = keyof typeof FLEET_SORTS;

export interface FleetQuery {
  q: string;
  state: ClusterState | "";
  sort: FleetSort;
  descending: boolean;
  page: number;
}

export const FLEET_PAGE_SIZE = 50;

const dueText = (row: FleetRowView, nowMs: number) => {
  if (!row.ticking) return "by its caller";
  const dueAtMs = tickDueAtMs(row);
  return dueAtMs === null ? "–" : dueAtMs <= nowMs ? "due" : `in ${formatSpan(dueAtMs - nowMs)}`;
};

const stateClass = (state: ClusterState) => `state state-${state.replaceAll(" ", "-")}`;
const phaseClass = (phase: string) => `phase phase-${phase.replaceAll(" ", "-")}`;
const timeLeftText = (ms: number | null) => (ms === null ? "" : ms === 0 ? "" : `, ~${formatSpan(ms)} left`);

/** The fleet's brief: each recovering broker's leading share, phase and time left. */
function recoveryBrief(recovering: BrokerRecovery[]): Html {
  if (recovering.length === 0) return html`–`;
  const shown = recovering.slice(0, 2);
  return html`${shown.map(
    (b, i) =>
      html`${i > 0 ? html`<br>` : ""}broker ${b.id}: leads ${b.leading} / ${b.preferred}, <span class="${phaseClass(b.phase)}">${b.phase}</span>${timeLeftText(b.timeLeftMs)}`,
  )}${recovering.length > 2 ? html`<br>and ${recovering.length - 2} more` : ""}`;
}

const sortKey: Record<FleetSort, (row: FleetRowView) => string | number> = {
  cluster: (r) => r.clusterId,
  state: (r) => CLUSTER_STATES.indexOf(r.state),
  "last-run": (r) => r.lastRunAtMs ?? 0,
  elections: (r) => r.lastElectionCount ?? -1,
  "next-run": (r) => tickDueAtMs(r) ?? Number.MAX_SAFE_INTEGER,
  snapshot: (r) => r.snapshotAgeMs ?? Number.MAX_SAFE_INTEGER,
};

/** Filtered, sorted and cut to one page. */
export function selectRows(rows: FleetRowView[], query: FleetQuery) {
  const needle = query.q.toLowerCase();
  const key = sortKey[query.sort];
  const matching = rows
    .filter(
      (r) =>
        (!needle || r.clusterId.toLowerCase().includes(needle)) && (!query.state || r.state === query.state),
    )
    .sort((a, b) => {
      const [ka, kb] = [key(a), key(b)];
      const order = ka < kb ? -1 : ka > kb ? 1 : a.clusterId.localeCompare(b.clusterId);
      return query.descending ? -order : order;
    });
  const pages = Math.max(1, Math.ceil(matching.length / FLEET_PAGE_SIZE));
  const page = Math.min(Math.max(1, query.page), pages);
  return {
    rows: matching.slice((page - 1) * FLEET_PAGE_SIZE, page * FLEET_PAGE_SIZE),
    page,
    pages,
    matching: matching.length,
  };
}

function queryString(query: FleetQuery, change: Partial<FleetQuery>): string {
  const next = { ...query, ...change };
  const params = new URLSearchParams();
  if (next.q) params.set("q", next.q);
  if (next.state) params.set("state", next.state);
  if (next.sort !== "state" || next.descending)
    params.set("sort", `${next.descending ? "-" : ""}${next.sort}`);
  if (next.page > 1) params.set("page", String(next.page));
  const text = params.toString();
  return text ? `/?${text}` : "/";
}

export function fleetTable(all: FleetRowView[], query: FleetQuery, nowMs: number): Html {
  const { rows, page, pages, matching } = selectRows(all, query);
  const header = (sort: FleetSort) => {
    const active = query.sort === sort;
    const descending = active ? !query.descending : false;
    const ariaSort = active ? (query.descending ? "descending" : "ascending") : "none";
    return html`<th scope="col" aria-sort="${ariaSort}"><a href="${queryString(query, { sort, descending, page: 1 })}">${FLEET_SORTS[sort]}${active ? (query.descending ? " ▼" : " ▲") : ""}</a></th>`;
  };
  return html`<div id="fleet-table">
<p class="status" aria-live="polite">${matching} of ${all.length} clusters · page ${page} of ${pages} · updated ${clock(nowMs)} UTC</p>
<div class="scroll" tabindex="0" role="region" aria-label="Clusters">
<table class="fleet">
<caption class="visually-hidden">Clusters, sortable by each column</caption>
<thead><tr>${header("cluster")}${header("state")}<th scope="col">recovering brokers</th>${header("last-run")}${header("elections")}${header("next-run")}${header("snapshot")}<th scope="col">last tick</th></tr></thead>
<tbody>
${rows.map(
  (r) => html`<tr data-cluster="${r.clusterId}">
<th scope="row"><a href="/clusters/${encodeURIComponent(r.clusterId)}">${r.clusterId}</a></th>
<td><span class="${stateClass(r.state)}">${r.state}</span></td>
<td>${r.recovering.length > 0 ? recoveryBrief(r.recovering) : r.gatedBrokers.length > 0 ? `gated: ${r.gatedBrokers.join(", ")}` : "–"}</td>
<td>${ago(nowMs, r.lastRunAtMs)}</td>
<td>${r.lastElectionCount ?? "–"}${r.carriedOut ? html` <span class="detail">${carriedText(r.carriedOut)}</span>` : ""}</td>
<td>${dueText(r, nowMs)}</td>
<td>${r.snapshotAgeMs === null ? "none" : formatSpan(r.snapshotAgeMs)}</td>
<td>${r.lastTick ? tickText(r.lastTick) : "–"}</td>
</tr>`,
)}
</tbody>
</table>
</div>
<nav class="pages" aria-label="Pages">
${page > 1 ? html`<a href="${queryString(query, { page: page - 1 })}" rel="prev">Previous page</a>` : ""}
${page < pages ? html`<a href="${queryString(query, { page: page + 1 })}" rel="next">Next page</a>` : ""}
</nav>
</div>`;
}

export function fleetPage(all: FleetRowView[], query: FleetQuery, nowMs: number, signedIn: boolean): Html {
  return layout(
    "Fleet",
    html`<h1>Fleet</h1>
<form method="get" action="/" class="filters" role="search">
<label for="q">Cluster</label><input id="q" name="q" value="${query.q}" placeholder="part of an id">
<label for="state">State</label>
<select id="state" name="state">
<option value="">any</option>
${CLUSTER_STATES.map((s) => html`<option value="${s}"${query.state === s ? html` selected` : ""}>${s}</option>`)}
</select>
<button type="submit">Filter</button>
</form>
${live(fleetTable(all, query, nowMs))}`,
    { refresh: true, signedIn },
  );
}

/** A decision as the feed stores it: the answer without its per-partition explanation. */
export type StoredAnswer = Omit<ManagedAnswer, "partitions">;

interface ClusterPageData {
  record: ClusterRecord;
  fleetConfig: ConfigOverrides;
  config: EffectiveConfig;
  state: ClusterState;
  /** Newest first. */
  decisions: StoredAnswer[];
  nowMs: number;
  signedIn: boolean;
}

/** The configuration the latest run used (a request may carry its own); else the stored one. */
const runConfig = (data: ClusterPageData): EffectiveConfig => data.decisions[0]?.config ?? data.config;

function gateRows(data: ClusterPageData): Html {
  const { record, nowMs } = data;
  const config = runConfig(data);
  const latest = new Map((data.decisions[0]?.brokers ?? []).map((b) => [b.id, b]));
  const threshold = config["leader.imbalance.election.wait.for.sync.threshold.percent"];
  const maxWaitMs = config["leader.imbalance.election.wait.for.sync.max.wait.ms"];
  const episodes = record.state?.brokers ?? [];
  if (episodes.length === 0) return html`<p>No broker is in a gating episode.</p>`;
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Gating episodes"><table>
<caption>Brokers in a gating episode (threshold ${threshold} %, max wait ${formatDuration(maxWaitMs)})</caption>
<thead><tr><th scope="col">broker</th><th scope="col">gated</th><th scope="col">why</th><th scope="col">out of sync</th><th scope="col">gated since</th><th scope="col">clear runs</th><th scope="col">max wait left</th></tr></thead>
<tbody>
${episodes.map((e) => {
  const row = latest.get(e.id);
  return html`<tr data-broker="${e.id}">
<th scope="row">Broker ${e.id}</th>
<td>${row?.gated ? "gated" : "open"}</td>
<td>${row ? reasonText(row, threshold) : "–"}</td>
<td>${row ? html`${row.outOfSync} of ${row.total} (${percent(row.outOfSync, row.total)})` : "–"}</td>
<td>${clock(e.gatedSinceMs)} (${ago(nowMs, e.gatedSinceMs)})</td>
<td>${e.clearRuns} of 2</td>
<td>${formatSpan(Math.max(0, e.gatedSinceMs + maxWaitMs - nowMs))}</td>
</tr>`;
})}
</tbody>
</table></div>`;
}

/** A stored row from before rows said how far along their broker is. */
const hasProgress = (row: BrokerRow) => typeof row.preferred === "number";

/**
 * The time left from the pace of the recent runs: the moves onto the broker over the time they
 * took; with one run only, that run's moves per delay (recoveryOf). Null while nothing moves.
 */
function observedTimeLeftMs(id: number, decisions: StoredAnswer[], brief: BrokerRecovery): number | null {
  if (brief.phase !== "ramping") return brief.timeLeftMs;
  const moving = decisions
    .slice(0, 10)
    .map((d) => ({ at: d.evaluatedAtMs, elected: d.brokers.find((b) => b.id === id)?.elected ?? 0 }))
    .filter((d) => d.elected > 0);
  const newest = moving[0];
  const oldest = moving.at(-1);
  if (!newest || !oldest || newest === oldest || newest.at === oldest.at) return brief.timeLeftMs;
  const moved = moving.slice(0, -1).reduce((sum, d) => sum + d.elected, 0);
  return Math.round(((brief.preferred - brief.leading) * (newest.at - oldest.at)) / moved);
}

/**
 * Catch-up pacing for a broker, from the newest decision: its rate and replicas behind, and since
 * when, as far back as the recent decisions throttle it without a break.
 */
function catchUpOf(id: number, decisions: StoredAnswer[]): Html | string {
  const throttleIn = (d: StoredAnswer) => (d.catchUpThrottles ?? []).find((t) => t.broker === id);
  const now = decisions[0] && throttleIn(decisions[0]);
  if (!now) return "–";
  let sinceMs = (decisions[0] as StoredAnswer).evaluatedAtMs;
  for (const d of decisions) {
    if (!throttleIn(d)) break;
    sinceMs = d.evaluatedAtMs;
  }
  return html`throttled at ${formatRate(now.rateBytesPerSecond)} <span class="detail">(${now.outOfSync} replicas behind, since ${clock(sinceMs)})</span>`;
}

function recoveryRows(data: ClusterPageData): Html {
  const latest = data.decisions[0];
  const briefs = latest?.brokers.some(hasProgress)
    ? recoveryOf(latest)
    : (data.record.lastDecision?.recovering ?? []);
  if (briefs.length === 0)
    return html`<p>No broker is recovering: each leads its preferred partitions${latest ? "" : ", as far as the runs so far tell"}.</p>`;
  const fraction = (part: number, whole: number) =>
    html`${part} / ${whole} <span class="detail">(${percent(part, whole)})</span>`;
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Recovering brokers"><table class="recovery">
<caption>Recovering brokers: how far along, from the last run</caption>
<thead><tr><th scope="col">broker</th><th scope="col">phase</th><th scope="col">in sync</th><th scope="col">leading</th><th scope="col">catch-up</th><th scope="col">time left</th></tr></thead>
<tbody>
${briefs.map((b) => {
  const left = observedTimeLeftMs(b.id, data.decisions, b);
  return html`<tr data-recovering="${b.id}">
<th scope="row">Broker ${b.id}</th>
<td><span class="${phaseClass(b.phase)}">${b.phase}</span></td>
<td>${fraction(b.inSync, b.preferred)}</td>
<td>${fraction(b.leading, b.preferred)}</td>
<td>${catchUpOf(b.id, data.decisions)}</td>
<td>${left === null ? (b.phase === "gated" || b.phase === "waiting for a clear run" ? "once in sync" : "–") : left === 0 ? "done" : `~${formatSpan(left)}`}</td>
</tr>`;
})}
</tbody>
</table></div>`;
}

function reasonText(row: BrokerRow, threshold: number): string {
  switch (row.reason) {
    case "over-threshold":
      return `over the threshold: ${percent(row.outOfSync, row.total)} out of sync > ${threshold} %`;
    case "over-max-lag-bytes":
      return row.lagBytes === undefined
        ? "catching up: the snapshot does not say how many bytes it still has to fetch"
        : `catching up: ${formatBytes(row.lagBytes)} still to fetch`;
    case "hysteresis":
      return "under the threshold, waiting for a second clear run";
    case "max-wait-expired":
      return "let through: the max wait expired";
    default:
      return row.reason;
  }
}

function formatBytes(bytes: number): string {
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(0)} kB`;
  return bytes < 1e9 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e9).toFixed(2)} GB`;
}

function configTable(data: ClusterPageData): Html {
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Configuration"><table>
<caption>Effective configuration, and where each value comes from</caption>
<thead><tr><th scope="col">key</th><th scope="col">value</th><th scope="col">from</th></tr></thead>
<tbody>
${configWithSources(data.fleetConfig, data.record.config).map(
  (row) =>
    html`<tr><th scope="row"><code>${row.key}</code></th><td>${String(row.value)}</td><td>${row.source}</td></tr>`,
)}
</tbody>
</table></div>`;
}

function charts(data: ClusterPageData): Html {
  const runs = [...data.decisions].reverse();
  if (runs.length === 0) return html`<p>No runs yet.</p>`;
  const xFrom = runs[0]?.evaluatedAtMs ?? 0;
  const xTo = Math.max(xFrom + 1, runs[runs.length - 1]?.evaluatedAtMs ?? 0);
  const threshold = runConfig(data)["leader.imbalance.election.wait.for.sync.threshold.percent"];
  const at = (run: StoredAnswer) => clock(run.evaluatedAtMs);

  const moves: Series = {
    label: "leadership moves",
    points: runs.map((r) => ({
      x: r.evaluatedAtMs,
      y: r.elections.length,
      note: `${at(r)}: ${r.elections.length === 0 ? "no moves" : `${r.elections.length} moves`}`,
    })),
  };
  const maxMoves = Math.max(1, ...moves.points.map((p) => p.y));

  const brokerIds = [
    ...new Set(
      runs.flatMap((r) =>
        r.brokers.filter((b) => (b.total > 0 && b.outOfSync > 0) || isDown(b)).map((b) => b.id),
      ),
    ),
  ]
    .sort((a, b) => a - b)
    .slice(0, 6);
  const share: Series[] = brokerIds.map((id) => ({
    label: `broker ${id}`,
    points: runs.flatMap((r) => {
      const b = r.brokers.find((row) => row.id === id);
      if (!b) return [];
      // A broker that is down is not "100 % out of sync": it is drawn as down.
      if (isDown(b))
        return [{ x: r.evaluatedAtMs, y: 0, down: true, note: `${at(r)}: broker ${id} ${downText(b)}` }];
      if (b.total === 0) return [];
      const y = (100 * b.outOfSync) / b.total;
      return [
        {
          x: r.evaluatedAtMs,
          y,
          note: `${at(r)}: broker ${id} ${y.toFixed(1)} % out of sync${b.gated ? ", gated" : ""}`,
        },
      ];
    }),
  }));
  const maxShare = Math.max(threshold * 2, 10, ...share.flatMap((s) => s.points.map((p) => p.y)));
  const bands = gatedPeriods(runs).map((p) => ({
    ...p,
    label: p.from === p.to ? `gated at ${clock(p.from)}` : `gated ${clock(p.from)} to ${clock(p.to)}`,
  }));

  const held: Series[] = [
    {
      label: "skipped by the gate",
      points: runs.map((r) => ({
        x: r.evaluatedAtMs,
        y: r.metrics.electionsSkippedByGate,
        note: `${at(r)}: ${r.metrics.electionsSkippedByGate} skipped by the gate`,
      })),
    },
    {
      label: "held back by the cap",
      points: runs.map((r) => ({
        x: r.evaluatedAtMs,
        y: r.metrics.electionsDeferredByThrottle,
        note: `${at(r)}: ${r.metrics.electionsDeferredByThrottle} held back by the cap`,
      })),
    },
  ];
  // Extension (internal.topics.last): drawn only where a run held internal-topic partitions back.
  const heldInternal = (r: StoredAnswer) => r.brokers.reduce((n, b) => n + (b.deferredInternal ?? 0), 0);
  if (runs.some((r) => heldInternal(r) > 0))
    held.push({
      label: "internal topics, held until last",
      points: runs.map((r) => ({
        x: r.evaluatedAtMs,
        y: heldInternal(r),
        note: `${at(r)}: ${heldInternal(r)} internal-topic partitions held until the broker's others are back`,
      })),
    });
  const maxHeld = Math.max(1, ...held.flatMap((s) => s.points.map((p) => p.y)));

  return html`<section aria-labelledby="moves-h"><h3 id="moves-h">Leadership moves per run</h3>
${barChart({ id: "moves", series: [moves], frame: { title: "Leadership moves per run", description: `${runs.length} runs; at most ${maxMoves} moves in one; a run that moved nothing is a flat mark`, xFrom, xTo, yMax: maxMoves, yTitle: "moves", yFormat: String } })}
</section>
<section aria-labelledby="share-h"><h3 id="share-h">Out-of-sync share per broker, against the threshold</h3>
${lineChart({ id: "share", series: share, runs: runs.length, bands, limit: { y: threshold, label: `threshold ${threshold} %` }, frame: { title: "Out-of-sync share per broker", description: `Share of each broker's preferred partitions out of the ISR per run; the dashed line is the ${threshold} % threshold, shaded stretches are gated, squares on the top edge are runs the broker was down`, xFrom, xTo, yMax: maxShare, yTitle: "% out of sync", yFormat: (y) => `${Math.round(y)} %` } })}
${legend(share, [html`<li><span class="swatch limit"></span>threshold ${threshold} %</li>`, html`<li><span class="swatch band"></span>a broker gated</li>`, html`<li><span class="swatch down"></span>broker down (fenced, offline)</li>`])}
</section>
<section aria-labelledby="held-h"><h3 id="held-h">Elections held back</h3>
${barChart({ id: "held", series: held, frame: { title: "Elections held back per run", description: "Skipped by the gate, held back by the cap on a run, and (internal topics last) internal-topic partitions held until last", xFrom, xTo, yMax: maxHeld, yTitle: "elections", yFormat: String } })}
${legend(held)}
</section>`;
}

const isDown = (row: BrokerRow) => row.activity !== undefined && row.activity !== "active";
const downText = (row: BrokerRow) =>
  row.activity === "unregistered" ? "offline" : row.activity === "fenced" ? "fenced" : "shutting down";

/** Stretches of consecutive runs in which some broker was gated. */
function gatedPeriods(runs: StoredAnswer[]): { from: number; to: number }[] {
  const periods: { from: number; to: number }[] = [];
  let open: { from: number; to: number } | null = null;
  for (const run of runs) {
    const gated = run.brokers.some((b) => b.gated);
    if (gated) {
      open ??= { from: run.evaluatedAtMs, to: run.evaluatedAtMs };
      open.to = run.evaluatedAtMs;
    } else if (open) {
      periods.push(open);
      open = null;
    }
  }
  if (open) periods.push(open);
  return periods;
}

function decisionList(decisions: StoredAnswer[]): Html {
  if (decisions.length === 0) return html`<p>No decisions stored.</p>`;
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Decisions"><table>
<caption>Recent decisions, newest first (a run deferred by the throttle moves nothing and is counted above, not listed)</caption>
<thead><tr><th scope="col">at (UTC)</th><th scope="col">elections</th><th scope="col">gated brokers</th><th scope="col">held back by the cap</th><th scope="col">more work</th><th scope="col">batch</th></tr></thead>
<tbody>
${decisions.map(
  (d) => html`<tr data-decision="${d.decisionId}">
<th scope="row">${clock(d.evaluatedAtMs)}</th>
<td>${d.elections.length}</td>
<td>${
    d.brokers
      .filter((b) => b.gated)
      .map((b) => b.id)
      .join(", ") || "–"
  }</td>
<td>${d.metrics.electionsDeferredByThrottle || "–"}</td>
<td>${d.moreWorkRemains ? "yes" : "no"}</td>
<td>${d.elections.length === 0 ? "–" : html`<details><summary>kafkaLeaderElection (${d.elections.length})</summary><pre>${JSON.stringify(d.kafkaLeaderElection, null, 1)}</pre></details>`}</td>
</tr>`,
)}
</tbody>
</table></div>`;
}

const DEFERRAL_TEXT = { throttle: "by the throttle", "rebalance-disabled": "rebalancing off" } as const;

/** The part of the cluster page that updates by itself: facts, recovering brokers, gate, charts. */
export function clusterLive(data: ClusterPageData): Html {
  const { record, nowMs } = data;
  const deferred = record.lastDeferred;
  return html`<p class="status" aria-live="polite">Updated ${clock(nowMs)} UTC</p>
<dl class="facts">
<dt>State</dt><dd><span class="${stateClass(data.state)}">${data.state}</span></dd>
<dt>Last run</dt><dd>${ago(nowMs, record.lastDecision?.evaluatedAtMs)}${record.lastDecision ? html`, ${record.lastDecision.electionCount} elections` : ""}</dd>
<dt>Runs deferred</dt><dd>${record.deferredRuns}${deferred ? html`, the last ${DEFERRAL_TEXT[deferred.reason]} ${ago(nowMs, deferred.atMs)}` : ""}</dd>
<dt>Snapshot</dt><dd>${record.snapshot ? html`${record.snapshot.partitionCount} partitions, ${formatSpan(nowMs - record.snapshot.receivedAtMs)} old` : "none stored"}</dd>
<dt>Scheduled ticks</dt><dd>${data.config["pacer.tick.enabled"] ? (record.connected ? "on: the service reads the cluster and elects itself" : "on: the service runs it on its stored snapshot") : "off: its agent or controller runs it"}${record.lastTick ? html`; last tick ${ago(nowMs, record.lastTick.atMs)}: ${tickText(record.lastTick)}` : ""}</dd>
</dl>
<h2>Recovering brokers</h2>
${recoveryRows(data)}
<h2>Gate</h2>
${gateRows(data)}
<h2>Recent runs</h2>
${charts(data)}`;
}

export function clusterPage(data: ClusterPageData): Html {
  const id = data.record.clusterId;
  return layout(
    id,
    html`<h1>${id}</h1>
<p><a href="/clusters/${encodeURIComponent(id)}/what-if">What if…: run the stored snapshot under another config</a></p>
${live(clusterLive(data))}
<h2>Decisions</h2>
${decisionList(data.decisions)}
<h2>Configuration</h2>
${configTable(data)}`,
    { signedIn: data.signedIn, refresh: true },
  );
}

export interface WhatIf {
  current: RunAnswer;
  proposed: RunAnswer;
}

function answerColumn(title: string, answer: RunAnswer): Html {
  const gated = answer.brokers.filter((b) => b.gated);
  return html`<section class="answer" aria-label="${title}">
<h2>${title}</h2>
<dl class="facts">
<dt>Elections</dt><dd data-elections="${answer.elections.length}">${answer.elections.length}</dd>
<dt>Gated brokers</dt><dd>${gated.length > 0 ? gated.map((b) => `${b.id} (${b.reason})`).join(", ") : "none"}</dd>
<dt>Deferred</dt><dd>${answer.deferred ?? "no"}</dd>
<dt>More work remains</dt><dd>${answer.moreWorkRemains ? "yes" : "no"}</dd>
<dt>Next run in</dt><dd>${formatDuration(answer.nextDelayMs)}</dd>
</dl>
${answer.elections.length > 0 ? html`<details><summary>The batch</summary><pre>${JSON.stringify(answer.kafkaLeaderElection, null, 1)}</pre></details>` : ""}
</section>`;
}

export function whatIfPage(options: {
  clusterId: string;
  overrides: string;
  problem?: string;
  result?: WhatIf;
  signedIn: boolean;
}): Html {
  const { clusterId } = options;
  return layout(
    `What if · ${clusterId}`,
    html`<h1>What if: <a href="/clusters/${encodeURIComponent(clusterId)}">${clusterId}</a></h1>
<p>Runs the cluster's stored snapshot from its stored gate state, once under its configuration and once with the overrides below. A dry run: nothing is stored, nothing is elected.</p>
<form method="post" class="stack">
<label for="overrides">Overrides (JSON, Kafka's names)</label>
<textarea id="overrides" name="overrides" rows="6" aria-describedby="overrides-help"${options.problem ? html` aria-invalid="true"` : ""}>${options.overrides}</textarea>
<p id="overrides-help" class="help">For example <code>{"leader.imbalance.election.wait.for.sync.threshold.percent": 20}</code></p>
${options.problem ? html`<p class="error" role="alert">${options.problem}</p>` : ""}
<button type="submit">Run both</button>
</form>
${options.result ? html`<div class="side-by-side">${answerColumn("As configured", options.result.current)}${answerColumn("With the overrides", options.result.proposed)}</div>` : ""}`,
    { signedIn: options.signedIn },
  );
}
