import { defineBoolean, defineInt, defineSecret, defineString, type Param } from "firebase-functions/params";
import toRegexRange from "to-regex-range";

/**
 * Every setting of the service, defined once. Each is a deploy-time param (below) with a default; Cloud
 * Functions hands params to the runtime as environment variables, and `platform/settings.ts#setting` reads
 * them back by the same names, lazily, with these defaults and bounds, for the functions, the CLI and the
 * tests alike. `functions/.env.local` (the values the Functions emulator needs, since firebase-tools 14
 * prompts for every param without one) is rendered from this table by `npm run settings:env`, and a test
 * keeps the file and the table equal.
 */
export interface SettingSpec {
  env: string;
  kind: "string" | "int" | "bool";
  default: string | number | boolean;
  /** Bounds of an int setting (a value outside them fails loudly when read). */
  min?: number;
  max?: number;
  /** The value the emulators run with, when it differs from the default. */
  emulator?: string | number | boolean;
  description: string;
}

export const SETTINGS = {
  databaseId: { env: "RETENTION_DATABASE_ID", kind: "string", default: "(default)", description: "Firestore database id the control plane governs (named databases are supported)." },
  databases: {
    env: "RETENTION_DATABASES",
    kind: "string",
    default: "",
    description:
      "Physical Firestore database ids of the registry's additional governed databases, by logical name: `analytics=analytics-prod,billing=billing-eu` (comma-separated). A database it does not name has the id of its logical name. The primary is RETENTION_DATABASE_ID.",
  },
  ledgerDatabaseId: { env: "RETENTION_LEDGER_DATABASE_ID", kind: "string", default: "erasure-ledger", description: "Firestore database id of the erasure ledger (keyed hashes of erased subjects, no personal data); never the governed database, so that restoring that one does not roll the ledger back." },
  purgeSchedule: { env: "RETENTION_PURGE_SCHEDULE", kind: "string", default: "0 2 * * *", description: "Cron for nightlyPurge." },
  purgeTimezone: { env: "RETENTION_PURGE_TIMEZONE", kind: "string", default: "Etc/UTC", description: "Time zone of the purge schedule." },
  auditSchedule: { env: "RETENTION_AUDIT_SCHEDULE", kind: "string", default: "30 3 * * *", description: "Cron for retentionAudit." },
  backfillSchedule: { env: "RETENTION_BACKFILL_SCHEDULE", kind: "string", default: "0 4 * * *", description: "Cron for expiryBackfill." },
  backfillMaxDocs: { env: "RETENTION_BACKFILL_MAX_DOCS", kind: "int", default: 20_000, min: 1, description: "Documents one scheduled expiryBackfill run scans before it saves its cursor and stops." },
  backfillMaxSeconds: { env: "RETENTION_BACKFILL_MAX_SECONDS", kind: "int", default: 480, min: 1, description: "Seconds one scheduled expiryBackfill run may start pages for (the function times out at 540)." },
  purgeStartOpsPerSecond: { env: "RETENTION_PURGE_START_OPS_PER_SECOND", kind: "int", default: 500, min: 1, description: "Delete rate a purge invocation starts at; it rises 1.5x every 5 minutes (Firestore's 500/50/5 guidance)." },
  purgeMaxOpsPerSecond: { env: "RETENTION_PURGE_MAX_OPS_PER_SECOND", kind: "int", default: 10_000, min: 1, description: "Delete rate ceiling of the purge's ramp." },
  purgeBatchSize: { env: "RETENTION_PURGE_BATCH_SIZE", kind: "int", default: 450, min: 1, max: 490, description: "Documents per purge batch (at most 490: a commit takes 500 writes, and a batch's transaction writes each document plus a few control records)." },
  purgeStepBatches: { env: "RETENTION_PURGE_STEP_BATCHES", kind: "int", default: 16, min: 1, max: 500, description: "Batches per purge step: the checkpoint advances and the lease renews once per step." },
  purgeParallelBatches: { env: "RETENTION_PURGE_PARALLEL_BATCHES", kind: "int", default: 4, min: 1, max: 64, description: "Batches of one purge step that run at a time, each its own transaction (the delete rate limit still applies)." },
  purgeFanoutThreshold: { env: "RETENTION_PURGE_FANOUT_THRESHOLD", kind: "int", default: 5000, min: 1, description: "A purge unit with more manifest paths than this runs as a chain of purgeChunk tasks." },
  purgeChunkSteps: { env: "RETENTION_PURGE_CHUNK_STEPS", kind: "int", default: 8, min: 1, description: "Purge steps (a group of batches each) per purgeChunk task invocation." },
  purgeLeaseSeconds: { env: "RETENTION_PURGE_LEASE_SECONDS", kind: "int", default: 600, min: 1, description: "How long a purge lease lasts without renewal (every step renews it); a crashed run's work resumes after it." },
  purgeSweepLimit: { env: "RETENTION_PURGE_SWEEP_LIMIT", kind: "int", default: 2000, min: 1, description: "Expired documents the policy sweep takes per collection and run." },
  purgeMaxRequests: { env: "RETENTION_PURGE_MAX_REQUESTS", kind: "int", default: 200, min: 1, description: "Deletion requests one nightlyPurge run takes on when it runs them itself (an on-demand run, or a schedule with RETENTION_PURGE_REQUEST_TASKS off)." },
  purgeRequestTasks: { env: "RETENTION_PURGE_REQUEST_TASKS", kind: "bool", default: true, description: "The scheduled nightlyPurge hands each due deletion request to the purgeRequest task queue (one task each, RETENTION_PURGE_REQUEST_CONCURRENCY at a time) instead of running them one after another in its own invocation." },
  purgeRequestConcurrency: { env: "RETENTION_PURGE_REQUEST_CONCURRENCY", kind: "int", default: 25, min: 1, max: 500, description: "purgeRequest tasks that run at once (the queue's maxConcurrentDispatches; deploy-time). Their deletes add up: keep concurrency x documents per erasure / seconds per erasure near the purge's start rate (docs/SCALE.md)." },
  purgeMaxRequestTasks: { env: "RETENTION_PURGE_MAX_REQUEST_TASKS", kind: "int", default: 100_000, min: 1, description: "Deletion requests one scheduled nightlyPurge enqueues on purgeRequest, oldest grace end first; the rest wait for the next run." },
  requestCooldownMinutes: { env: "RETENTION_REQUEST_COOLDOWN_MINUTES", kind: "int", default: 60, min: 0, description: "After a cancel, a new deletion request from the same user waits this long, doubled for each further cancel in 30 days (up to 7 days); 0 turns it off." },
  purgeBrakeApprovalHours: { env: "RETENTION_BRAKE_APPROVAL_HOURS", kind: "int", default: 24, min: 1, description: "Hours a retention-admin's approval of a tripped mass-deletion brake (approvePurgeRun) stays usable." },
  statusRefreshMinutes: { env: "RETENTION_STATUS_REFRESH_MINUTES", kind: "int", default: 15, min: 1, description: "getDeletionStatus plans the subject again at most this often (and whenever holds change)." },
  pitrDays: { env: "RETENTION_PITR_DAYS", kind: "int", default: 7, min: 0, max: 7, description: "Point-in-time recovery window of the governed database, in days, as configured in the project (Firestore keeps 7 days when PITR is on; 0: off). The service cannot read it: a request's 'fully gone by' date counts on this value." },
  backupRetentionDays: { env: "RETENTION_BACKUP_RETENTION_DAYS", kind: "int", default: 35, min: 0, description: "Longest retention of the governed database's scheduled backups and exports, in days, as configured in the project (0: none). The service cannot read it: a request's 'fully gone by' date counts on this value." },
  storageBucket: { env: "RETENTION_STORAGE_BUCKET", kind: "string", default: "(default)", description: "The bucket a data map's storage entry names as (default). (default) itself: the project's default Firebase bucket as the Admin SDK knows it (the app's storageBucket option, else FIREBASE_CONFIG's storageBucket, which Cloud Functions sets), else <project>.appspot.com." },
  storageDeleteWindowSeconds: { env: "RETENTION_STORAGE_DELETE_WINDOW_SECONDS", kind: "int", default: 30, min: 5, max: 300, description: "How long an object batch's delete window stays open (docs/HOLD-FENCE.md, Cloud Storage objects): its deletes run only while the window has more than RETENTION_STORAGE_DELETE_TIMEOUT_SECONDS + 1 s left, and a hold placed on what it covers waits at most this long for HOLD_PLACED (so at most 300, well inside placeRetentionHold's 540 s)." },
  storageDeleteTimeoutSeconds: { env: "RETENTION_STORAGE_DELETE_TIMEOUT_SECONDS", kind: "int", default: 5, min: 1, max: 60, description: "The timeout of one object delete request inside a delete window (no automatic retry); a delete starts only while the window has more than this (plus 1 s for clock skew) left." },
  storageSoftDeleteDays: { env: "RETENTION_STORAGE_SOFT_DELETE_DAYS", kind: "int", default: 7, min: 0, max: 90, description: "Soft-delete retention of the data map's buckets, in days, as configured (Cloud Storage's default is 7; 0: off). The service cannot read it: a request that deleted objects counts it in its 'fully gone by' date." },
  archiveKeyRing: { env: "RETENTION_ARCHIVE_KEY_RING", kind: "string", default: "", description: "Cloud KMS key ring of the archive's key-encryption keys, projects/<p>/locations/<l>/keyRings/<r> (decision 0038): one crypto key per shred day wraps the data keys that seal archive copies. Empty: the emulators' local stand-in; outside the emulators archiving then refuses (ARCHIVE_KEY_RING_MISSING)." },
  archiveKeyDestroyDays: { env: "RETENTION_ARCHIVE_KEY_DESTROY_DAYS", kind: "int", default: 30, min: 1, max: 120, description: "Days Cloud KMS waits between scheduling a key-encryption key's destruction and destroying it (the crypto keys' destroy-scheduled duration: 1 to 120, KMS's default 30). Archived data is fully gone this long after its shred." },
  auditMaxObjects: { env: "RETENTION_AUDIT_MAX_OBJECTS", kind: "int", default: 10_000, min: 1, description: "Cloud Storage objects one retention audit reads at most (hold markers against hold records); past it the audit says the object check was cut short." },
  enforceAppCheck: { env: "RETENTION_ENFORCE_APP_CHECK", kind: "bool", default: true, emulator: false, description: "Refuse the user-facing callables (requestAccountDeletion, cancelAccountDeletion, getDeletionStatus) without a valid App Check token." },
  evidenceShards: { env: "RETENTION_EVIDENCE_SHARDS", kind: "int", default: 512, min: 1, max: 2048, description: "Independent evidence chains; each append goes to the chain a stable hash of its subject picks. Raise it with the peak append rate (docs/SCALE.md); changing it never invalidates evidence already written." },
  evidenceAnchorSchedule: { env: "RETENTION_EVIDENCE_ANCHOR_SCHEDULE", kind: "string", default: "*/10 * * * *", description: "Cron for evidenceAnchor, which writes every chain head outside the database (a truncation after the last anchor is the window it leaves)." },
  accessExportHours: { env: "RETENTION_ACCESS_EXPORT_HOURS", kind: "int", default: 168, min: 1, max: 720, description: "Hours a subject's access export (requestDataExport) stays downloadable once ready; then Firestore's TTL deletes it (docs/decisions/0040-legal-clocks-and-access.md)." },
  accessExportCooldownHours: { env: "RETENTION_ACCESS_EXPORT_COOLDOWN_HOURS", kind: "int", default: 24, min: 0, max: 720, description: "After a subject's own access export, a new one from the same user waits this long (0: off). Staff exports for a request received by email do not wait." },
  processorEndpoints: {
    env: "RETENTION_PROCESSOR_ENDPOINTS",
    kind: "string",
    default: "",
    description: "Webhook processors this deployment sends elsewhere than the registry's url: `search-index=http://127.0.0.1:8790/erase` (comma-separated name=url; https, or http on the loopback). Empty: every webhook gets its registry url.",
  },
  processorTimeoutSeconds: { env: "RETENTION_PROCESSOR_TIMEOUT_SECONDS", kind: "int", default: 10, min: 1, max: 120, description: "How long one delivery to a webhook processor waits for its answer before the attempt counts as failed (the queue retries it with backoff)." },
  processorSweepSchedule: { env: "RETENTION_PROCESSOR_SWEEP_SCHEDULE", kind: "string", default: "*/5 * * * *", description: "Cron for processorNotices: delivers again the processor notices a hold kept back once it is released, and any whose delivery task was never queued." },
} as const satisfies Record<string, SettingSpec>;

