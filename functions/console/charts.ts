import { escapeHtml, type Html, html, trusted } from "./html.ts";

/**
 * Small SVG charts drawn here, so the console needs no chart library and makes no request of its own.
 * Each has a title and a description for screen readers, axis titles and ticks, and the page lists
 * the same figures in a table beside it.
 */

const WIDTH = 960;
const HEIGHT = 240;
const PAD = { left: 64, right: 16, top: 14, bottom: 48 };
const plotWidth = WIDTH - PAD.left - PAD.right;
const plotHeight = HEIGHT - PAD.top - PAD.bottom;
const X_TICKS = 6;

/** Colours with at least 4.5:1 contrast on white, told apart by dash and marker too. */
export const PALETTE = ["#1f5fa8", "#b3261e", "#1e7a3c", "#7a4ea3", "#8a5a00", "#00697a"];

export interface Point {
  x: number;
  y: number;
  /** Said when the point is hovered or read out. */
  note: string;
  /** Drawn as a hollow square on the top edge instead of a value: the broker was down (fenced, offline). */
  down?: boolean;
}

export interface Series {
  label: string;
  points: Point[];
}

interface Frame {
  title: string;
  description: string;
  xFrom: number;
  xTo: number;
  yMax: number;
  yTitle: string;
  yFormat: (y: number) => string;
}

/** 1, 2 or 5 times a power of ten: at most `count` steps up to `max`, never a fraction of a count. */
export function niceTicks(max: number, count = 4): number[] {
  const raw = Math.max(1, max / count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? raw;
  const top = Math.ceil(max / step) * step;
  return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step);
}

const clockText = (ms: number, withSeconds: boolean) =>
  new Date(ms).toISOString().slice(11, withSeconds ? 19 : 16);

function scale(frame: Frame, yTop: number) {
  const xSpan = Math.max(1, frame.xTo - frame.xFrom);
  return {
    x: (x: number) => PAD.left + ((x - frame.xFrom) / xSpan) * plotWidth,
    y: (y: number) => PAD.top + plotHeight - (Math.min(y, yTop) / yTop) * plotHeight,
  };
}

function axes(frame: Frame, id: string, yTicks: number[], x: (at: number) => number): string {
  const y = scale(frame, yTicks.at(-1) ?? 1).y;
  const span = frame.xTo - frame.xFrom;
  const xTicks = Array.from({ length: X_TICKS }, (_, i) => frame.xFrom + (i * span) / (X_TICKS - 1));
  const bottom = PAD.top + plotHeight;
  return [
    `<title id="${id}-title">${escapeHtml(frame.title)}</title>`,
    `<desc id="${id}-desc">${escapeHtml(frame.description)}</desc>`,
    ...yTicks.map(
      (t) =>
        `<line x1="${PAD.left}" y1="${y(t)}" x2="${WIDTH - PAD.right}" y2="${y(t)}" class="grid"/><text x="${PAD.left - 6}" y="${y(t) + 4}" text-anchor="end" class="tick">${escapeHtml(frame.yFormat(t))}</text>`,
    ),
    `<line x1="${PAD.left}" y1="${bottom}" x2="${WIDTH - PAD.right}" y2="${bottom}" class="axis"/>`,
    `<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${bottom}" class="axis"/>`,
    ...xTicks.map((t, i) => {
      const anchor = i === 0 ? "start" : i === X_TICKS - 1 ? "end" : "middle";
      return `<line x1="${x(t)}" y1="${bottom}" x2="${x(t)}" y2="${bottom + 4}" class="axis"/><text x="${x(t)}" y="${bottom + 17}" text-anchor="${anchor}" class="tick">${clockText(t, span < 3_600_000)}</text>`;
    }),
    `<text x="${PAD.left + plotWidth / 2}" y="${HEIGHT - 6}" text-anchor="middle" class="axis-title">time (UTC)</text>`,
    `<text transform="translate(14 ${PAD.top + plotHeight / 2}) rotate(-90)" text-anchor="middle" class="axis-title">${escapeHtml(frame.yTitle)}</text>`,
  ].join("");
}

/** In a box of its own that scrolls (and can be focused to scroll) where the window is narrower than the chart. */
function svg(id: string, title: string, content: string): Html {
  return trusted(
    `<div class="chart-box" tabindex="0" role="region" aria-label="${escapeHtml(title)}, chart"><svg id="${id}" class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMid meet">${content}</svg></div>`,
  );
}

/** Half the mean gap between runs: how wide one run's stretch is drawn. */
const halfGap = (frame: Frame, runs: number) =>
  Math.max(4, plotWidth / Math.max(1, runs - 1) / 2) * ((frame.xTo - frame.xFrom) / plotWidth);

