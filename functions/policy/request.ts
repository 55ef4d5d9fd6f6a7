import type { RunAnswer } from "../../schemas/answer.ts";
import { type ConfigOverrides, effectiveConfig } from "../../schemas/config.ts";
import type { ValidEvaluateRequest } from "../../schemas/request.ts";
import { INITIAL_STATE } from "../../schemas/state.ts";
import { evaluate } from "./run.ts";

export interface RequestContext {
  /** The caller's clock, used when the request names no `now`. */
  clockMs: number;
  /** Stored configuration layers under the request's own (fleet, then cluster). */
  storedConfig?: ConfigOverrides[];
  explain?: boolean;
}

/** A validated request run through the policy: defaults ← stored layers ← the request's config. */
export function evaluateRequest(request: ValidEvaluateRequest, context: RequestContext): RunAnswer {
  return evaluate({
    snapshot: request.snapshot,
    config: effectiveConfig(...(context.storedConfig ?? []), request.config),
    state: request.state ?? INITIAL_STATE,
    nowMs: request.nowMs ?? context.clockMs,
    explain: context.explain ?? false,
  });
}
