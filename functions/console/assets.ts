import { PALETTE } from "./charts.ts";

/**
 * The console's stylesheet and script, served by the app itself: no font, script or library is
 * fetched from anywhere else. Colours meet WCAG AA contrast (4.5:1) on their backgrounds.
 */
export const CONSOLE_CSS = `
:root { color-scheme: light; --ink: #1b1f24; --muted: #4a5360; --line: #c9ced6; --accent: #1f5fa8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #fff; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; z-index: 1; }
header { background: #14314f; }
header nav { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: center; max-width: 1200px; margin: 0 auto; padding: 10px 16px; }
header a { color: #fff; text-decoration: none; } header a:hover, header a:focus { text-decoration: underline; }
header .brand { font-weight: 700; } header form { margin-left: auto; }
main { max-width: 1200px; margin: 0 auto; padding: 8px 16px 48px; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2rem; font-size: 1.25rem; } h3 { font-size: 1.05rem; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
caption { text-align: left; color: var(--muted); padding: 4px 0; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { background: #f1f3f6; white-space: nowrap; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
.status, .help, .detail { color: var(--muted); }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: .85rem; font-weight: 600; border: 1px solid; }
.state-tick-failing, .state-unreachable { color: #8c1d18; background: #fdecea; }
.state-gated { color: #7a3e00; background: #fff1e0; }
.state-ramping, .state-recovered { color: #0b4f8a; background: #e7f0fb; }
.state-stale-snapshot { color: #6b4e00; background: #fdf6dc; }
.state-balanced { color: #3d4652; background: #f1f3f6; }
.phase { font-weight: 600; }
.phase-gated, .phase-waiting-for-a-clear-run { color: #7a3e00; }
.phase-fenced, .phase-offline, .phase-shutting-down { color: #8c1d18; }
.phase-ramping, .phase-leads-all { color: #0b4f8a; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll:focus-visible { outline-offset: -3px; }
.chart-box { overflow-x: auto; }
.filters, .stack { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.stack { flex-direction: column; align-items: flex-start; max-width: 720px; }
input, select, textarea, button { font: inherit; padding: 5px 8px; border: 1px solid #77808c; border-radius: 4px; }
textarea { width: 100%; font-family: ui-monospace, monospace; }
code { overflow-wrap: anywhere; }
button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
header button { background: transparent; border-color: #fff; }
button[aria-pressed="true"] { background: #fff; color: var(--accent); }
.error { color: #8c1d18; font-weight: 600; }
.pages { display: flex; gap: 16px; margin-top: 8px; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; }
.chart { width: 100%; min-width: 760px; height: auto; display: block; }
.chart .axis { stroke: #77808c; } .chart .grid { stroke: #e4e7ec; } .chart .tick { fill: var(--muted); font-size: 13px; }
.chart .axis-title { fill: var(--ink); font-size: 13px; } .chart .down { fill: #fff; stroke-width: 2; }
.chart .band { fill: #f5c27a; fill-opacity: .35; } .chart .limit { stroke: #8c1d18; stroke-dasharray: 6 4; stroke-width: 1.5; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 14px; color: var(--muted); }
.swatch { display: inline-block; width: 14px; height: 10px; margin-right: 6px; vertical-align: middle; }
.swatch.limit { border-top: 2px dashed #8c1d18; height: 0; } .swatch.band { background: #f5c27a; opacity: .6; }
.swatch.down { border: 2px solid #4a5360; background: #fff; width: 10px; }
${PALETTE.map((colour, i) => `.swatch-${i} { background: ${colour}; }`).join("\n")}
.side-by-side { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 24px; }
@media (max-width: 600px) {
  body { font-size: 14px; }
  main { padding: 8px 10px 32px; }
  .facts { grid-template-columns: 1fr; } .facts dd { margin-bottom: 6px; }
  th, td { padding: 5px 6px; }
}
pre { max-height: 240px; overflow: auto; background: #f6f8fa; padding: 8px; }
`;

/** Refreshes a page's live part (#live: the fleet table, a cluster's progress) every 15 s unless paused. */
export const CONSOLE_JS = `
(() => {
  const seconds = Number(document.body.dataset.refresh || 0);
  const pause = document.getElementById("pause");
  if (!seconds || !pause || !document.getElementById("live")) return;
  let paused = false;
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume updates" : "Pause updates";
  });
  setInterval(async () => {
    if (paused || document.hidden) return;
    const url = new URL(location.href);
    url.searchParams.set("fragment", "live");
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) return;
    const live = document.getElementById("live");
    if (live) live.innerHTML = await response.text();
  }, seconds * 1000);
})();
`;
