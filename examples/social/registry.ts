import { readFileSync } from "node:fs";
import { join } from "node:path";
import { hashCanonical } from "../../functions/src/kernel/canonical";
import { PolicyIndex } from "../../functions/src/kernel/policy";
import { RegistrySchema, type Registry } from "../../functions/src/kernel/policy-schema";
import type { LockEntry } from "../../functions/src/kernel/registry-check";

/** The example app's own files: its registry versions, their lock, its rules and its indexes. */
export const SOCIAL_DIR = import.meta.dirname;
export const SOCIAL_VERSIONS_DIR = join(SOCIAL_DIR, "policies", "versions");
export const SOCIAL_LOCK_FILE = join(SOCIAL_DIR, "policies", "published.lock.json");
export const SOCIAL_RULES_FILE = join(SOCIAL_DIR, "firestore.rules");
export const SOCIAL_INDEXES_FILE = join(SOCIAL_DIR, "firestore.indexes.json");
/**
 * The database the example's emulator suite runs the engine on. A database of its own keeps the example's data
 * apart from AtlasMart's, and lets the index coverage check hold the queries recorded there to the example's
 * index file instead of the product's (scripts/index-check/check.ts).
 */
export const SOCIAL_DATABASE = "social-example";

/** The restored copy the example's restore drill replays the erasure ledger into: the example's too. */
export const SOCIAL_RESTORED_DATABASE = "social-restored";

/** The example's second governed database, by its logical name in the registry (v4): the activity log. */
export const SOCIAL_ANALYTICS = "analytics";

/**
 * The physical database the suites give it (RETENTION_DATABASES maps the logical name to it): a name of the example's
 * own, so the index coverage check holds its queries to the example's analytics index file.
 */
export const SOCIAL_ANALYTICS_DATABASE = "social-analytics";

/** A restored copy of the analytics database, for the replay drill of that database. */
export const SOCIAL_ANALYTICS_RESTORED_DATABASE = "social-analytics-restored";

/** The analytics database's rules and index files (firebase.json lists them with `database`). */
export const SOCIAL_ANALYTICS_RULES_FILE = join(SOCIAL_DIR, "firestore.analytics.rules");
export const SOCIAL_ANALYTICS_INDEXES_FILE = join(SOCIAL_DIR, "firestore.analytics.indexes.json");

/** The published versions, in the order the lock lists them; the last is the one the app enforces. */
export function socialLock(): LockEntry[] {
  return JSON.parse(readFileSync(SOCIAL_LOCK_FILE, "utf8")) as LockEntry[];
}

/** The version the app enforces (the lock's last), parsed as the build parses the product's own registry. */
export function socialRegistry(): Registry {
  const lock = socialLock();
  const current = lock[lock.length - 1];
  if (!current) throw new Error(`${SOCIAL_LOCK_FILE} publishes no version`);
  return RegistrySchema.parse(JSON.parse(readFileSync(join(SOCIAL_VERSIONS_DIR, current.file), "utf8")));
}

/** Every version the app has published, oldest first. */
export function socialPublished(): Registry[] {
  return socialLock().map((l) => RegistrySchema.parse(JSON.parse(readFileSync(join(SOCIAL_VERSIONS_DIR, l.file), "utf8"))));
}

export const socialPolicy = (): PolicyIndex => new PolicyIndex(socialRegistry());

/** Whether `active` (the registry a process enforces) is the example's current version. */
export function isSocialRegistry(active: Registry): boolean {
  return hashCanonical(active) === hashCanonical(socialRegistry());
}