export type SettingKey = keyof typeof SETTINGS;
export type SettingValue<K extends SettingKey> = (typeof SETTINGS)[K]["kind"] extends "int" ? number : (typeof SETTINGS)[K]["kind"] extends "bool" ? boolean : string;

/**
 * How firebase-tools asks for a setting when it prompts (a function kit's install, a deploy that lacks a value): a
 * short label, and for a string the pattern a value must match. An int's pattern comes from its bounds
 * ({@link intPattern}), so the prompt refuses what the runtime reader (platform/settings.ts#setting) would refuse.
 * A separate table from SETTINGS so that each setting's row stays one line; its type makes every setting have one.
 */
export interface SettingPrompt {
  label: string;
  pattern?: RegExp;
  patternError?: string;
}

const DATABASE_ID: Omit<SettingPrompt, "label"> = {
  pattern: /^(\(default\)|[a-z][a-z0-9-]{2,61}[a-z0-9])$/,
  patternError: "A Firestore database id: (default), or 4 to 63 lowercase letters, digits and dashes that starts with a letter.",
};
const CRON: Omit<SettingPrompt, "label"> = { pattern: /^\S+( \S+){4}$/, patternError: "A cron schedule of five fields, e.g. 0 2 * * *." };

export const SETTING_PROMPTS = {
  databaseId: { label: "Governed Firestore database", ...DATABASE_ID },
  databases: {
    label: "Additional governed databases (logical=physical, comma-separated)",
    // As platform/settings.ts#parseDatabaseMap reads it.
    pattern: /^\s*([a-z0-9]+(-[a-z0-9]+)*=[A-Za-z0-9()_-]+)?\s*(,\s*([a-z0-9]+(-[a-z0-9]+)*=[A-Za-z0-9()_-]+)?\s*)*$/,
    patternError: "Empty, or logical=physical pairs separated by commas, e.g. analytics=analytics-prod,billing=billing-eu.",
  },
  ledgerDatabaseId: { label: "Erasure ledger database", ...DATABASE_ID },
  purgeSchedule: { label: "Nightly purge schedule", ...CRON },
  purgeTimezone: { label: "Time zone of the purge schedule", pattern: /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/, patternError: "An IANA time zone, e.g. Etc/UTC or Europe/Berlin." },
  auditSchedule: { label: "Retention audit schedule", ...CRON },
  backfillSchedule: { label: "Expiry backfill schedule", ...CRON },
  backfillMaxDocs: { label: "Expiry backfill: documents per run" },
  backfillMaxSeconds: { label: "Expiry backfill: seconds per run" },
  purgeStartOpsPerSecond: { label: "Purge: starting delete rate (ops/s)" },
  purgeMaxOpsPerSecond: { label: "Purge: delete rate ceiling (ops/s)" },
  purgeBatchSize: { label: "Purge: documents per batch" },
  purgeStepBatches: { label: "Purge: batches per step" },
  purgeParallelBatches: { label: "Purge: batches at a time" },
  purgeFanoutThreshold: { label: "Purge: paths before a unit fans out" },
  purgeChunkSteps: { label: "Purge: steps per chunk task" },
  purgeLeaseSeconds: { label: "Purge: lease (seconds)" },
  purgeSweepLimit: { label: "Purge: expired documents per collection and run" },
  purgeMaxRequests: { label: "Purge: requests per run without tasks" },
  purgeRequestTasks: { label: "Purge: one task per due request" },
  purgeRequestConcurrency: { label: "Purge: request tasks at once" },
  purgeMaxRequestTasks: { label: "Purge: request tasks per night" },
  requestCooldownMinutes: { label: "Request cooldown after a cancel (minutes)" },
  purgeBrakeApprovalHours: { label: "Mass-deletion brake: approval lifetime (hours)" },
  statusRefreshMinutes: { label: "Status: replan interval (minutes)" },
  pitrDays: { label: "Point-in-time recovery window (days)" },
  backupRetentionDays: { label: "Longest backup or export retention (days)" },
  enforceAppCheck: { label: "Require App Check on the user-facing callables" },
  evidenceShards: { label: "Evidence chains" },
  evidenceAnchorSchedule: { label: "Evidence anchor schedule", ...CRON },
  accessExportHours: { label: "Hours an access export stays downloadable" },
  accessExportCooldownHours: { label: "Hours between a subject's own access exports" },
  storageBucket: {
    label: "Bucket of the data map's (default) storage entries",
    pattern: /^(\(default\)|[a-z0-9][a-z0-9._-]{1,220}[a-z0-9])$/,
    patternError: "A Cloud Storage bucket name (lowercase letters, digits, dots, dashes and underscores), or (default) for the project's default Firebase bucket.",
  },
  storageDeleteWindowSeconds: { label: "Storage: delete window (seconds)" },
  storageDeleteTimeoutSeconds: { label: "Storage: one object delete's timeout (seconds)" },
  storageSoftDeleteDays: { label: "Storage: the buckets' soft-delete retention (days)" },
  archiveKeyRing: {
    label: "Cloud KMS key ring of the archive keys",
    pattern: /^(|projects\/[a-z][a-z0-9-]{4,28}[a-z0-9]\/locations\/[a-z0-9-]+\/keyRings\/[A-Za-z0-9_-]{1,63})$/,
    patternError: "Empty (emulators only), or projects/<project>/locations/<location>/keyRings/<ring>.",
  },
  archiveKeyDestroyDays: { label: "Archive keys: destroy delay (days)" },
  auditMaxObjects: { label: "Audit: Cloud Storage objects per run" },
  processorEndpoints: {
    label: "Processors: webhook endpoints instead of the registry's (name=url, comma-separated)",
    pattern: /^\s*([a-z0-9]+(-[a-z0-9]+)*=\S+)?\s*(,\s*([a-z0-9]+(-[a-z0-9]+)*=\S+)?\s*)*$/,
    patternError: "Empty, or name=url pairs separated by commas, e.g. search-index=https://search.example.com/erase.",
  },
  processorTimeoutSeconds: { label: "Processors: webhook answer timeout (seconds)" },
  processorSweepSchedule: { label: "Processors: notice sweep schedule", ...CRON },
} as const satisfies Record<SettingKey, SettingPrompt>;

