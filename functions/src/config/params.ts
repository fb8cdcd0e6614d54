import { defineInt, defineString } from "firebase-functions/params";

/**
 * Every deploy-time setting, in one place. Each has a default so the emulators need no .env file.
 * Params reach the runtime as environment variables, which is how infra code reads them lazily
 * (`infra/settings.ts`), so the CLI and tests use the same names.
 */
export const DATABASE_ID = defineString("RETENTION_DATABASE_ID", {
  default: "(default)",
  description: "Firestore database id the control plane governs (named databases are supported).",
});
export const PURGE_SCHEDULE = defineString("RETENTION_PURGE_SCHEDULE", { default: "0 2 * * *", description: "Cron for nightlyPurge." });
export const PURGE_TIMEZONE = defineString("RETENTION_PURGE_TIMEZONE", { default: "Etc/UTC", description: "Time zone of the purge schedule." });
export const AUDIT_SCHEDULE = defineString("RETENTION_AUDIT_SCHEDULE", { default: "30 3 * * *", description: "Cron for retentionAudit." });
export const BACKFILL_SCHEDULE = defineString("RETENTION_BACKFILL_SCHEDULE", { default: "0 4 * * *", description: "Cron for expiryBackfill." });
export const PURGE_MAX_OPS_PER_SECOND = defineInt("RETENTION_PURGE_MAX_OPS_PER_SECOND", {
  default: 500,
  description: "Delete rate ceiling for the purge (Firestore's 500/50/5 ramp-up guidance starts at 500 ops/s).",
});
