import { deleteApp, getApps } from "firebase-admin/app";
import { COLLECTIONS, db } from "../platform/firestore";
import { settings } from "../platform/settings";
import { registryPolicy } from "../platform/registry";
import { PRIMARY_CELL } from "../kernel/policy";

/** A problem with how the CLI was called, or with reaching its target: exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

export class ConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectionError";
  }
}

export interface Target {
  emulator: string | null;
  authEmulator: string | null;
  projectId: string;
  databaseId: string;
  /**
   * The governed database `--database` named by its logical name in the registry (or by the physical id
   * RETENTION_DATABASES gives it): the command narrows to that database. Null: `--database` named none of the
   * registry's (a restored copy: it replaces the primary's id) or was not given; a command then covers every one.
   */
  cell: string | null;
}

/**
 * The registry's governed database `--database` names: by its logical name (`primary`, `analytics`), or by the
 * physical id of one of them; null when it names none (a restored copy, or the primary's id given to a command
 * that only reads one database).
 */
export function cellNamed(database: string): string | null {
  const whole = registryPolicy();
  if (whole.hasCell(database)) return database;
  return whole.cells().find((c) => c !== PRIMARY_CELL && settings.cellDatabaseId(c) === database) ?? null;
}

/**
 * Where the CLI talks to: the emulators when FIRESTORE_EMULATOR_HOST is set, otherwise a real project
 * through Application Default Credentials. A real project must be named (--project or
 * GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT): the demo default must never silently become a real target.
 * The choice goes into the environment before anything opens a connection, because the Admin SDK and
 * `platform/settings.ts` read it lazily from there.
 */
export function resolveTarget(opts: { project?: string; database?: string }): Target {
  const emulator = process.env.FIRESTORE_EMULATOR_HOST || null;
  if (opts.project !== undefined) {
    if (!/^[a-z][a-z0-9-]{4,61}[a-z0-9]$/.test(opts.project)) throw new UsageError(`--project ${JSON.stringify(opts.project)} is not a valid project id`);
    process.env.GCLOUD_PROJECT = opts.project;
    process.env.GOOGLE_CLOUD_PROJECT = opts.project;
  }
  // A governed database of the registry narrows the command to it; any other id is the primary's (a restored copy).
  const cell = opts.database !== undefined ? cellNamed(opts.database) : null;
  if (opts.database !== undefined && cell === null) process.env.RETENTION_DATABASE_ID = opts.database;
  const named = process.env.GCLOUD_PROJECT || process.env.GOOGLE_CLOUD_PROJECT;
  if (!emulator && !named) {
    throw new UsageError(
      "No target: set FIRESTORE_EMULATOR_HOST to use the emulators, or name a project with --project or GOOGLE_CLOUD_PROJECT (Application Default Credentials are used).",
    );
  }
  return {
    emulator,
    authEmulator: process.env.FIREBASE_AUTH_EMULATOR_HOST || null,
    projectId: settings.projectId(),
    databaseId: cell === null ? settings.databaseId() : settings.cellDatabaseId(cell),
    cell,
  };
}

/** The target of a command that reads files only (an exported evidence bundle): nothing to reach. */
export function offlineTarget(): Target {
  return { emulator: null, authEmulator: null, projectId: "-", databaseId: "-", cell: null };
}

export function describeTarget(t: Target): string {
  const where = t.emulator ? `emulator ${t.emulator}` : "Application Default Credentials";
  return `project ${t.projectId}, database ${t.databaseId}, via ${where}`;
}

/**
 * One small read with a deadline before any command does real work. The Firestore client retries an
 * unreachable host for a minute or more; an operator should hear within seconds that the target is wrong.
 */
export async function probeFirestore(t: Target, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConnectionError(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([db().collection(COLLECTIONS.retentionJobs).limit(1).get(), deadline]);
  } catch (err) {
    const why = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new ConnectionError(`Cannot reach Firestore (${describeTarget(t)}): ${why}`);
  } finally {
    clearTimeout(timer);
  }
}

export function connectTimeoutMs(): number {
  const raw = process.env.RETENTION_CONNECT_TIMEOUT_MS;
  const n = raw ? Number(raw) : 8_000;
  return Number.isFinite(n) && n > 0 ? n : 8_000;
}

/** Closes the Admin SDK's channels so the process can end on its own once the command is done. */
export async function closeConnections(): Promise<void> {
  await Promise.allSettled(getApps().map((a) => deleteApp(a)));
}
