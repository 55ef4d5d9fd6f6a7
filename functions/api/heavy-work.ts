import type { RunAnswer } from "../../schemas/answer.ts";
import { invalidInput, type ProblemDetails } from "../../schemas/problems.ts";
import { validateEvaluateRequest, validateManagedRequest } from "../../schemas/request.ts";
import type { PacerState } from "../../schemas/state.ts";
import { evaluateRequest, type RequestContext } from "../policy/request.ts";
import { parseJsonBytes } from "./body.ts";

/**
 * The CPU-bound part of a request (parse, validate, run the policy, write the answer) as pure
 * functions of the body's bytes: what a worker thread does for a large body, so that the server's
 * event loop stays free for everyone else. The same code runs in-process for small bodies.
 */

export type HeavyTask =
  | { kind: "evaluate"; bytes: Uint8Array; clockMs: number; explain: boolean }
  | { kind: "check-managed"; bytes: Uint8Array }
  | { kind: "run-managed"; bytes: Uint8Array; state: PacerState; nowMs: number; context: RequestContext };

export type HeavyResult =
  | { kind: "answer"; body: Uint8Array<ArrayBuffer> }
  | { kind: "problem"; problem: ProblemDetails }
  | { kind: "valid" }
  | { kind: "run"; answer: RunAnswer };

const ENCODER = new TextEncoder();

export default function heavyWork(task: HeavyTask): HeavyResult {
  const parsed = parseJsonBytes(task.bytes);
  if (!parsed.ok) return { kind: "problem", problem: parsed.problem };
  if (task.kind === "evaluate") {
    const request = validateEvaluateRequest(parsed.value);
    if (!request.ok) return { kind: "problem", problem: invalidInput(request.problems) };
    const answer = evaluateRequest(request.value, { clockMs: task.clockMs, explain: task.explain });
    // Bytes in a buffer of their own: a worker hands them back without a copy (heavy-worker.ts).
    return { kind: "answer", body: ENCODER.encode(JSON.stringify(answer)) };
  }
  const request = validateManagedRequest(parsed.value);
  if (!request.ok) return { kind: "problem", problem: invalidInput(request.problems) };
  if (task.kind === "check-managed") return { kind: "valid" };
  const answer = evaluateRequest({ ...request.value, state: task.state, nowMs: task.nowMs }, task.context);
  return { kind: "run", answer };
}
