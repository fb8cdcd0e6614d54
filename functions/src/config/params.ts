import { defineBoolean, defineInt, defineString } from "firebase-functions/params";

/**
 * Every deploy-time setting, in one place. Each has a default for deploys; the Functions emulator (firebase-tools
 * 14) still prompts for params without a dotenv value, so functions/.env.local mirrors these for the emulators.
 * Add a new param to both.
 * Params reach the runtime as environment variables, which is how infra code reads them lazily
 * (`platform/settings.ts`), so the CLI and tests use the same names.
 */
export const DATABASE_ID = defineString("RETENTION_DATABASE_ID", {
  default: "(default)",
  description: "Firestore database id the control plane governs (named databases are supported).",
});
export const PURGE_SCHEDULE = defineString("RETENTION_PURGE_SCHEDULE", { default: "0 2 * * *", description: "Cron for nightlyPurge." });
export const PURGE_TIMEZONE = defineString("RETENTION_PURGE_TIMEZONE", { default: "Etc/UTC", description: "Time zone of the purge schedule." });
export const AUDIT_SCHEDULE = defineString("RETENTION_AUDIT_SCHEDULE", { default: "30 3 * * *", description: "Cron for retentionAudit." });
export const BACKFILL_SCHEDULE = defineString("RETENTION_BACKFILL_SCHEDULE", { default: "0 4 * * *", description: "Cron for expiryBackfill." });
export const BACKFILL_MAX_DOCS = defineInt("RETENTION_BACKFILL_MAX_DOCS", {
  default: 20_000,
  description: "Documents one scheduled expiryBackfill run scans before it saves its cursor and stops.",
});
export const BACKFILL_MAX_SECONDS = defineInt("RETENTION_BACKFILL_MAX_SECONDS", {
  default: 480,
  description: "Seconds one scheduled expiryBackfill run may start pages for (the function times out at 540).",
});
export const PURGE_START_OPS_PER_SECOND = defineInt("RETENTION_PURGE_START_OPS_PER_SECOND", {
  default: 500,
  description: "Delete rate a purge invocation starts at; it rises 1.5x every 5 minutes (Firestore's 500/50/5 guidance).",
});
export const PURGE_MAX_OPS_PER_SECOND = defineInt("RETENTION_PURGE_MAX_OPS_PER_SECOND", {
  default: 10_000,
  description: "Delete rate ceiling for the purge's ramp (BulkWriter's default ceiling).",
});
export const PURGE_BATCH_SIZE = defineInt("RETENTION_PURGE_BATCH_SIZE", {
  default: 450,
  description: "Documents per purge batch (at most 490): one mark and one decision transaction, one throttled BulkWriter flush, one evidence entry.",
});
export const PURGE_FANOUT_THRESHOLD = defineInt("RETENTION_PURGE_FANOUT_THRESHOLD", {
  default: 5000,
  description: "A purge unit with more manifest paths than this runs as a chain of purgeChunk tasks.",
});
export const PURGE_CHUNK_STEPS = defineInt("RETENTION_PURGE_CHUNK_STEPS", {
  default: 40,
  description: "Purge steps (mark or execute one batch) per purgeChunk task invocation.",
});
export const PURGE_LEASE_SECONDS = defineInt("RETENTION_PURGE_LEASE_SECONDS", {
  default: 600,
  description: "How long a purge lease lasts without renewal (every step renews it); a crashed run's work resumes after it.",
});
export const PURGE_SWEEP_LIMIT = defineInt("RETENTION_PURGE_SWEEP_LIMIT", {
  default: 2000,
  description: "Expired documents the policy sweep takes per collection and run.",
});
export const PURGE_MAX_REQUESTS = defineInt("RETENTION_PURGE_MAX_REQUESTS", {
  default: 200,
  description: "Deletion requests one nightlyPurge run takes on.",
});
export const REQUEST_COOLDOWN_MINUTES = defineInt("RETENTION_REQUEST_COOLDOWN_MINUTES", {
  default: 60,
  description: "After a cancel, a new deletion request from the same user waits this long, doubled for each further cancel in 30 days (up to 7 days); 0 turns it off.",
});
export const PURGE_BRAKE_APPROVAL_HOURS = defineInt("RETENTION_BRAKE_APPROVAL_HOURS", {
  default: 24,
  description: "Hours a retention-admin's approval of a tripped mass-deletion brake (approvePurgeRun) stays usable.",
});
export const STATUS_REFRESH_MINUTES = defineInt("RETENTION_STATUS_REFRESH_MINUTES", {
  default: 15,
  description: "getDeletionStatus plans the subject again at most this often (and whenever holds change).",
});
export const ENFORCE_APP_CHECK = defineBoolean("RETENTION_ENFORCE_APP_CHECK", {
  default: true,
  description: "Refuse the user-facing callables (requestAccountDeletion, cancelAccountDeletion, getDeletionStatus) without a valid App Check token.",
});
