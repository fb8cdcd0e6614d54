import { canonicalJson, hashCanonical, sha256Hex } from "../../kernel/canonical";
import { PROTECTED_FIELDS, type GovernedFields } from "../../kernel/governed";
import { DAY_MS, type PolicyIndex } from "../../kernel/policy";
import type { RetentionClass } from "../../kernel/policy-schema";

/**
 * The archive workflow's rules, pure. An archive is a copy of personal data: it is verified by hash before
 * the original may go, and it carries its own retention, from the policy for archive copies. Values are plain JSON here; infrastructure converts Firestore types (Timestamps, references)
 * to a stable plain form before hashing (`purge/runner/archive.ts`).
 */

/** The business data of a document: everything except the retention and bookkeeping fields. */
export function businessData(data: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const skip = new Set<string>(PROTECTED_FIELDS);
  return Object.fromEntries(Object.entries(data).filter(([k]) => !skip.has(k)));
}

/**
 * The archive id of a source document. Derived from its path and retention anchor, so re-running the
 * workflow finds the same archive (idempotent), and a later document reusing the path gets its own.
 */
export function archiveIdFor(sourcePath: string, createdAtMs: number): string {
  return `arc-${sha256Hex(canonicalJson({ sourcePath, createdAtMs })).slice(0, 40)}`;
}

/** SHA-256 of the canonical JSON of a document's business data (in plain form). */
export const contentHash = (plainBusinessData: unknown): string => hashCanonical(plainBusinessData);

export interface ArchiveEntry {
  sourcePath: string;
  archiveId: string;
  sha256: string;
}

/** The hash of an archive manifest: its entries, sorted by source path. */
export function archiveManifestHash(entries: readonly ArchiveEntry[]): string {
  const sorted = [...entries].sort((a, b) => (a.sourcePath < b.sourcePath ? -1 : a.sourcePath > b.sourcePath ? 1 : 0));
  return hashCanonical({ archiveManifest: "v1", entries: sorted.map((e) => [e.sourcePath, e.archiveId, e.sha256]) });
}

/** The collection that holds archive copies (a control-plane collection in the registry). */
export const ARCHIVES_COLLECTION = "archives";

/** Whether a path names an archive copy, `archives/{archiveId}`. */
export function isArchivePath(path: string): boolean {
  const s = path.split("/");
  return s.length === 2 && s[0] === ARCHIVES_COLLECTION && s[1] !== "";
}

/** The archive copies' own retention class: the registry's `controlPlane` entry for `archives`. */
export function archiveClassOf(policy: PolicyIndex): RetentionClass {
  const cls = policy.controlPlaneClass(ARCHIVES_COLLECTION);
  if (!cls) throw new Error(`registry ${policy.version} gives the ${ARCHIVES_COLLECTION} collection no retention class`);
  return cls;
}

/** An archive's end of retention: its own class's duration, counted from when it was archived (null: open-ended). */
export function archiveRetainUntil(archiveClass: RetentionClass, archivedAtMs: number): number | null {
  return archiveClass.durationDays === null ? null : archivedAtMs + archiveClass.durationDays * DAY_MS;
}

export interface ArchiveRetentionInput {
  /** The archive's own class ({@link archiveClassOf}). */
  archiveClass: RetentionClass;
  /** When the copy is made: the archive's retention anchor. */
  archivedAtMs: number;
  tenantId: string;
  /** The source's retention, kept on the archive for the record. */
  source: { retentionClass: string; createdAtMs: number; retainUntilMs: number | null; expireAtMs: number | null };
  /** Hold ids covering the source (its flag's ids and active records on it or an ancestor). */
  holdIds: readonly string[];
}

export interface ArchiveRetention {
  /** The archive's own class, not the source's. */
  retentionClass: string;
  tenantId: string;
  /** The archiving time: the anchor the archive's retention counts from. */
  createdAtMs: number;
  retainUntilMs: number | null;
  /** The archive's own expiry (TTL field): its retainUntil. null while held. */
  expireAtMs: number | null;
  legalHold: boolean;
  holdIds: string[];
  source: ArchiveRetentionInput["source"];
}

/**
 * The retention an archive copy carries: its own policy's, never its source's. The source is archived because
 * it is about to be purged, so its retention has already run out; an archive that took the source's end of
 * retention as its expiry would be born expired, and TTL could delete it at once. The copy instead follows the
 * class the registry gives the `archives` collection (audit-7y), counted from the archiving time. The source's
 * class, anchor and end of retention stay on the archive as a record. A held source's archive carries no
 * expiry: holds win for every copy.
 */
export function archiveRetention(input: ArchiveRetentionInput): ArchiveRetention {
  const holdIds = [...new Set(input.holdIds)].sort();
  const legalHold = holdIds.length > 0;
  const retainUntilMs = archiveRetainUntil(input.archiveClass, input.archivedAtMs);
  return {
    retentionClass: input.archiveClass.id,
    tenantId: input.tenantId,
    createdAtMs: input.archivedAtMs,
    retainUntilMs,
    expireAtMs: legalHold ? null : retainUntilMs,
    legalHold,
    holdIds,
    source: { ...input.source },
  };
}

/**
 * An archive's retention after one of its holds is released (`releaseHold` gives the rest): once no hold is
 * left, its expiry comes back from its own class and archiving time. `releaseHold` alone would recompute a TTL
 * value from the class's mechanism, which for the archive class (archive-workflow) is none, and the copy would
 * never expire.
 */
export function archiveAfterRelease(released: GovernedFields, archiveClass: RetentionClass): GovernedFields {
  if (released.legalHold) return released;
  const retainUntilMs = archiveRetainUntil(archiveClass, released.createdAtMs);
  return { ...released, retainUntilMs, expireAtMs: retainUntilMs };
}

export type ArchiveProblem =
  /** No archive document where the manifest says one is. */
  | "MISSING"
  /** The archive names another source. */
  | "WRONG_SOURCE"
  /** The archived data no longer matches the hash recorded with it: the copy was altered. */
  | "HASH_MISMATCH"
  /** The archive is intact but no longer matches the source document. */
  | "SOURCE_CHANGED";

export interface ArchiveReadBack {
  exists: boolean;
  sourcePath: string | null;
  /** The hash recorded on the archive when it was written. */
  recordedSha256: string | null;
  /** The hash of the archived data as read back now. */
  dataSha256: string | null;
}

/**
 * Verification by read-back: the copy exists, names its source, its data hashes to the hash recorded when
 * it was written, and that hash equals the source's current hash. Only then is the archive verified.
 */
export function checkArchive(expected: { sourcePath: string; sha256: string }, archive: ArchiveReadBack): ArchiveProblem | null {
  if (!archive.exists) return "MISSING";
  if (archive.sourcePath !== expected.sourcePath) return "WRONG_SOURCE";
  if (archive.recordedSha256 === null || archive.dataSha256 === null || archive.recordedSha256 !== archive.dataSha256) return "HASH_MISMATCH";
  if (archive.dataSha256 !== expected.sha256) return "SOURCE_CHANGED";
  return null;
}
