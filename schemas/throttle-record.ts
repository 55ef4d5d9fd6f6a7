import * as z from "zod";

/**
 * What an agent set on a cluster for catch-up pacing, kept in the store so that whoever paces the
 * cluster next lifts it by the same hand, even after a crash: each rate it set (`config@broker`) with
 * its value, each list entry it appended (`config@topic`), and since when it has throttled each
 * broker catching up.
 */
export const ThrottleRecord = z
  .object({
    rates: z.record(
      z.string().regex(/^[a-z.]+@\d+$/),
      z.object({ rateBytesPerSecond: z.number().int().min(1) }).strict(),
    ),
    lists: z.record(
      z.string().regex(/^[a-z.]+@.+$/),
      z.array(z.string().regex(/^\d+:\d+$/, "entries are partition:broker")),
    ),
    throttlingSinceMs: z.record(z.string().regex(/^\d+$/), z.number().int().min(0)),
    /** Set before changes are sent, cleared once a run's changes all went through: else sent again. */
    unconfirmed: z.boolean().optional(),
  })
  .strict()
  .meta({ id: "CatchUpThrottleRecord" });
export type ThrottleRecord = z.infer<typeof ThrottleRecord>;

export const EMPTY_RECORD: ThrottleRecord = { rates: {}, lists: {}, throttlingSinceMs: {} };

/** The record with its version: a write names the version it read, so that two writers never both win. */
export const VersionedThrottleRecord = z
  .object({ version: z.number().int().min(0), record: ThrottleRecord })
  .strict()
  .meta({ id: "VersionedCatchUpThrottleRecord" });
export type VersionedThrottleRecord = z.infer<typeof VersionedThrottleRecord>;
