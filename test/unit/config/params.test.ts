import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { renderEnvLocal, SETTINGS } from "../../../functions/src/config/params";
import { setting } from "../../../functions/src/platform/settings";
import { purgeSettings } from "../../../functions/src/purge/settings";

describe("settings: one table, one reader", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const s of Object.values(SETTINGS)) {
      if (saved[s.env] === undefined) delete process.env[s.env];
      else process.env[s.env] = saved[s.env];
    }
  });

  it("functions/.env.local is exactly what the table renders (run `npm run settings:env` after a change)", () => {
    expect(readFileSync(join(__dirname, "..", "..", "..", "functions", ".env.local"), "utf8")).toBe(renderEnvLocal());
  });

  it("reads each setting by its param's name, with the table's default", () => {
    for (const s of Object.values(SETTINGS)) delete process.env[s.env];
    expect(setting("purgeBatchSize")).toBe(450);
    expect(purgeSettings.batchSize()).toBe(450);
    expect(setting("enforceAppCheck")).toBe(true);
    expect(setting("databaseId")).toBe("(default)");
    // The purge's ramp defaults to Firestore's guidance: start at 500 ops/s, ceiling 10,000.
    expect([purgeSettings.startOpsPerSecond(), purgeSettings.maxOpsPerSecond()]).toEqual([500, 10_000]);
    process.env.RETENTION_PURGE_BATCH_SIZE = "200";
    process.env.RETENTION_ENFORCE_APP_CHECK = "false";
    expect(purgeSettings.batchSize()).toBe(200);
    expect(setting("enforceAppCheck")).toBe(false);
  });

  it("the recovery windows default to what the registry's recovery notes say (PITR 7 days, exports 35 days); 0 turns each off", () => {
    for (const s of Object.values(SETTINGS)) delete process.env[s.env];
    expect(purgeSettings.recoveryWindows()).toEqual({ pitrDays: 7, backupRetentionDays: 35, archiveKeyDestroyDays: 30 });
    process.env.RETENTION_PITR_DAYS = "0";
    process.env.RETENTION_BACKUP_RETENTION_DAYS = "0";
    expect(purgeSettings.recoveryWindows()).toEqual({ pitrDays: 0, backupRetentionDays: 0, archiveKeyDestroyDays: 30 });
    // Firestore keeps point-in-time versions for 7 days: anything else is a typo.
    process.env.RETENTION_PITR_DAYS = "14";
    expect(() => purgeSettings.recoveryWindows()).toThrow(/RETENTION_PITR_DAYS must be an integer of at least 0 and at most 7, got 14/);
    process.env.RETENTION_PITR_DAYS = "7";
    process.env.RETENTION_BACKUP_RETENTION_DAYS = "-1";
    expect(() => purgeSettings.recoveryWindows()).toThrow(/RETENTION_BACKUP_RETENTION_DAYS/);
  });

  it("fails loudly on a value outside the table's kind or bounds", () => {
    process.env.RETENTION_PURGE_BATCH_SIZE = "491";
    expect(() => purgeSettings.batchSize()).toThrow(/RETENTION_PURGE_BATCH_SIZE must be an integer of at least 1 and at most 490, got 491/);
    process.env.RETENTION_PURGE_BATCH_SIZE = "12.5";
    expect(() => setting("purgeBatchSize")).toThrow(/RETENTION_PURGE_BATCH_SIZE/);
    process.env.RETENTION_REQUEST_COOLDOWN_MINUTES = "0";
    expect(setting("requestCooldownMinutes")).toBe(0);
    process.env.RETENTION_ENFORCE_APP_CHECK = "yes";
    expect(() => setting("enforceAppCheck")).toThrow(/true or false/);
  });
});
