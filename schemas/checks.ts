import { type InputProblem, MAX_LISTED_PROBLEMS } from "./problems.ts";

/**
 * Plain checks on parsed JSON for the validators that walk large inputs in place (snapshot, state):
 * no copies, no recursion, and a problem list that says when it is full.
 */

export const MAX_BROKER_ID = 2_147_483_647;
export const BROKER_ID_RULE = `an integer 0–${MAX_BROKER_ID}`;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export const isInt = (v: unknown, min: number, max: number): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;

/** Written out rather than through isInt: it runs for every id of a million-partition snapshot. */
export const isBrokerId = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= MAX_BROKER_ID;

/**
 * Problems up to MAX_LISTED_PROBLEMS; `report` answers whether there is room for more, to stop a walk,
 * and `room` asks before a problem's pointer and message are built.
 */
export function problemList() {
  const problems: InputProblem[] = [];
  const room = (): boolean => problems.length < MAX_LISTED_PROBLEMS;
  const report = (at: string, detail: string): boolean => {
    problems.push({ pointer: at, detail });
    return room();
  };
  return { problems, report, room };
}
