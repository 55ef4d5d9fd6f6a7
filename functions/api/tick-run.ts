import type { EffectiveConfig } from "../../schemas/config.ts";
import type { Snapshot } from "../../schemas/snapshot.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { evaluate } from "../policy/run.ts";
import type { ClusterRecord, DecisionSummary, PacerStore, TickOutcome } from "../store/store.ts";
import { type ManagedAnswer, managedAnswerOf, storeDecision, summaryOf } from "./managed-run.ts";

/**
 * A tick job's run on a snapshot (a stored one, or the worker's own read), saved with the job's tick
 * key in the same conditional write as the state, so that of two deliveries of a job exactly one
 * saves. Null when another run saved first: the caller reads the cluster again and sees which.
 */
export async function saveTickRun(
  store: PacerStore,
  record: ClusterRecord,
  run: { snapshot: Snapshot; config: EffectiveConfig; nowMs: number; key: string; snapshotId?: string },
  decisionTtlMs: number,
): Promise<{ managed: ManagedAnswer; ran: TickOutcome; saved: DecisionSummary | null } | null> {
  const { nowMs, key } = run;
  const answer = evaluate({
    snapshot: run.snapshot,
    config: run.config,
    state: record.state ?? INITIAL_STATE,
    nowMs,
    explain: false,
  });
  // A deferred run changes no state: only its outcome is written, and running it twice is harmless.
  const saves = answer.deferred === null;
  const managed = managedAnswerOf(answer, nowMs, record.version, saves);
  const ran: TickOutcome = { atMs: nowMs, outcome: "ran", decisionId: managed.decisionId };
  let saved: DecisionSummary | null = null;
  if (saves) {
    const lastDecision = summaryOf(managed, { snapshotId: run.snapshotId, tickKey: key });
    const tick = { key, outcome: ran };
    if (
      !(await store.saveRun(record.clusterId, record.version, {
        state: answer.state,
        lastDecision,
        nowMs,
        tick,
      }))
    )
      return null;
    saved = lastDecision;
    await storeDecision(store, record.clusterId, managed, decisionTtlMs);
  } else {
    await store.recordTick(record.clusterId, ran);
    if (answer.deferred)
      await store.recordDeferred(record.clusterId, { atMs: nowMs, reason: answer.deferred });
  }
  return { managed, ran, saved };
}
