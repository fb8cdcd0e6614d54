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

export const settings = {
  databaseId: (): string => process.env.RETENTION_DATABASE_ID || "(default)",
  projectId: (): string => process.env.GCLOUD_PROJECT || process.env.GOOGLE_CLOUD_PROJECT || process.env.RETENTION_PROJECT_ID || "demo-atlasmart-firestore",
  /** The request/cancel cooldown's base (domain/deletion-request.ts#requestCooldownUntil); 0 turns it off. */
  requestCooldownMs: (): number => nonNegativeIntFromEnv("RETENTION_REQUEST_COOLDOWN_MINUTES", 60) * 60_000,
  /** True only inside the Firebase emulators: the gate for `asOf` time travel. */
  onEmulator: (): boolean => process.env.FUNCTIONS_EMULATOR === "true" || Boolean(process.env.FIRESTORE_EMULATOR_HOST && process.env.RETENTION_ALLOW_AS_OF === "true"),
};
