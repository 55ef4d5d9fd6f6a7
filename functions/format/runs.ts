import type { BrokerRow, RunAnswer } from "../../schemas/answer.ts";
import { type Column, formatDuration, formatSpan, markdownTable } from "./text.ts";

/** Answers as a person reads them: per run what was elected, what the gate held back, when to ask again. */

interface Row {
  run: number;
  answer: RunAnswer;
  /** Since the first run, for a series (replay). */
  sinceFirstMs?: number;
}

const brokers = (answer: RunAnswer, pick: (row: BrokerRow) => boolean) =>
  answer.brokers
    .filter(pick)
    .map((row) => `${row.id} ${row.reason}`)
    .join(", ") || "-";

const COLUMNS: Column<Row>[] = [
  ["run", (r) => String(r.run)],
  ["elections", (r) => String(r.answer.elections.length)],
  ["more work", (r) => (r.answer.moreWorkRemains ? "yes" : "no")],
  ["next in", (r) => formatSpan(r.answer.nextDelayMs)],
  ["deferred", (r) => r.answer.deferred ?? "-"],
  ["held back", (r) => brokers(r.answer, (row) => row.gated)],
  [
    "let through",
    (r) => brokers(r.answer, (row) => row.reason === "released" || row.reason === "max-wait-expired"),
  ],
  ["skipped by gate", (r) => String(r.answer.metrics.electionsSkippedByGate)],
  ["deferred by throttle", (r) => String(r.answer.metrics.electionsDeferredByThrottle)],
];
const AT: Column<Row> = ["at", (r) => formatDuration(r.sinceFirstMs ?? 0)];

/** `times` (a replay's `now` per line) adds each run's time since the first. */
export function runTable(answers: RunAnswer[], times?: number[]): string {
  const first = times?.[0] ?? 0;
  const rows = answers.map((answer, i) => ({
    run: i + 1,
    answer,
    ...(times ? { sinceFirstMs: (times[i] as number) - first } : {}),
  }));
  return markdownTable(times ? [COLUMNS[0] as Column<Row>, AT, ...COLUMNS.slice(1)] : COLUMNS, rows);
}
