import { z } from "zod";
import { hashCanonical } from "../kernel/canonical";
import { segments } from "../kernel/paths";
import type { PolicyIndex } from "../kernel/policy";

/**
 * A subject's export (a tenant's for the departing customer, a user's for an access or portability request), pure:
 * which file each document goes to, the manifest, and the verification of an export directory against its manifest.
 * The export is the subject's data map (every document its erasure would erase or keep), one JSON Lines file per
 * collection, each line one document's business data in canonical JSON (keys sorted), so the same data always gives
 * the same bytes and hashes; and every Cloud Storage object its storage entries reach, its bytes as a file under
 * `objects/`, listed in the manifest with its bucket, name, generation and SHA-256 (docs/STORAGE.md).
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

/** The folder an export's objects are written to. */
export const OBJECTS_DIR = "objects";

/** One Cloud Storage object of an export: its bytes in `file` (under `objects/`), and which object and generation they are. */
export const ExportObjectSchema = z
  .object({
    file: z.string().regex(/^objects\/[0-9]{6}(\.[A-Za-z0-9]{1,8})?$/, "objects/NNNNNN[.ext]"),
    bucket: z.string().min(1),
    name: z.string().min(1),
    generation: z.string().regex(/^[0-9]+$/),
    bytes: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();

/**
 * A user's export names its subject; a tenant's keeps the `tenantId` field it always had. A user in several scopes,
 * exported in all of them (as the request group their erasure opens), names every scope in `scopes`, lead first, and
 * no one `tenantId` ("").
 */
export const ExportSubjectSchema = z
  .object({ type: z.literal("user"), uid: z.string().min(1), tenantId: z.string(), scopes: z.array(z.string().min(1)).min(2).optional() })
  .strict()
  .refine((s) => s.scopes === undefined || s.tenantId === "", { message: "a user exported in several scopes names them in scopes, with tenantId empty" });

export const ExportManifestSchema = z
  .object({
    format: z.literal(EXPORT_FORMAT),
    /** A tenant's export (the format's first shape). */
    tenantId: z.string().min(1).optional(),
    /** A user's export. */
    subject: ExportSubjectSchema.optional(),
    exportedAt: z.iso.datetime(),
    policyVersion: z.string().min(1),
    documents: z.number().int().nonnegative(),
    files: z.array(ExportFileSchema),
    /** Present when the data map reached any Cloud Storage object. */
    objects: z.array(ExportObjectSchema).optional(),
    /** SHA-256 of the whole set: `exportSetHash(files, objects)`. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict()
  .superRefine((m, ctx) => {
    if ((m.tenantId === undefined) === (m.subject === undefined)) ctx.addIssue({ code: "custom", message: "a manifest names its tenant (tenantId) or its user (subject), exactly one" });
  });

export type ExportFile = z.infer<typeof ExportFileSchema>;
export type ExportObject = z.infer<typeof ExportObjectSchema>;
export type ExportManifest = z.infer<typeof ExportManifestSchema>;
/** Whose export it is: a tenant (`tenantId` in the manifest, as always) or a user (`subject`). */
export type ExportOwner = { type: "tenant"; tenantId: string } | z.infer<typeof ExportSubjectSchema>;

const byFile = <T extends { file: string }>(a: T, b: T) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0);

/**
 * The hash of the whole set: every file's name, size, document count and SHA-256, sorted by name; and, when there
 * are any, every object's file, bucket, name, generation, size and SHA-256. An export without objects hashes as the
 * format always did.
 */
export function exportSetHash(files: readonly ExportFile[], objects: readonly ExportObject[] = []): string {
  const sorted = [...files].sort(byFile);
  return hashCanonical({
    exportSet: EXPORT_FORMAT,
    files: sorted.map((f) => [f.file, f.bytes, f.documents, f.sha256]),
    ...(objects.length > 0 ? { objects: [...objects].sort(byFile).map((o) => [o.file, o.bucket, o.name, o.generation, o.bytes, o.sha256]) } : {}),
  });
}

/** The file an object's bytes go to: its place in the export, with the name's extension when it has a plain one. */
export function objectFileFor(index: number, name: string): string {
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec(name)?.[1];
  return `${OBJECTS_DIR}/${String(index).padStart(6, "0")}${ext ? `.${ext}` : ""}`;
}

export function buildManifest(args: { tenantId?: string; owner?: ExportOwner; exportedAtMs: number; policyVersion: string; files: readonly ExportFile[]; objects?: readonly ExportObject[] }): ExportManifest {
  const files = [...args.files].sort(byFile);
  const objects = [...(args.objects ?? [])].sort(byFile);
  const owner: ExportOwner = args.owner ?? { type: "tenant", tenantId: args.tenantId ?? "" };
  return {
    format: EXPORT_FORMAT,
    ...(owner.type === "tenant" ? { tenantId: owner.tenantId } : { subject: owner }),
    exportedAt: new Date(args.exportedAtMs).toISOString(),
    policyVersion: args.policyVersion,
    documents: files.reduce((n, f) => n + f.documents, 0),
    files,
    ...(objects.length > 0 ? { objects } : {}),
    sha256: exportSetHash(files, objects),
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
  /** An object's file the manifest lists is not in `objects/`. */
  | "OBJECT_MISSING"
  /** An object's file differs from the manifest's SHA-256 or size. */
  | "OBJECT_CHANGED"
  /** A file in `objects/` that the manifest does not list. */
  | "OBJECT_UNLISTED"
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
 * size and document count, no unlisted export file beside them, every listed object's file in `objects/` with its
 * SHA-256 and size and nothing unlisted there, and the set hash recomputed from the lists.
 */
export function verifyExport(manifest: ExportManifest, observed: readonly ObservedFile[], observedObjects: readonly Omit<ObservedFile, "lines">[] = []): ExportFinding[] {
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
  const objects = manifest.objects ?? [];
  const seenObjects = new Map(observedObjects.map((o) => [o.file, o]));
  for (const o of objects) {
    const got = seenObjects.get(o.file);
    if (!got) findings.push({ problem: "OBJECT_MISSING", file: o.file, detail: `gs://${o.bucket}/${o.name}#${o.generation}: listed in the manifest, not in the directory` });
    else if (got.sha256 !== o.sha256 || got.bytes !== o.bytes) {
      findings.push({ problem: "OBJECT_CHANGED", file: o.file, detail: `gs://${o.bucket}/${o.name}#${o.generation}: ${got.bytes} bytes, sha256 ${got.sha256.slice(0, 12)}… != ${o.bytes}, ${o.sha256.slice(0, 12)}…` });
    }
  }
  const listedObjects = new Set(objects.map((o) => o.file));
  for (const o of observedObjects) if (!listedObjects.has(o.file)) findings.push({ problem: "OBJECT_UNLISTED", file: o.file, detail: "in objects/, not in the manifest" });
  const total = manifest.files.reduce((n, f) => n + f.documents, 0);
  if (exportSetHash(manifest.files, objects) !== manifest.sha256 || total !== manifest.documents) {
    findings.push({ problem: "SET_HASH_MISMATCH", file: null, detail: "the manifest's set hash or document total does not match its own file list" });
  }
  return findings.sort((a, b) => ((a.file ?? "") < (b.file ?? "") ? -1 : (a.file ?? "") > (b.file ?? "") ? 1 : 0));
}
