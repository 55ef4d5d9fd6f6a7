import { move } from "piscina";
import heavyWork, { type HeavyTask } from "./heavy-work.ts";

/**
 * heavyWork in a worker thread (offload.ts): an evaluation's answer goes back as its bytes,
 * transferred rather than copied; anything else as a structured clone.
 */
export default function heavyWorker(task: HeavyTask) {
  const result = heavyWork(task);
  return result.kind === "answer" ? move(result.body) : result;
}
