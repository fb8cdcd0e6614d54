import { sha256Hex } from "./canonical";
import { PolicyIndex } from "./policy";
import { RegistrySchema, type Registry } from "./policy-schema";

/**
 * The class `retention discover` gives every collection it drafts (functions/src/discover/rules.ts): valid to the
 * schema, so a draft parses and can be tested like a registry, but never in a version file, so nothing is
 * bundled before a person has picked each collection's real class.
 */
export const DRAFT_ONLY_CLASS = "unreviewed";

/** One published registry version, as recorded in `policies/published.lock.json`. */
export interface LockEntry {
  version: string;
  file: string;
  sha256: string;
}

export interface RegistryCheckInput {
  /** file name -> raw text, for every file in policies/versions/. */
  files: ReadonlyMap<string, string>;
  lock: readonly LockEntry[];
  /** Collection ids used by the security rules and by the demo schema. */
  collectionsInUse: ReadonlyMap<string, string>;
}

export interface RegistryCheckResult {
  errors: string[];
  /** The newest published version: the one the functions enforce. */
  current: Registry | null;
}

/**
 * The registry's build-time checks:
 * - every version file parses and passes the zod schema;
 * - a published version is immutable: its content hash must equal the one in the lock file;
 * - every version file is published (listed in the lock), so nothing unreviewed is bundled;
 * - no version file uses the discover draft's class (`DRAFT_ONLY_CLASS`);
 * - every collection used by the rules or the demo schema is in some class;
 * - the current version says who the data belongs to (`subjects`);
 * - in the current version, every document a hold can cover is one a hold can flag (`unflaggableUnderHolds`).
 */
export function checkRegistry(input: RegistryCheckInput): RegistryCheckResult {
  const errors: string[] = [];
  const parsed = new Map<string, Registry>();
  for (const [file, text] of input.files) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      errors.push(`${file}: not valid JSON (${(e as Error).message})`);
      continue;
    }
    const result = RegistrySchema.safeParse(json);
    if (!result.success) {
      for (const issue of result.error.issues) errors.push(`${file}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
      continue;
    }
    parsed.set(file, result.data);
    if (result.data.classes.some((c) => c.id === DRAFT_ONLY_CLASS)) {
      errors.push(`${file}: class ${DRAFT_ONLY_CLASS} is the discover draft's placeholder: give each of its collections a reviewed class and remove it`);
    }
    if (`${result.data.version}.json` !== file) errors.push(`${file}: version ${result.data.version} must live in ${result.data.version}.json`);
  }
  for (const entry of input.lock) {
    const text = input.files.get(entry.file);
    if (text === undefined) {
      errors.push(`published version ${entry.version} (${entry.file}) is missing: published versions are never removed`);
      continue;
    }
    const actual = sha256Hex(text);
    if (actual !== entry.sha256) {
      errors.push(
        `${entry.file}: published version ${entry.version} was edited (sha256 ${actual.slice(0, 12)}… != locked ${entry.sha256.slice(0, 12)}…). ` +
          "Publish a new version instead of editing a published one.",
      );
    }
  }
  for (const file of input.files.keys()) {
    if (!input.lock.some((l) => l.file === file)) errors.push(`${file}: not published; publish it (\`npm run policies:publish -- ${file}\` in this repository, \`retention publish ${file}\` where the kit is installed)`);
  }
  const last = input.lock[input.lock.length - 1];
  const current = last ? (parsed.get(last.file) ?? null) : null;
  if (!current) errors.push("no valid published registry version");
  else {
    const known = new PolicyIndex(current).knownCollectionIds();
    for (const [collection, where] of input.collectionsInUse) {
      if (!known.has(collection)) errors.push(`collection ${collection} (used by ${where}) is in no retention class`);
    }
    if (!current.subjects) errors.push(`${last!.file}: the version the functions enforce must declare subjects (who the data belongs to)`);
    else errors.push(...unflaggableUnderHolds(current, new PolicyIndex(current).subtreeHoldRoots()));
  }
  return { errors, current };
}

/** Collection ids named by `match /<collection>/{...}` in a rules file. */
export function collectionsInRules(rules: string): string[] {
  const ids = new Set<string>();
  for (const m of rules.matchAll(/match\s+\/([A-Za-z][A-Za-z0-9_-]*)\/\{/g)) {
    // `match /databases/{database}/documents` is the rules preamble, not a collection.
    if (m[1] !== "databases") ids.add(m[1]!);
  }
  return [...ids].sort();
}

/** A pattern's shape: its collection ids, with every document variable alike (`a/{x}/b/{y}` -> `a/{}/b/{}`). */
const shapeOf = (pattern: string): string => pattern.replace(/\{[A-Za-z]+\}/g, "{}");

/**
 * Classes a hold can reach but not flag. A hold covers its target and every document under it by path, so the
 * purge, the TTL trigger and the backfill all leave those documents alone; but Firestore's TTL sweeper obeys
 * no hold record, only a cleared TTL field, and a hold's flagging clears it only on documents whose class
 * allows holds. A collection whose class denies holds, under a document a hold can target (a collection of a
 * holdable class, or a pattern a hold targets whatever its class), would be covered and never flagged: refused.
 */
export function unflaggableUnderHolds(registry: Registry, holdTargetPatterns: readonly string[]): string[] {
  const classes = new Map(registry.classes.map((c) => [c.id, c]));
  const targets = new Set([
    ...registry.collections.filter((r) => classes.get(r.retentionClass)?.holdBehaviour === "allow").map((r) => shapeOf(r.pattern)),
    ...holdTargetPatterns.map(shapeOf),
  ]);
  const errors: string[] = [];
  for (const rule of registry.collections) {
    const cls = classes.get(rule.retentionClass);
    if (!cls || cls.holdBehaviour === "allow") continue;
    const parts = rule.pattern.split("/");
    for (let n = 2; n < parts.length; n += 2) {
      const ancestor = parts.slice(0, n).join("/");
      if (!targets.has(shapeOf(ancestor))) continue;
      errors.push(
        `${rule.pattern}: class ${cls.id} denies holds, but a hold on ${ancestor} covers its documents and could not flag them (clear their TTL value); ` +
          "give it a class that allows holds, or move it out from under a holdable document",
      );
      break;
    }
  }
  return errors;
}
