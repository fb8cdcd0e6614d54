import { z } from "zod";
import { hashCanonical } from "../kernel/canonical";
import { segments } from "../kernel/paths";
import type { PolicyIndex } from "../kernel/policy";

/**
 * A tenant's export for the departing customer, pure: which file each document goes to, the manifest, and the
 * verification of an export directory against its manifest. The export is the tenant's data map (every
 * document its closure would erase or keep), one JSON Lines file per collection, each line one document's
 * business data in canonical JSON (keys sorted), so the same data always gives the same bytes and hashes.
 */

export const EXPORT_FORMAT = "retention-export/v1";
export const MANIFEST_FILE = "manifest.json";

/**
 * The file a document goes to: its collection's registry pattern with the ids left out
 * (`workspaces/{workspaceId}/docs/{docId}` -> `workspaces.docs.jsonl`), or, for a path no pattern governs, its
 * collection ids the same way.
 */
export function exportFileFor(path: string, policy: PolicyIndex): { file: string; collection: string } {
  const rule = policy.ruleForPath(path);
  const s = rule ? segments(rule.pattern) : segments(path);
  const ids = s.filter((_, i) => i % 2 === 0);
  const collection = rule ? rule.pattern : s.map((seg, i) => (i % 2 === 0 ? seg : "{id}")).join("/");
  return { file: `${ids.join(".")}.jsonl`, collection };
}

/** One line of an export file: a document's path and its business data (retention bookkeeping left out). */
export interface ExportLine {
  path: string;
  data: Record<string, unknown>;
}

export const ExportFileSchema = z
  .object({
    file: z.string().regex(/^[A-Za-z0-9_.-]+\.jsonl$/, "a .jsonl file name"),
    collection: z.string().min(1),
    documents: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();

export const ExportManifestSchema = z
  .object({
    format: z.literal(EXPORT_FORMAT),
    tenantId: z.string().min(1),
    exportedAt: z.iso.datetime(),
    policyVersion: z.string().min(1),
    documents: z.number().int().nonnegative(),
    files: z.array(ExportFileSchema),
    /** SHA-256 of the whole set: `exportSetHash(files)`. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();

export type ExportFile = z.infer<typeof ExportFileSchema>;
export type ExportManifest = z.infer<typeof ExportManifestSchema>;

/** The hash of the whole set: every file's name, size, document count and SHA-256, sorted by name. */
export function exportSetHash(files: readonly ExportFile[]): string {
  const sorted = [...files].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return hashCanonical({ exportSet: EXPORT_FORMAT, files: sorted.map((f) => [f.file, f.bytes, f.documents, f.sha256]) });
}

export function buildManifest(args: { tenantId: string; exportedAtMs: number; policyVersion: string; files: readonly ExportFile[] }): ExportManifest {
  const files = [...args.files].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return {
    format: EXPORT_FORMAT,
    tenantId: args.tenantId,
    exportedAt: new Date(args.exportedAtMs).toISOString(),
    policyVersion: args.policyVersion,
    documents: files.reduce((n, f) => n + f.documents, 0),
    files,
    sha256: exportSetHash(files),
  };
}

export type ExportProblem =
  /** manifest.json is missing, is not JSON, or does not have the manifest's shape. */
  | "MANIFEST_INVALID"
  /** A file the manifest lists is not in the directory. */
  | "FILE_MISSING"
  /** A file's SHA-256, size or line count differs from the manifest's. */
  | "FILE_CHANGED"
  /** A .jsonl file in the directory that the manifest does not list. */
  | "FILE_UNLISTED"
  /** The manifest's set hash does not match its own file list, or its document total does not add up. */
  | "SET_HASH_MISMATCH";

export interface ExportFinding {
  problem: ExportProblem;
  file: string | null;
  detail: string;
}

/** A file of the directory as read now. */
export interface ObservedFile {
  file: string;
  bytes: number;
  lines: number;
  sha256: string;
}

/**
 * Verifies an export directory against its manifest: every listed file present with the recorded SHA-256,
 * size and document count, no unlisted export file beside them, and the set hash recomputed from the list.
 */
export function verifyExport(manifest: ExportManifest, observed: readonly ObservedFile[]): ExportFinding[] {
  const findings: ExportFinding[] = [];
  const seen = new Map(observed.map((o) => [o.file, o]));
  for (const f of manifest.files) {
    const o = seen.get(f.file);
    if (!o) {
      findings.push({ problem: "FILE_MISSING", file: f.file, detail: "listed in the manifest, not in the directory" });
      continue;
    }
    const diffs = [
      o.sha256 !== f.sha256 ? `sha256 ${o.sha256.slice(0, 12)}… != ${f.sha256.slice(0, 12)}…` : null,
      o.bytes !== f.bytes ? `${o.bytes} bytes != ${f.bytes}` : null,
      o.lines !== f.documents ? `${o.lines} documents != ${f.documents}` : null,
    ].filter((d): d is string => d !== null);
    if (diffs.length > 0) findings.push({ problem: "FILE_CHANGED", file: f.file, detail: diffs.join("; ") });
  }
  const listed = new Set(manifest.files.map((f) => f.file));
  for (const o of observed) if (!listed.has(o.file)) findings.push({ problem: "FILE_UNLISTED", file: o.file, detail: "in the directory, not in the manifest" });
  const total = manifest.files.reduce((n, f) => n + f.documents, 0);
  if (exportSetHash(manifest.files) !== manifest.sha256 || total !== manifest.documents) {
    findings.push({ problem: "SET_HASH_MISMATCH", file: null, detail: "the manifest's set hash or document total does not match its own file list" });
  }
  return findings.sort((a, b) => ((a.file ?? "") < (b.file ?? "") ? -1 : (a.file ?? "") > (b.file ?? "") ? 1 : 0));
}
