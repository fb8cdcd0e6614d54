import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SETTINGS, type SettingKey, type SettingSpec, type SettingValue } from "../config/params";
import { PRIMARY_CELL } from "../kernel/policy";
/**
 * Runtime settings, read lazily from the environment (Cloud Functions exposes params as env vars; the
 * CLI and tests set the same names). Nothing here runs at import time.
 */
/**
 * A setting's value at run time: the environment variable its param defines (Cloud Functions sets params as
 * environment variables; the CLI and tests set the same names), else its default, checked against its kind
 * and bounds. A malformed value fails loudly. The one reader of every setting (config/params.ts#SETTINGS).
 */
export function setting<K extends SettingKey>(key: K): SettingValue<K> {
  const s: SettingSpec = SETTINGS[key];
  const raw = process.env[s.env];
  if (raw === undefined || raw === "") return s.default as SettingValue<K>;
  if (s.kind === "string") return raw as SettingValue<K>;
  if (s.kind === "bool") {
    if (raw === "true" || raw === "false") return (raw === "true") as SettingValue<K>;
    throw new Error(`${s.env} must be true or false, got ${raw}`);
  }
  const n = Number(raw);
  const min = s.min ?? Number.NEGATIVE_INFINITY;
  const max = s.max ?? Number.POSITIVE_INFINITY;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${s.env} must be an integer${s.min !== undefined ? ` of at least ${s.min}` : ""}${s.max !== undefined ? ` and at most ${s.max}` : ""}, got ${raw}`);
  }
  return n as SettingValue<K>;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The project id inside FIREBASE_CONFIG (JSON, as Cloud Functions and the Functions emulator set it). */
function firebaseConfigProject(raw: string): string | null {
  try {
    const parsed = JSON.parse(raw) as { projectId?: unknown };
    return typeof parsed.projectId === "string" ? parsed.projectId : null;
  } catch {
    return null;
  }
}

/**
 * With no project in the environment (the CLI on the emulators from a plain shell): the default project of the
 * `.firebaserc` in the working directory, as the Firebase CLI picks it, else `demo-project` (an emulator-only id).
 */
function firebasercDefault(): string {
  try {
    const rc = JSON.parse(readFileSync(join(process.cwd(), ".firebaserc"), "utf8")) as { projects?: { default?: unknown } };
    return typeof rc.projects?.default === "string" && rc.projects.default ? rc.projects.default : "demo-project";
  } catch {
    return "demo-project";
  }
}

/**
 * The gate for `asOf` time travel: open only when every side it can check says "emulator". One variable
 * set in a deployment cannot open it:
 * - every project id the process can see (GCLOUD_PROJECT, GOOGLE_CLOUD_PROJECT, RETENTION_PROJECT_ID,
 *   FIREBASE_CONFIG's projectId) is a `demo-` project, which Firebase reserves for emulator-only projects;
 *   with none set the CLI's default is the demo project. Cloud Functions sets GCLOUD_PROJECT and
 *   FIREBASE_CONFIG itself (reserved names a deploy cannot override);
 * - the services a job touches are emulated: FIRESTORE_EMULATOR_HOST and FIREBASE_AUTH_EMULATOR_HOST;
 * - inside a function runtime (K_SERVICE or FUNCTION_TARGET set), FUNCTIONS_EMULATOR is "true".
 * Pure over the environment it is given, so its truth table is a unit test. `missing` names what is not
 * emulated, for the message that refuses `asOf`.
 */
export function emulatorGate(env: Env): { open: boolean; missing: string[] } {
  const missing: string[] = [];
  const ids: { name: string; value: string | null }[] = [
    ...["GCLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT", "RETENTION_PROJECT_ID"].filter((n) => env[n]).map((n) => ({ name: n, value: env[n] ?? null })),
    ...(env.FIREBASE_CONFIG ? [{ name: "FIREBASE_CONFIG", value: firebaseConfigProject(env.FIREBASE_CONFIG) }] : []),
  ];
  for (const id of ids) if (!id.value?.startsWith("demo-")) missing.push(`${id.name} (a demo- project)`);
  if (!env.FIRESTORE_EMULATOR_HOST) missing.push("FIRESTORE_EMULATOR_HOST");
  if (!env.FIREBASE_AUTH_EMULATOR_HOST) missing.push("FIREBASE_AUTH_EMULATOR_HOST");
  const inFunction = Boolean(env.K_SERVICE || env.FUNCTION_TARGET);
  if (inFunction && env.FUNCTIONS_EMULATOR !== "true") missing.push("FUNCTIONS_EMULATOR");
  return { open: missing.length === 0, missing };
}

/**
 * The RETENTION_DATABASES setting as a map from logical database name to physical id (`analytics=analytics-prod,
 * billing=billing-eu`). A malformed entry fails loudly: a cell must never fall back to the wrong database.
 */
export function parseDatabaseMap(raw: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const part of raw.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^([a-z0-9]+(?:-[a-z0-9]+)*)=([A-Za-z0-9()_-]+)$/.exec(part);
    if (!m) throw new Error(`RETENTION_DATABASES: ${JSON.stringify(part)} is not <logical-name>=<database-id>`);
    if (map.has(m[1]!)) throw new Error(`RETENTION_DATABASES names ${m[1]} twice`);
    map.set(m[1]!, m[2]!);
  }
  return map;
}

export const settings = {
  databaseId: (): string => setting("databaseId"),
  /**
   * The physical database id of a governed database, by logical name: the primary's is RETENTION_DATABASE_ID, the
   * others' what RETENTION_DATABASES maps them to, else their logical name.
   */
  cellDatabaseId: (cell: string): string => (cell === PRIMARY_CELL ? setting("databaseId") : (parseDatabaseMap(setting("databases")).get(cell) ?? cell)),
  /** The erasure ledger's database: never the governed one (erasure/ledger.ts refuses that). */
  ledgerDatabaseId: (): string => setting("ledgerDatabaseId"),
  projectId: (): string => process.env.GCLOUD_PROJECT || process.env.GOOGLE_CLOUD_PROJECT || process.env.RETENTION_PROJECT_ID || firebasercDefault(),
  /** The request/cancel cooldown's base (requests/rules/requests.ts#requestCooldownUntil); 0 turns it off. */
  requestCooldownMs: (): number => setting("requestCooldownMinutes") * 60_000,
  /** True only on the Firebase emulators, on every side the gate checks ({@link emulatorGate}): the gate for `asOf` time travel. */
  onEmulator: (): boolean => emulatorGate(process.env).open,
  /** App Check on the user-facing callables: on unless the deployment (or the emulators' .env.local) turns it off. */
  enforceAppCheck: (): boolean => setting("enforceAppCheck"),
  /** The Cloud KMS key ring of the archive's KEKs; empty on the emulators (platform/kms.ts). */
  archiveKeyRing: (): string => setting("archiveKeyRing"),
  /** The KEKs' destroy delay in days: archived data is fully gone this long after its shred. */
  archiveKeyDestroyDays: (): number => setting("archiveKeyDestroyDays"),
  /** How long getDeletionStatus may answer from its stored summary before planning the subject again. */
  statusRefreshMs: (): number => setting("statusRefreshMinutes") * 60_000,
  /** How long an access export stays downloadable once ready (then TTL deletes it). */
  accessExportMs: (): number => setting("accessExportHours") * 3_600_000,
  /** How long a subject waits between their own access exports; 0 turns it off. */
  accessExportCooldownMs: (): number => setting("accessExportCooldownHours") * 3_600_000,
};
