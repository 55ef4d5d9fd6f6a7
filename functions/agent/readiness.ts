import { partitionKey } from "../kafka/admin.ts";
import type { ClusterRead } from "./snapshot.ts";

/**
 * Whether a restarted broker is back, as a rolling restart needs to know before it stops the next
 * one: registered and unfenced, in the ISR of every partition it hosts, and leading at least a
 * share of its preferred partitions (the proposal's "recovered" is 99 %: 990 of 1,000).
 */
export interface Readiness {
  broker: number;
  registered: boolean;
  fenced: boolean;
  /** Partitions it is a replica of, and of those the ones where it is in the ISR. */
  hosted: number;
  inSync: number;
  /** Partitions whose preferred (first) replica it is, not being reassigned, and those it leads. */
  preferred: number;
  leading: number;
  /** The leading count it needs: the share of `preferred`, rounded up. */
  leadingNeeded: number;
  ready: boolean;
  /** What is still missing, in words; empty when ready. */
  missing: string[];
}

export function readinessOf(read: ClusterRead, broker: number, leadingPercent: number): Readiness {
  const registration = read.brokers.find((b) => b.id === broker);
  const reassigning = new Set(read.reassigning.map(partitionKey));
  let hosted = 0;
  let inSync = 0;
  let preferred = 0;
  let leading = 0;
  for (const p of read.partitions) {
    if (p.replicas.includes(broker)) {
      hosted++;
      if (p.isr.includes(broker)) inSync++;
    }
    if (p.replicas[0] === broker && !reassigning.has(partitionKey(p))) {
      preferred++;
      if (p.leader === broker) leading++;
    }
  }
  const leadingNeeded = Math.ceil((leadingPercent * preferred) / 100);
  const missing: string[] = [];
  // KRaft keeps a stopped broker registered, fenced; before Kafka 4.0 an unlisted one is down.
  if (!registration) missing.push("not registered (down, or still starting)");
  else if (registration.fenced) missing.push("fenced (down, or not yet caught up with the metadata)");
  if (inSync < hosted) missing.push(`out of the ISR of ${hosted - inSync} of its ${hosted} partitions`);
  if (leading < leadingNeeded)
    missing.push(`leads ${leading} of its ${preferred} preferred partitions, needs ${leadingNeeded}`);
  return {
    broker,
    registered: registration !== undefined,
    fenced: registration?.fenced ?? false,
    hosted,
    inSync,
    preferred,
    leading,
    leadingNeeded,
    ready: missing.length === 0,
    missing,
  };
}

export interface ProgressSample {
  atMs: number;
  inSync: number;
  leading: number;
}

/**
 * The time left from the pace of the last minute: first the partitions still out of the ISR at the
 * rate it rejoined them, then the leadership still to come at the rate it came. Null while the
 * stage it is in has not moved.
 */
export function timeLeftMs(samples: ProgressSample[], now: Readiness, windowMs = 60_000): number | null {
  const last = samples.at(-1);
  if (!last) return null;
  const first = samples.find((s) => s.atMs >= last.atMs - windowMs) ?? last;
  const spanMs = last.atMs - first.atMs;
  if (spanMs <= 0) return null;
  if (now.inSync < now.hosted) {
    const rate = (last.inSync - first.inSync) / spanMs;
    return rate > 0 ? Math.round((now.hosted - now.inSync) / rate) : null;
  }
  if (now.leading >= now.leadingNeeded) return 0;
  const rate = (last.leading - first.leading) / spanMs;
  return rate > 0 ? Math.round((now.leadingNeeded - now.leading) / rate) : null;
}
