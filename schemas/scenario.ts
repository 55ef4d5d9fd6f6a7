import * as z from "zod";
import { ConfigOverrides } from "./config.ts";

/** A recovery to simulate: a cluster, the brokers that restart, how they catch up, and the config. */
export const CatchUpModel = z
  .object({
    kind: z
      .enum(["staggered-uniform", "long-tailed"])
      .describe(
        "staggered-uniform: ISR re-entry uniform in [minMs, maxMs] after unfencing. long-tailed: minMs plus a Pareto tail with median medianMs.",
      ),
    minMs: z.number().int().min(0),
    maxMs: z.number().int().min(0).optional().describe("staggered-uniform: the last re-entry"),
    medianMs: z.number().int().min(1).optional().describe("long-tailed: the median delay beyond minMs"),
    stuckShare: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe("Share of each broker's partitions that never catch up"),
    stuckCount: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe("A fixed number of stuck partitions per broker, on top"),
  })
  .meta({ id: "CatchUpModel" });
export type CatchUpModel = z.infer<typeof CatchUpModel>;

export const Scenario = z
  .strictObject({
    name: z.string(),
    description: z.string(),
    seed: z.number().int().default(1),
    cluster: z.object({
      brokers: z.number().int().min(3).describe("Broker ids 1..brokers; replication factor 3"),
      partitionsPerBroker: z.number().int().min(1).describe("Preferred partitions per broker"),
      partitionsPerTopic: z.number().int().min(1).default(50),
    }),
    restarts: z
      .array(
        z.object({
          broker: z.number().int().min(1),
          downAtMs: z.number().int().min(0),
          upAtMs: z.number().int().min(0),
        }),
      )
      .min(1),
    catchUp: CatchUpModel,
    config: ConfigOverrides,
    compare: z
      .object({ label: z.string(), config: ConfigOverrides })
      .optional()
      .describe("A second config, run on the same recovery and shown beside the first"),
    label: z.string().default("config").describe("How the report names the first config"),
    durationMs: z.number().int().min(1).describe("Simulated time after which the controller stops"),
  })
  .meta({ id: "Scenario" });
export type Scenario = z.infer<typeof Scenario>;
