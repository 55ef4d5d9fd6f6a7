import * as z from "zod";
import { ConfigOverrides } from "./config.ts";
import { type InputProblem, pointer, type Validated, validateWith } from "./problems.ts";
import { type Snapshot, Snapshot as SnapshotSchema, validateSnapshot } from "./snapshot.ts";
import { type PacerState, PacerState as PacerStateSchema, validateState } from "./state.ts";

/** The body of POST /v1/evaluate and of `pacer evaluate` (SPEC §5). */
export const EvaluateRequest = z
  .strictObject({
    snapshot: SnapshotSchema,
    config: ConfigOverrides.optional(),
    state: PacerStateSchema.optional().describe(
      "The state the previous answer returned; none for the first run",
    ),
    now: z.number().int().min(0).optional().describe("The run's time in epoch ms; defaults to the clock"),
  })
  .meta({ id: "EvaluateRequest" });

export interface ValidEvaluateRequest {
  snapshot: Snapshot;
  config: ConfigOverrides;
  state: PacerState | undefined;
  nowMs: number | undefined;
}

const Envelope = z.strictObject({
  snapshot: z.unknown(),
  config: z.unknown().optional(),
  state: z.unknown().optional(),
  now: z.unknown().optional(),
});

/**
 * Checks a request part by part, so that every problem of every part is reported at once; the snapshot
 * goes through its fast in-place check rather than a zod copy.
 */
export function validateEvaluateRequest(input: unknown, base = ""): Validated<ValidEvaluateRequest> {
  const envelope = validateWith(Envelope, input, base);
  if (!envelope.ok) return envelope;
  const body = envelope.value;
  const problems: InputProblem[] = [];
  if (body.snapshot === undefined)
    problems.push({ pointer: pointer(base, "snapshot"), detail: "snapshot is required" });
  const snapshot =
    body.snapshot === undefined ? undefined : validateSnapshot(body.snapshot, pointer(base, "snapshot"));
  const config = validateWith(ConfigOverrides, body.config ?? {}, pointer(base, "config"));
  const state = body.state === undefined ? undefined : validateState(body.state, pointer(base, "state"));
  const now = validateWith(z.number().int().min(0).optional(), body.now, pointer(base, "now"));
  for (const part of [snapshot, config, state, now]) if (part && !part.ok) problems.push(...part.problems);
  if (problems.length > 0 || !snapshot?.ok || !config.ok || (state && !state.ok) || !now.ok) {
    return { ok: false, problems };
  }
  return {
    ok: true,
    value: { snapshot: snapshot.value, config: config.value, state: state?.value, nowMs: now.value },
  };
}

/** The body of POST /v1/clusters/{id}/evaluate: the server keeps the state and owns the clock. */
export const ManagedEvaluateRequest = z
  .strictObject({ snapshot: SnapshotSchema, config: ConfigOverrides.optional() })
  .meta({ id: "ManagedEvaluateRequest" });

export function validateManagedRequest(input: unknown): Validated<ValidEvaluateRequest> {
  const body = typeof input === "object" && input !== null ? (input as Record<string, unknown>) : {};
  const serverOwned = ["state", "now"].filter((key) => key in body);
  const result = validateEvaluateRequest(input);
  const problems = serverOwned.map((key) => ({
    pointer: `/${key}`,
    detail: `"${key}" is not accepted here: the managed endpoint keeps the state and uses the server clock`,
  }));
  if (problems.length === 0) return result;
  return { ok: false, problems: [...problems, ...(result.ok ? [] : result.problems)] };
}

/** Cluster ids: 1–128 of [A-Za-z0-9._:-] (SPEC §5). */
export const CLUSTER_ID = /^[A-Za-z0-9._:-]{1,128}$/;
export const ClusterId = z.string().regex(CLUSTER_ID).meta({ id: "ClusterId" });
