import type { RunReport } from "../agent/agent.ts";
import { formatRate } from "./text.ts";

/** A dry run lists this many of its batch's partitions on its line; --json has them all. */
const LISTED = 20;

/** The line a person reads for each run. */
export function formatRun(report: RunReport): string {
  const time = new Date(report.atMs).toISOString();
  if (report.error !== undefined) {
    const where = report.failedStep ? `${report.failedStep} failed: ` : "";
    return `${time} run failed, nothing elected: ${where}${report.error}`;
  }
  const e = report.elections;
  const failed = Object.values(e.failed).reduce((a, b) => a + b, 0);
  const codes = Object.entries(e.failed).map(([code, n]) => `${n}×${code}`);
  const parts = [
    report.dryRun
      ? `asked ${e.asked} (dry run: nothing elected)`
      : `asked ${e.asked}, done ${e.done}, not needed ${e.notNeeded}, failed ${failed}${codes.length ? ` (${codes.join(", ")})` : ""}`,
  ];
  if (report.resumed) parts.unshift(resumedPart(report.resumed));
  if (e.requestError) parts.push(`request failed: ${e.requestError}`);
  if (report.deferred) parts.push(`deferred: ${report.deferred}`);
  parts.push(
    report.heldBack.length
      ? `held back: ${report.heldBack.map((b) => `broker ${b.id} ${b.reason} (${heldBackDetail(b)})`).join(", ")}`
      : "held back: none",
  );
  if (report.catchUp) parts.push(...catchUpParts(report.catchUp, report.dryRun));
  parts.push(`next in ${(report.nextDelayMs / 1000).toFixed(report.nextDelayMs < 10_000 ? 1 : 0)} s`);
  if (report.batch?.length) {
    const listed = report.batch.slice(0, LISTED).map((e) => `${e.topic}-${e.partition} -> ${e.leader}`);
    const more = report.batch.length > LISTED ? `, … ${report.batch.length - LISTED} more` : "";
    parts.push(`would elect ${listed.join(", ")}${more}`);
  }
  return `${time} ${parts.join("; ")}`;
}

/** "back after 12 s: 4 runs failed reading the cluster, nothing elected meanwhile". */
export function resumedPart(r: NonNullable<RunReport["resumed"]>): string {
  const runs = `${r.failedRuns} run${r.failedRuns === 1 ? "" : "s"} failed`;
  const step = r.lastFailedStep ? ` ${r.lastFailedStep}` : "";
  return `back after ${Math.round(r.afterMs / 1000)} s: ${runs}${step}, nothing elected meanwhile`;
}

function heldBackDetail(b: RunReport["heldBack"][number]): string {
  const share = `${b.outOfSync}/${b.total} out of sync`;
  if (b.reason !== "over-max-lag-bytes") return share;
  const lag = b.lagBytes === undefined ? "lag unknown" : `${(b.lagBytes / 1e6).toFixed(1)} MB to fetch`;
  return `${share}, ${lag}`;
}

/** Catch-up pacing's part of the line: only what there is to say (nothing while nothing is throttled). */
function catchUpParts(c: NonNullable<RunReport["catchUp"]>, dryRun: boolean): string[] {
  const parts: string[] = [];
  if (c.throttled.length)
    parts.push(
      `catch-up throttled: ${c.throttled
        .map(
          (t) =>
            `broker ${t.broker} at ${formatRate(t.rateBytesPerSecond)} on ${t.replicas} replicas (${t.side} side) since ${new Date(t.sinceMs).toISOString().slice(11, 19)}`,
        )
        .join(", ")}`,
    );
  if (c.lifted.length) parts.push(`catch-up throttle lifted: broker ${c.lifted.join(", broker ")}`);
  for (const broker of c.liftWhenBack) parts.push(liftWhenBackPart(broker));
  for (const b of c.leftAlone)
    parts.push(`broker ${b.broker}: its own ${b.config} (${b.rate} B/s, ${b.source}) left as it is`);
  if (dryRun && c.changes.length) {
    const listed = c.changes.slice(0, 4).join("; ");
    parts.push(`would change ${listed}${c.changes.length > 4 ? `; … ${c.changes.length - 4} more` : ""}`);
  }
  if (c.errors.length)
    parts.push(`catch-up throttle not done (tried again next run): ${c.errors.join("; ")}`);
  return parts;
}

export const liftWhenBackPart = (broker: number) =>
  `broker ${broker} is down: its catch-up throttle is lifted once it is back`;