/**
 * The pattern of an integer in [min, max] (no max: any larger integer too), for a text prompt. The ranges come from
 * to-regex-range (the library micromatch uses for numeric ranges in globs).
 */
export function intPattern(min: number, max?: number): RegExp {
  if (max !== undefined) return new RegExp(`^(?:${toRegexRange(min, max)})$`);
  const digits = String(min).length;
  return new RegExp(`^(?:${toRegexRange(min, 10 ** digits - 1)}|[1-9][0-9]{${digits},})$`);
}

/** What a setting's param says to firebase-tools: default, label, description and, for text, the pattern it checks. */
export function paramOptions(key: SettingKey): { default: string | number | boolean; label: string; description: string; input?: { text: { validationRegex: string; validationErrorMessage: string } } } {
  const s: SettingSpec = SETTINGS[key];
  const prompt: SettingPrompt = SETTING_PROMPTS[key];
  const base = { default: s.default, label: prompt.label, description: s.description };
  if (s.kind === "int") {
    const range = s.max !== undefined ? `from ${s.min ?? 0} to ${s.max}` : `of at least ${s.min ?? 0}`;
    return { ...base, input: { text: { validationRegex: intPattern(s.min ?? 0, s.max).source, validationErrorMessage: `An integer ${range}.` } } };
  }
  if (s.kind === "string" && prompt.pattern) return { ...base, input: { text: { validationRegex: prompt.pattern.source, validationErrorMessage: prompt.patternError ?? `Must match ${prompt.pattern.source}.` } } };
  return base;
}

