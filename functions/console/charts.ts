import { escapeHtml, type Html, html, trusted } from "./html.ts";

/**
 * Small SVG charts drawn here, so the console needs no chart library and makes no request of its own.
 * Each has a title and a description for screen readers, and the page lists the same figures in a
 * table beside it.
 */

const WIDTH = 640;
const HEIGHT = 220;
const PAD = { left: 48, right: 16, top: 14, bottom: 30 };
const plotWidth = WIDTH - PAD.left - PAD.right;
const plotHeight = HEIGHT - PAD.top - PAD.bottom;

/** Colours with at least 4.5:1 contrast on white, told apart by dash and marker too. */
export const PALETTE = ["#1f5fa8", "#b3261e", "#1e7a3c", "#7a4ea3", "#8a5a00", "#00697a"];

export interface Point {
  x: number;
  y: number;
  /** Said when the point is hovered or read out. */
  note: string;
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
  yFormat: (y: number) => string;
}

const time = (ms: number) => new Date(ms).toISOString().slice(11, 19);

function scale(frame: Frame) {
  const xSpan = Math.max(1, frame.xTo - frame.xFrom);
  return {
    x: (x: number) => PAD.left + ((x - frame.xFrom) / xSpan) * plotWidth,
    y: (y: number) => PAD.top + plotHeight - (Math.min(y, frame.yMax) / frame.yMax) * plotHeight,
  };
}

function axes(frame: Frame, id: string): string {
  const { x, y } = scale(frame);
  const ticks = [0, 0.5, 1].map((f) => f * frame.yMax);
  return [
    `<title id="${id}-title">${escapeHtml(frame.title)}</title>`,
    `<desc id="${id}-desc">${escapeHtml(frame.description)}</desc>`,
    `<line x1="${PAD.left}" y1="${PAD.top + plotHeight}" x2="${WIDTH - PAD.right}" y2="${PAD.top + plotHeight}" class="axis"/>`,
    `<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${PAD.top + plotHeight}" class="axis"/>`,
    ...ticks.map(
      (t) =>
        `<text x="${PAD.left - 6}" y="${y(t) + 4}" text-anchor="end" class="tick">${escapeHtml(frame.yFormat(t))}</text>`,
    ),
    `<text x="${PAD.left}" y="${HEIGHT - 8}" class="tick">${time(frame.xFrom)}</text>`,
    `<text x="${x(frame.xTo)}" y="${HEIGHT - 8}" text-anchor="end" class="tick">${time(frame.xTo)}</text>`,
  ].join("");
}

function svg(id: string, content: string): Html {
  return trusted(
    `<svg id="${id}" class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMid meet">${content}</svg>`,
  );
}

/** Lines with a marker per point; `bands` shade stretches of x (gated periods), `limit` draws a dashed line. */
export function lineChart(options: {
  id: string;
  frame: Frame;
  series: Series[];
  bands?: { from: number; to: number; label: string }[];
  limit?: { y: number; label: string };
}): Html {
  const { frame } = options;
  const { x, y } = scale(frame);
  const parts = [axes(frame, options.id)];
  for (const band of options.bands ?? []) {
    const left = x(band.from);
    parts.push(
      `<rect class="band" x="${left}" y="${PAD.top}" width="${Math.max(2, x(band.to) - left)}" height="${plotHeight}"><title>${escapeHtml(band.label)}</title></rect>`,
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
    const path = series.points.map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join(" ");
    parts.push(
      `<g class="series" data-series="${escapeHtml(series.label)}"><polyline fill="none" stroke="${colour}" stroke-width="2" stroke-dasharray="${i === 0 ? "none" : `${2 + 2 * i} 3`}" points="${path}"/>`,
      ...series.points.map(
        (p) =>
          `<circle class="point" cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="3.5" fill="${colour}"><title>${escapeHtml(p.note)}</title></circle>`,
      ),
      "</g>",
    );
  });
  return svg(options.id, parts.join(""));
}

/** Bars per x, side by side when there are several series. */
export function barChart(options: { id: string; frame: Frame; series: Series[] }): Html {
  const { frame } = options;
  const { y } = scale(frame);
  const xs = options.series[0]?.points.length ?? 0;
  const slot = Math.max(3, Math.min(24, plotWidth / Math.max(1, xs) - 2));
  // Bars stay inside the plot: the first and the last are centred half a slot in from its edges.
  const span = Math.max(1, frame.xTo - frame.xFrom);
  const x = (at: number) => PAD.left + slot / 2 + ((at - frame.xFrom) / span) * (plotWidth - slot);
  const width = slot / Math.max(1, options.series.length);
  const parts = [axes(frame, options.id)];
  options.series.forEach((series, i) => {
    const colour = PALETTE[i % PALETTE.length];
    parts.push(`<g class="series" data-series="${escapeHtml(series.label)}">`);
    for (const p of series.points) {
      const top = y(p.y);
      parts.push(
        `<rect class="bar" x="${(x(p.x) - slot / 2 + i * width).toFixed(1)}" y="${top.toFixed(1)}" width="${width.toFixed(1)}" height="${(PAD.top + plotHeight - top).toFixed(1)}" fill="${colour}"><title>${escapeHtml(p.note)}</title></rect>`,
      );
    }
    parts.push("</g>");
  });
  return svg(options.id, parts.join(""));
}

/** The legend under a chart: each series' colour and dash, in words too. */
export function legend(series: Series[], extra: Html[] = []): Html {
  return html`<ul class="legend">
    ${series.map(
      (s, i) =>
        html`<li><span class="swatch" style="background:${PALETTE[i % PALETTE.length]}"></span>${s.label}</li>`,
    )}
    ${extra}
  </ul>`;
}
