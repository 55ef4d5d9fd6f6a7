import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as z from "zod";

/**
 * What the agent set on a cluster for catch-up pacing, kept so that it can be lifted by the same hand
 * after a crash: each rate it set (`config@broker`) with its value, each list entry it appended
 * (`config@topic`), and since when it has throttled each broker catching up.
 */
export const ThrottleRecord = z.object({
  rates: z.record(
    z.string().regex(/^[a-z.]+@\d+$/),
    z.object({ rateBytesPerSecond: z.number().int().min(1) }),
  ),
  lists: z.record(z.string().regex(/^[a-z.]+@.+$/), z.array(z.string().regex(/^\d+:\d+$/))),
  throttlingSinceMs: z.record(z.string().regex(/^\d+$/), z.number().int().min(0)),
  /** Set before changes are sent, cleared once a run's changes all went through: else sent again. */
  unconfirmed: z.boolean().optional(),
});
export type ThrottleRecord = z.infer<typeof ThrottleRecord>;

export interface ThrottleRecordStore {
  load(): Promise<ThrottleRecord>;
  save(record: ThrottleRecord): Promise<void>;
}

export const EMPTY_RECORD: ThrottleRecord = { rates: {}, lists: {}, throttlingSinceMs: {} };

/**
 * The record as a JSON file in the agent's data directory, replaced whole by a rename so that a crash
 * leaves the old record or the new one, never half of one.
 */
export class FileThrottleRecord implements ThrottleRecordStore {
  readonly path: string;

  constructor(private readonly dataDir: string) {
    this.path = join(dataDir, "catch-up-throttles.json");
  }

  async load(): Promise<ThrottleRecord> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return structuredClone(EMPTY_RECORD);
      throw error;
    }
    const parsed = ThrottleRecord.safeParse(JSON.parse(text));
    if (!parsed.success)
      throw new Error(`${this.path} is not a catch-up throttle record: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  }

  async save(record: ThrottleRecord): Promise<void> {
    await mkdir(this.dataDir, { recursive: true });
    const next = `${this.path}.next`;
    await writeFile(next, `${JSON.stringify(record, null, 2)}\n`);
    await rename(next, this.path);
  }
}