function declare<K extends SettingKey>(key: K): Param<SettingValue<K>> {
  const s: SettingSpec = SETTINGS[key];
  const opts = paramOptions(key);
  if (s.kind === "int") return defineInt(s.env, opts as Parameters<typeof defineInt>[1]) as unknown as Param<SettingValue<K>>;
  if (s.kind === "bool") return defineBoolean(s.env, opts as Parameters<typeof defineBoolean>[1]) as unknown as Param<SettingValue<K>>;
  return defineString(s.env, opts as Parameters<typeof defineString>[1]) as unknown as Param<SettingValue<K>>;
}

/** The deploy-time params, one per setting (firebase-tools finds them when it loads the functions). */
export const PARAMS = Object.fromEntries(Object.keys(SETTINGS).map((k) => [k, declare(k as SettingKey)])) as unknown as { [K in SettingKey]: Param<SettingValue<K>> };

/**
 * Which registry the functions enforce. Not a param: params are resolved by firebase-tools after it has loaded the
 * functions to list them, and the list itself depends on the registry (one TTL delete trigger per TTL-managed
 * collection). So it is a plain environment variable, read once when the code loads (`platform/registry.ts`): set in
 * the functions' `.env` or `.env.<project>` (which a deployed function gets as its environment; while firebase-tools
 * lists the functions it passes none of them, so the loader reads the same files itself), or in the environment of
 * the CLI and the tests. Unset: the registry built into the functions (`policies/`, bundled by `npm run build`).
 */
