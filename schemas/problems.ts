import { z } from "zod";
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
    const at = pointer(base, ...(issue.path as (string | number)[]));
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
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
