import { afterEach, describe, expect, it } from "vitest";
import { MAX_BATCH_SIZE, purgeSettings } from "../../functions/src/purge/settings";

const KEYS = ["RETENTION_PURGE_BATCH_SIZE", "RETENTION_PURGE_START_OPS_PER_SECOND", "RETENTION_PURGE_MAX_OPS_PER_SECOND"] as const;
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));

describe("purge settings", () => {
  afterEach(() => {
    for (const k of KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it("defaults to Firestore's ramp-up guidance: start at 500 ops/s, ceiling 10,000", () => {
    for (const k of KEYS) delete process.env[k];
    expect(purgeSettings.startOpsPerSecond()).toBe(500);
    expect(purgeSettings.maxOpsPerSecond()).toBe(10_000);
    expect(purgeSettings.batchSize()).toBe(450);
  });

  it("refuses a batch size whose mark transaction would exceed a commit's 500 writes", () => {
    process.env.RETENTION_PURGE_BATCH_SIZE = String(MAX_BATCH_SIZE);
    expect(purgeSettings.batchSize()).toBe(MAX_BATCH_SIZE);
    process.env.RETENTION_PURGE_BATCH_SIZE = String(MAX_BATCH_SIZE + 1);
    expect(() => purgeSettings.batchSize()).toThrow(/RETENTION_PURGE_BATCH_SIZE is 491; at most 490/);
  });
});