export const REGISTRY_FILE = {
  env: "RETENTION_REGISTRY_FILE",
  description:
    "A registry bundle to enforce instead of the built-in one: a file `scripts/bundle-policies.ts --policies <dir> --out <file>` wrote, its path relative to the functions codebase directory (or absolute). Validated when the functions load; a file that is missing or does not hold together stops them loading.",
} as const;

/**
 * Secrets are not settings: they have no default, never appear in `functions/.env.local` (which is committed),
 * and reach a function only when it names them in its `secrets` (Cloud Functions then sets the environment
 * variable of the same name from Secret Manager). On the emulators the Functions emulator reads them from
 * `functions/.secret.local` (never committed; `npm ci` and `scripts/emulators.mjs` create it with a fresh key when
 * it is missing: `scripts/local-evidence-key.mjs`), and the CLI and in-process tests read the same file (`platform/evidence-key.ts`).
 */
export interface SecretSpec {
  env: string;
  description: string;
}

export const SECRETS = {
  evidenceKey: {
    env: "RETENTION_EVIDENCE_KEY",
    description:
      "HMAC key of the evidence ledger (at least 32 characters, e.g. `openssl rand -hex 32`). Several keys, comma-separated, during a rotation: the first signs, all verify.",
  },
} as const satisfies Record<string, SecretSpec>;

