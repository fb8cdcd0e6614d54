import { z } from "zod";
import { retentionFingerprints } from "./policy-fingerprint";
import type { LockEntry } from "./registry-check";
import { RegistrySchema, type Registry } from "./policy-schema";

/**
 * A registry bundle: what `scripts/bundle-policies.ts` writes from an app's policies folder, and what the
 * functions enforce. `current` is the version in force; `published` is every version the app has published,
 * oldest first, with its file hash and its retention fingerprints (the audit tells a document stamped with an
 * older version whose retention did not change from one whose retention did).
 */
export interface RegistryBundle {
  current: Registry;
  published: { version: string; sha256: string; retention: Record<string, string> }[];
}

const BundleSchema = z.object({
  current: z.unknown(),
  published: z
    .array(z.object({ version: z.string().min(1), sha256: z.string().regex(/^[0-9a-f]{64}$/), retention: z.record(z.string(), z.string()) }))
    .min(1, "publishes no version"),
});

/**
 * Reads a bundle and checks it holds together: the current version is a valid registry, it is the last published
 * one, and its retention is what the bundle says was published under that name (a hand-edited current version
 * would disagree). Throws with every problem named; `source` says which file, for the message.
 */
export function parseRegistryBundle(raw: unknown, source: string): RegistryBundle {
  const shape = BundleSchema.safeParse(raw);
  if (!shape.success) throw new Error(`registry bundle ${source} is malformed: ${shape.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`);
  const current = RegistrySchema.safeParse(shape.data.current);
  if (!current.success) throw new Error(`registry bundle ${source}: its current version is not a valid registry: ${current.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const last = shape.data.published[shape.data.published.length - 1]!;
  if (last.version !== current.data.version) throw new Error(`registry bundle ${source}: its current version ${current.data.version} is not its last published one (${last.version})`);
  const fingerprints = retentionFingerprints(current.data);
  const same = Object.keys(fingerprints).length === Object.keys(last.retention).length && Object.entries(fingerprints).every(([p, f]) => last.retention[p] === f);
  if (!same) throw new Error(`registry bundle ${source}: the retention of its current version ${current.data.version} differs from what was published under that name`);
  return { current: current.data, published: shape.data.published };
}

/**
 * The bundle of an app's published registry: `current` (the version the checks found in force) and every published
 * version of the lock with its retention fingerprints, read from the policies folder's files (`files`: name to text).
 * Checked as the functions will read it. What `scripts/bundle-policies.ts` and `retention setup` write.
 */
export function makeRegistryBundle(files: ReadonlyMap<string, string>, lock: readonly LockEntry[], current: Registry, source: string): RegistryBundle {
  const published = lock.map(({ version, sha256, file }) => {
    const text = files.get(file);
    if (text === undefined) throw new Error(`registry ${source}: ${file} is in the lock but not in versions/`);
    return { version, sha256, retention: retentionFingerprints(RegistrySchema.parse(JSON.parse(text))) };
  });
  return parseRegistryBundle({ current, published }, source);
}
