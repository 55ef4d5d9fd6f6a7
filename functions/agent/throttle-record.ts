import type { ThrottleRecord } from "../../schemas/throttle-record.ts";
import type { PacerClient } from "./pacer-client.ts";

export interface ThrottleRecordStore {
  load(): Promise<ThrottleRecord>;
  save(record: ThrottleRecord): Promise<void>;
}

/**
 * The record in the pacer's store, next to the cluster's state: the embedded store under `--data-dir`,
 * or the service's table in managed and scheduled runs, so that an agent started anywhere after a
 * crash finds what the last one set. Each write names the version last read, so that a second agent
 * on the cluster is refused (409) rather than writing over the record of the first.
 */
export class StoredThrottleRecord implements ThrottleRecordStore {
  private version: number | undefined;

  constructor(private readonly pacer: Pick<PacerClient, "getThrottleRecord" | "putThrottleRecord">) {}

  async load(): Promise<ThrottleRecord> {
    const { version, record } = await this.pacer.getThrottleRecord();
    this.version = version;
    return record;
  }

  async save(record: ThrottleRecord): Promise<void> {
    if (this.version === undefined)
      throw new Error("the catch-up throttle record was saved before it was read");
    this.version = await this.pacer.putThrottleRecord(record, this.version);
  }
}
