import { canonicalJson, hashCanonical, sha256Hex } from "./canonical";
import { PROTECTED_FIELDS } from "./governed";

/**
 * The archive workflow's rules, pure. An archive is a copy of personal data: it is verified by hash before
 * the original may go, and it carries its own retention so that it never outlives the policy the original
 * followed. Values are plain JSON here; infrastructure converts Firestore types (Timestamps, references)
 * to a stable plain form before hashing (`infra/archive-store.ts`).
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

export interface ArchiveRetentionInput {
  retentionClass: string;
  tenantId: string;
  createdAtMs: number;
  expireAtMs: number | null;
  retainUntilMs: number | null;
  /** Hold ids covering the source (its flag's ids and active records on it or an ancestor). */
  holdIds: readonly string[];
}

export interface ArchiveRetention {
  retentionClass: string;
  tenantId: string;
  createdAtMs: number;
  retainUntilMs: number | null;
  /** The archive's own expiry (TTL field): the end of the source's retention. null while held. */
  expireAtMs: number | null;
  legalHold: boolean;
  holdIds: string[];
}

/**
 * The retention an archive carries: its source's class and anchor, and an expiry at the end of the
 * source's retention (its TTL value, or its business end), so the copy goes when the original would have.
 * A held source's archive carries no expiry: holds win for every copy.
 */
export function archiveRetention(src: ArchiveRetentionInput): ArchiveRetention {
  const holdIds = [...new Set(src.holdIds)].sort();
  const legalHold = holdIds.length > 0;
  return {
    retentionClass: src.retentionClass,
    tenantId: src.tenantId,
    createdAtMs: src.createdAtMs,
    retainUntilMs: src.retainUntilMs,
    expireAtMs: legalHold ? null : (src.expireAtMs ?? src.retainUntilMs),
    legalHold,
    holdIds,
  };
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
