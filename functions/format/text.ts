/** Text for people at a terminal or reading a report: durations and tables. */

/** 1h 02m 03s, 4m 05s; null is a milestone that never came. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return "not reached";
  const seconds = Math.round(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const pad = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}h ${pad(m)}m ${pad(s)}s` : `${m}m ${pad(s)}s`;
}

/** A delay or an age: milliseconds under a second, else as formatDuration. */
export function formatSpan(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : formatDuration(ms);
}

export type Column<T> = [title: string, cell: (row: T) => string];

/** A Markdown table, which also reads well as plain text in a terminal. */
export function markdownTable<T>(columns: Column<T>[], rows: T[]): string {
  const cells = rows.map((row) => columns.map(([, cell]) => cell(row)));
  const widths = columns.map(([title], i) =>
    Math.max(title.length, ...cells.map((c) => (c[i] as string).length)),
  );
  const line = (values: string[]) => `| ${values.map((v, i) => v.padEnd(widths[i] as number)).join(" | ")} |`;
  return [
    line(columns.map(([title]) => title)),
    line(widths.map((w) => "-".repeat(w))),
    ...cells.map(line),
  ].join("\n");
}

/** A rate for a person: 2.0 MB/s, 500 kB/s. */
export function formatRate(bytesPerSecond: number): string {
  return bytesPerSecond >= 1e6
    ? `${(bytesPerSecond / 1e6).toFixed(1)} MB/s`
    : `${Math.round(bytesPerSecond / 1e3)} kB/s`;
}
