/**
 * Runtime settings, read lazily from the environment (Cloud Functions exposes params as env vars; the
 * CLI and tests set the same names). Nothing here runs at import time.
 */
/** A positive integer setting from the environment, or its default; a malformed value fails loudly. */
export function positiveIntFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}

/** A non-negative integer setting from the environment, or its default; a malformed value fails loudly. */
export function nonNegativeIntFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return n;
}

/** A boolean setting from the environment ("true"/"false"), or its default; anything else fails loudly. */
export function booleanFromEnv(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "true") return true;
  if (raw === "false") return false;
  throw new Error(`${name} must be true or false, got ${raw}`);
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

export const settings = {
  databaseId: (): string => process.env.RETENTION_DATABASE_ID || "(default)",
  projectId: (): string => process.env.GCLOUD_PROJECT || process.env.GOOGLE_CLOUD_PROJECT || process.env.RETENTION_PROJECT_ID || "demo-atlasmart-firestore",
  /** The request/cancel cooldown's base (requests/rules/requests.ts#requestCooldownUntil); 0 turns it off. */
  requestCooldownMs: (): number => nonNegativeIntFromEnv("RETENTION_REQUEST_COOLDOWN_MINUTES", 60) * 60_000,
  /** True only on the Firebase emulators, on every side the gate checks ({@link emulatorGate}): the gate for `asOf` time travel. */
  onEmulator: (): boolean => emulatorGate(process.env).open,
  /** App Check on the user-facing callables: on unless the deployment (or the emulators' .env.local) turns it off. */
  enforceAppCheck: (): boolean => booleanFromEnv("RETENTION_ENFORCE_APP_CHECK", true),
  /** How long getDeletionStatus may answer from its stored summary before planning the subject again. */
  statusRefreshMs: (): number => positiveIntFromEnv("RETENTION_STATUS_REFRESH_MINUTES", 15) * 60_000,
};