/**
 * Lines with a marker per point, broken where the broker was down; `bands` shade stretches of x
 * (gated periods, a single run as wide as its share of the axis); `limit` draws a dashed line.
 */
export function lineChart(options: {
  id: string;
  frame: Frame;
  series: Series[];
  runs: number;
  bands?: { from: number; to: number; label: string }[];
  limit?: { y: number; label: string };
}): Html {
  const { frame } = options;
  const yTicks = niceTicks(frame.yMax);
  const { x, y } = scale(frame, yTicks.at(-1) ?? 1);
  const parts = [axes(frame, options.id, yTicks, x)];
  const half = halfGap(frame, options.runs);
  for (const band of options.bands ?? []) {
    const left = x(Math.max(frame.xFrom, band.from - half));
    const right = x(Math.min(frame.xTo, band.to + half));
    parts.push(
      `<rect class="band" x="${left.toFixed(1)}" y="${PAD.top}" width="${(right - left).toFixed(1)}" height="${plotHeight}"><title>${escapeHtml(band.label)}</title></rect>`,
    );
  }
  if (options.limit) {
    const ly = y(options.limit.y);
    parts.push(
      `<line class="limit" x1="${PAD.left}" y1="${ly}" x2="${WIDTH - PAD.right}" y2="${ly}"><title>${escapeHtml(options.limit.label)}</title></line>`,
    );
  }
  options.series.forEach((series, i) => {
    const colour = PALETTE[i % PALETTE.length];
    const dash = i === 0 ? "none" : `${2 + 2 * i} 3`;
    parts.push(`<g class="series" data-series="${escapeHtml(series.label)}">`);
    // One polyline per stretch the broker was up: a down run is no value, not 100 % out of sync.
    let stretch: Point[] = [];
    const flush = () => {
      if (stretch.length > 1)
        parts.push(
          `<polyline fill="none" stroke="${colour}" stroke-width="2" stroke-dasharray="${dash}" points="${stretch.map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join(" ")}"/>`,
        );
      stretch = [];
    };
    for (const p of series.points) {
      if (p.down) {
        flush();
        parts.push(
          `<rect class="point down" x="${(x(p.x) - 4).toFixed(1)}" y="${PAD.top}" width="8" height="8" stroke="${colour}"><title>${escapeHtml(p.note)}</title></rect>`,
        );
        continue;
      }
      stretch.push(p);
      parts.push(
        `<circle class="point" cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="3.5" fill="${colour}"><title>${escapeHtml(p.note)}</title></circle>`,
      );
    }
    flush();
    parts.push("</g>");
  });
  return svg(options.id, frame.title, parts.join(""));
}

/** Bars per x, side by side when there are several series; a run of 0 shows as a flat mark. */
export function barChart(options: { id: string; frame: Frame; series: Series[] }): Html {
  const { frame } = options;
  const yTicks = niceTicks(frame.yMax);
  const { y } = scale(frame, yTicks.at(-1) ?? 1);
  const xs = options.series[0]?.points.length ?? 0;
  const slot = Math.max(3, Math.min(24, plotWidth / Math.max(1, xs) - 2));
  // Bars stay inside the plot: the first and the last are centred half a slot in from its edges.
  const span = Math.max(1, frame.xTo - frame.xFrom);
  const x = (at: number) => PAD.left + slot / 2 + ((at - frame.xFrom) / span) * (plotWidth - slot);
  const width = slot / Math.max(1, options.series.length);
  const bottom = PAD.top + plotHeight;
  const parts = [axes(frame, options.id, yTicks, x)];
  options.series.forEach((series, i) => {
    parts.push(`<g class="series series-${i % PALETTE.length}" data-series="${escapeHtml(series.label)}">`);
    for (const p of series.points) {
      const top = p.y === 0 ? bottom - 2 : y(p.y);
      parts.push(
        `<rect class="bar${p.y === 0 ? " zero" : ""}" x="${(x(p.x) - slot / 2 + i * width).toFixed(1)}" y="${top.toFixed(1)}" width="${width.toFixed(1)}" height="${(bottom - top).toFixed(1)}" fill="${PALETTE[i % PALETTE.length]}"><title>${escapeHtml(p.note)}</title></rect>`,
      );
    }
    parts.push("</g>");
  });
  return svg(options.id, frame.title, parts.join(""));
}

/** The legend under a chart: each series' colour and dash, in words too. */
export function legend(series: Series[], extra: Html[] = []): Html {
  return html`<ul class="legend">
    ${series.map((s, i) => html`<li><span class="swatch swatch-${i % PALETTE.length}"></span>${s.label}</li>`)}
    ${extra}
  </ul>`;
}