/** The Secret Manager secret of the evidence key. Every deployed function binds it (they all append evidence). */
export const EVIDENCE_KEY_SECRET = defineSecret(SECRETS.evidenceKey.env, { label: "Evidence key", description: SECRETS.evidenceKey.description });

/** The secrets every function of the service names in its options. */
export const FUNCTION_SECRETS = [EVIDENCE_KEY_SECRET];

const processorSecretParams = new Map<string, ReturnType<typeof defineSecret>>();
/**
 * The Secret Manager secrets of the registry's processors (each webhook or topic processor names its own HMAC key,
 * `RETENTION_PROCESSOR_<NAME>_KEY`): bound by the functions that sign notices and check acknowledgements only. The
 * names come from the enforced registry, read when the functions load, as the TTL triggers' collections do.
 */
export function processorSecrets(names: readonly string[]): ReturnType<typeof defineSecret>[] {
  return [...new Set(names)].map((name) => {
    let param = processorSecretParams.get(name);
    if (!param) {
      param = defineSecret(name, { label: `Processor key ${name}`, description: "HMAC key a processor's deletion notices are signed with and its acknowledgements checked against (at least 32 characters; comma-separated during a rotation: the first signs, all verify)." });
      processorSecretParams.set(name, param);
    }
    return param;
  });
}

/** What `functions/.env.local` must say: every setting, with its emulator value where it has one. */
export function renderEnvLocal(): string {
  const lines = [
    "# Generated from functions/src/config/params.ts by `npm run settings:env`: do not edit by hand.",
    "# The Functions emulator reads this file (never a deploy); without a value per param it stops at a prompt.",
  ];
  for (const s of Object.values(SETTINGS) as SettingSpec[]) {
    const v = s.emulator ?? s.default;
    lines.push(`${s.env}=${typeof v === "string" && /[\s()*]/.test(v) ? JSON.stringify(v) : String(v)}`);
  }
  return `${lines.join("\n")}\n`;
}
