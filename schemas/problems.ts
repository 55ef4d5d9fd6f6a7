import * as z from "zod";
import { suggestConfigKey } from "./config.ts";

/** One thing wrong with an input, located by an RFC 6901 JSON Pointer. */
export const InputProblem = z
  .object({ pointer: z.string(), detail: z.string() })
  .meta({ id: "InputProblem", description: "One problem of the input, at its JSON Pointer." });
export type InputProblem = z.infer<typeof InputProblem>;

/** RFC 9457 problem details, as every error of the service and the CLI is reported. */
export const ProblemDetails = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().optional(),
    errors: z.array(InputProblem).optional(),
  })
  .meta({ id: "ProblemDetails", description: "RFC 9457 problem details (application/problem+json)." });
export type ProblemDetails = z.infer<typeof ProblemDetails>;

/** At most this many problems are listed; a body with a million bad partitions gets a readable answer. */
export const MAX_LISTED_PROBLEMS = 100;

export function pointer(base: string, ...segments: (string | number)[]): string {
  return base + segments.map((s) => `/${String(s).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

/** Zod issues as problems, with an unknown configuration key's likely meaning suggested. */
export function problemsFromZod(error: z.ZodError, base = ""): InputProblem[] {
  const problems: InputProblem[] = [];
  for (const issue of error.issues) {
    if (problems.length >= MAX_LISTED_PROBLEMS) break;
    const at = pointer(base, ...(issue.path as (string | number)[]));
    if (issue.code === "unrecognized_keys") {
      // A suggestion costs a string distance per known key: only for the keys that are listed.
      for (const key of issue.keys.slice(0, MAX_LISTED_PROBLEMS - problems.length)) {
        // Only configuration keys are dotted, so only they get a suggestion.
        const suggestion = key.includes(".") ? suggestConfigKey(key) : undefined;
        problems.push({
          pointer: pointer(at, key),
          detail: `unknown key "${key}"${suggestion ? `; did you mean "${suggestion}"?` : ""}`,
        });
      }
    } else {
      problems.push({ pointer: at, detail: issue.message });
    }
  }
  return problems;
}

/** The outcome of validating an input: the typed value, or every problem found. */
export type Validated<T> = { ok: true; value: T } | { ok: false; problems: InputProblem[] };

export function validateWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  base = "",
): Validated<z.output<S>> {
  const result = schema.safeParse(input);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, problems: problemsFromZod(result.error, base) };
}

/** The problem types the service and the CLI report; `type` is a URI reference relative to the service. */
export const PROBLEM_TYPES = {
  "invalid-input": { status: 400, title: "The input is not valid" },
  "invalid-json": { status: 400, title: "The body is not JSON" },
  unauthorized: { status: 401, title: "A valid bearer token is required" },
  forbidden: { status: 403, title: "This token may not act on this cluster" },
  "not-found": { status: 404, title: "Not found" },
  "method-not-allowed": { status: 405, title: "Method not allowed" },
  conflict: { status: 409, title: "The state changed under this run too often" },
  "record-changed": { status: 409, title: "The record changed since it was read" },
  "cluster-connected": {
    status: 409,
    title: "The service reads and paces this cluster itself; an agent beside it would act twice",
  },
  "idempotency-key-reused": { status: 422, title: "The Idempotency-Key was used with another request" },
  "payload-too-large": { status: 413, title: "The body is too large" },
  "unsupported-media-type": { status: 415, title: "The body must be application/json" },
  "store-unavailable": { status: 503, title: "The state store is unavailable; no elections" },
  "store-rejected": { status: 507, title: "The state store refused the write; no elections" },
} as const;
export type ProblemType = keyof typeof PROBLEM_TYPES;

export function problem(type: ProblemType, detail: string, errors?: InputProblem[]): ProblemDetails {
  const { status, title } = PROBLEM_TYPES[type];
  return { type: `/problems/${type}`, title, status, detail, ...(errors ? { errors } : {}) };
}

export function invalidInput(problems: InputProblem[], what = "request"): ProblemDetails {
  const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
  return problem(
    "invalid-input",
    `The ${what} has ${count}: ${problems[0]?.pointer || "/"}: ${problems[0]?.detail}`,
    problems,
  );
}
