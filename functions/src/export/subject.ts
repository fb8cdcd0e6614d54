import { createHash, type Hash } from "node:crypto";
import { createReadStream, createWriteStream, type WriteStream } from "node:fs";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DocumentReference, GeoPoint, Timestamp, type DocumentData } from "firebase-admin/firestore";
import { canonicalJson } from "../kernel/canonical";
import { DomainError } from "../kernel/errors";
import { discoverObjects, discoverSubject, type DiscoveredObject, type Subject } from "../plan/index";
import { objectPath, parseObjectPath } from "../kernel/storage-map";
import { downloadObject } from "../platform/storage";
import { businessData } from "../purge/rules/archive";
import { COLLECTIONS, db, inCell } from "../platform/firestore";
import { DataKeys, dataKeyIdFor, keySubjectOf, openCopy } from "../shred/index";
import { policy, registryPolicy } from "../platform/registry";
import { PRIMARY_CELL } from "../kernel/policy";
import {
  buildManifest,
  exportFileFor,
  ExportManifestSchema,
  MANIFEST_FILE,
  objectFileFor,
  OBJECTS_DIR,
  verifyExport,
  type ExportFile,
  type ExportFinding,
  type ExportManifest,
  type ExportObject,
  type ExportOwner,
  type ObservedFile,
} from "./rules";

/** Documents read per getAll while exporting. */
const READ_SLICE = 300;

/**
 * A Firestore value as plain JSON for the customer: Timestamps as ISO-8601 to the nanosecond, references by
 * path, bytes in base64, each tagged so its type is not lost; numbers JSON cannot hold are tagged too.
 */
export function exportValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") return Number.isFinite(value) ? value : { $number: String(value) };
  if (typeof value !== "object") return value;
  if (value instanceof Timestamp) {
    const whole = new Date(value.seconds * 1000).toISOString().slice(0, 19);
    return { $timestamp: `${whole}.${String(value.nanoseconds).padStart(9, "0")}Z` };
  }
  if (value instanceof Date) return exportValue(Timestamp.fromDate(value));
  if (value instanceof GeoPoint) return { $geopoint: [value.latitude, value.longitude] };
  if (value instanceof DocumentReference) return { $ref: value.path };
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString("base64") };
  if (Array.isArray(value)) return value.map(exportValue);
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, exportValue(v)]));
}

/** One line of an export file: the document's path and its business data, in canonical JSON. */
export const exportLine = (path: string, data: DocumentData): string => `${canonicalJson({ path, data: exportValue(businessData(data)) })}\n`;

interface OpenFile {
  collection: string;
  stream: WriteStream;
  hash: Hash;
  bytes: number;
  documents: number;
}

async function write(f: OpenFile, line: string): Promise<void> {
  const buf = Buffer.from(line, "utf8");
  f.hash.update(buf);
  f.bytes += buf.length;
  f.documents++;
  if (!f.stream.write(buf)) await new Promise<void>((resolve) => f.stream.once("drain", resolve));
}

async function assertEmptyDir(dir: string): Promise<void> {
  const entries = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [];
    throw err;
  });
  if (entries.length > 0) throw new DomainError("failed-precondition", "EXPORT_DIR_NOT_EMPTY", `${dir} is not empty: export into a new directory.`);
}

/**
 * Exports a subject's data into `outDir`: its data map, walked as planning walks it (a tenant: its tree, its
 * external copies, its sessions, events and audit records; a user: their records, what they share, what is kept of
 * them), one JSON Lines file per collection; every Cloud Storage object its storage entries reach, its bytes as a
 * file under `objects/`; and `manifest.json` with each file's SHA-256, size and document count, each object's bucket,
 * name, generation, size and SHA-256, and the SHA-256 of the whole set. A tenant's manifest keeps the format's
 * `tenantId`, a user's names its `subject`. Read-only on Firestore and Cloud Storage; streams, so memory holds one
 * slice of documents (or one object) and the set of paths seen.
 */
export async function exportSubject(args: { subject: Subject | readonly Subject[]; outDir: string; nowMs: number }): Promise<ExportManifest> {
  // A user in several scopes is exported in all of them at once, as the members of the request group their erasure
  // opens (requests/rules/group.ts): the lead's data map with the uid-only entries, the others' scoped parts.
  const subjects: readonly Subject[] = Array.isArray(args.subject) ? args.subject : [args.subject as Subject];
  const first = subjects[0];
  if (!first || (subjects.length > 1 && subjects.some((s) => s.type !== "user" || s.uid !== (first.type === "user" ? first.uid : null)))) {
    throw new Error("exportSubject: one subject, or the members of one user's request group");
  }
  await assertEmptyDir(args.outDir);
  await mkdir(args.outDir, { recursive: true });
  const pol = policy();
  const files = new Map<string, OpenFile>();
  // Every governed database's part of the subject's data map (docs/decisions/0036-several-databases.md): another
  // database's documents go to files named by it (`analytics--events.jsonl`, collection `analytics:events/{eventId}`).
  // The objects come with the one database whose view holds the storage entries (kernel/policy.ts#cellOfEntry).
  const objects: ExportObject[] = [];
  for (const cell of registryPolicy().cells()) {
    await inCell(cell, async () => {
      await exportCell(subjects, args.outDir, files, cell);
      await exportObjects(subjects, args.outDir, objects);
    });
  }
  const written: ExportFile[] = [];
  for (const [file, f] of files) {
    await new Promise<void>((resolve, reject) => f.stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
    written.push({ file, collection: f.collection, documents: f.documents, bytes: f.bytes, sha256: f.hash.digest("hex") });
  }
  const owner: ExportOwner =
    first.type === "tenant"
      ? { type: "tenant", tenantId: first.tenantId }
      : subjects.length > 1
        ? { type: "user", uid: first.uid, tenantId: "", scopes: subjects.map((s) => s.tenantId) }
        : { type: "user", uid: first.uid, tenantId: first.tenantId };
  const manifest = buildManifest({ owner, exportedAtMs: args.nowMs, policyVersion: pol.version, files: written, objects });
  await writeFile(join(args.outDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** One governed database's part of a subject's export, written into `files` (the database `db()` names is `cell`). */
async function exportCell(subjects: readonly Subject[], outDir: string, files: Map<string, OpenFile>, cell: string): Promise<void> {
  const pol = policy();
  const seen = new Set<string>();
  let pending: string[] = [];
  const flush = async () => {
    const snaps = pending.length > 0 ? await db().getAll(...pending.map((p) => db().doc(p))) : [];
    pending = [];
    for (const s of snaps) {
      if (!s.exists) continue;
      const { file, collection } = cellFile(exportFileFor(s.ref.path, pol), cell);
      let f = files.get(file);
      if (!f) {
        f = { collection, stream: createWriteStream(join(outDir, file)), hash: createHash("sha256"), bytes: 0, documents: 0 };
        files.set(file, f);
      }
      await write(f, exportLine(s.ref.path, s.data() ?? {}));
    }
  };
  for (const subject of subjects) {
    for await (const d of discoverSubject(subject)) {
      if (seen.has(d.path)) continue;
      seen.add(d.path);
      pending.push(d.path);
      if (pending.length >= READ_SLICE) await flush();
    }
  }
  await flush();
  await exportArchiveCopies(subjects, outDir, files, cell);
}

/**
 * The subject's archive copies in this database, opened with its data key (decision 0038): each as a line of
 * `archives.jsonl`, the copy's path with its source path, end of retention and business data in the clear, for the
 * departing customer. A copy whose key was shredded cannot be opened and is left out: it is gone.
 */
async function exportArchiveCopies(subjects: readonly Subject[], outDir: string, files: Map<string, OpenFile>, cell: string): Promise<void> {
  const keys = new DataKeys();
  const ids = [...new Set(subjects.map((s) => dataKeyIdFor(keySubjectOf(s, s.tenantId))))];
  for (const id of ids) {
    // Every generation of the key: `<id>#g1`, `<id>#g2`, ...
    const copies = await db().collection(COLLECTIONS.archives).where("dataKey", ">=", `${id}#g`).where("dataKey", "<", `${id}#h`).get();
    for (const c of copies.docs) {
      const a = c.data();
      const opened = await openCopy(a, c.id, keys);
      if (!opened.ok) continue;
      const { file, collection } = cellFile({ file: `${COLLECTIONS.archives}.jsonl`, collection: `${COLLECTIONS.archives}/{archiveId}` }, cell);
      let f = files.get(file);
      if (!f) {
        f = { collection, stream: createWriteStream(join(outDir, file)), hash: createHash("sha256"), bytes: 0, documents: 0 };
        files.set(file, f);
      }
      const retainUntil = a.retainUntil as unknown;
      const data = { sourcePath: a.sourcePath as unknown, retainUntil: retainUntil instanceof Timestamp ? exportValue(retainUntil) : null, data: plainToExport(opened.plain) };
      await write(f, `${canonicalJson({ path: c.ref.path, data })}\n`);
    }
  }
}

/** An archive copy's plain form (purge/runner/archive.ts#toPlain) in the export's form: its Timestamps as ISO-8601. */
function plainToExport(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plainToExport);
  if (v === null || typeof v !== "object") return v;
  const o = v as Record<string, unknown>;
  const ts = typeof o.$timestamp === "string" ? /^(-?\d+)\.(\d{9})$/.exec(o.$timestamp) : null;
  if (ts && Object.keys(o).length === 1) return exportValue(new Timestamp(Number(ts[1]), Number(ts[2])));
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, plainToExport(x)]));
}

/** The file of a document of another governed database than the primary: named by the database too. */
const cellFile = (f: { file: string; collection: string }, cell: string): { file: string; collection: string } =>
  cell === PRIMARY_CELL ? f : { file: `${cell}--${f.file}`, collection: `${cell}:${f.collection}` };

/** A tenant's export (the format's first shape, `tenantId` in its manifest). */
export const exportTenant = (args: { tenantId: string; outDir: string; nowMs: number }): Promise<ExportManifest> =>
  exportSubject({ subject: { type: "tenant", tenantId: args.tenantId }, outDir: args.outDir, nowMs: args.nowMs });

/**
 * Every object the subject's storage entries reach, in the order discovery lists them: each one's bytes as
 * `objects/NNNNNN[.ext]`, hashed as they are written, with the generation they belong to. An object that went
 * between the listing and the download is left out.
 */
async function exportObjects(subjects: readonly Subject[], outDir: string, out: ExportObject[]): Promise<void> {
  const seen = new Set(out.map((o) => objectPath(o.bucket, o.name)));
  for await (const o of eachObject(subjects)) {
    if (seen.has(o.path)) continue;
    seen.add(o.path);
    const ref = parseObjectPath(o.path);
    if (!ref) continue;
    const got = await downloadObject(ref.bucket, ref.name);
    if (!got) continue;
    if (out.length === 0) await mkdir(join(outDir, OBJECTS_DIR), { recursive: true });
    const file = objectFileFor(out.length + 1, ref.name);
    await writeFile(join(outDir, file), got.bytes);
    out.push({ file, bucket: ref.bucket, name: ref.name, generation: got.object.generation, bytes: got.bytes.length, sha256: createHash("sha256").update(got.bytes).digest("hex") });
  }
}

async function* eachObject(subjects: readonly Subject[]): AsyncGenerator<DiscoveredObject> {
  for (const s of subjects) yield* discoverObjects(s);
}

/** A file's SHA-256, size and line count, streamed. */
async function observe(dir: string, file: string): Promise<ObservedFile> {
  const hash = createHash("sha256");
  let bytes = 0;
  let lines = 0;
  for await (const chunk of createReadStream(join(dir, file)) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
    for (const b of chunk) if (b === 0x0a) lines++;
  }
  return { file, bytes, lines, sha256: hash.digest("hex") };
}

export interface ExportVerification {
  ok: boolean;
  dir: string;
  manifest: ExportManifest | null;
  findings: ExportFinding[];
}

/**
 * Verifies an export directory: its manifest parses, every file it lists hashes to its recorded SHA-256 (with
 * its size and document count), no unlisted export file lies beside them, every object's file in `objects/` hashes to
 * its SHA-256 with nothing unlisted there, and the set hash matches. No Firestore or Cloud Storage access. A directory that does not exist is a usage error (EXPORT_DIR_NOT_FOUND).
 */
export async function verifyExportDir(dir: string): Promise<ExportVerification> {
  const isDir = await stat(dir).then((s) => s.isDirectory(), () => false);
  if (!isDir) throw new DomainError("not-found", "EXPORT_DIR_NOT_FOUND", `${dir} is not a directory.`);
  let manifest: ExportManifest | null = null;
  try {
    manifest = ExportManifestSchema.parse(JSON.parse(await readFile(join(dir, MANIFEST_FILE), "utf8")));
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === "ENOENT" ? "manifest.json is missing" : "manifest.json is not a valid export manifest";
    return { ok: false, dir, manifest: null, findings: [{ problem: "MANIFEST_INVALID", file: MANIFEST_FILE, detail: why }] };
  }
  const observed: ObservedFile[] = [];
  for (const n of (await readdir(dir)).filter((name) => name.endsWith(".jsonl")).sort()) observed.push(await observe(dir, n));
  const objectFiles = await readdir(join(dir, OBJECTS_DIR)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as string[];
    throw err;
  });
  const observedObjects: Omit<ObservedFile, "lines">[] = [];
  for (const n of objectFiles.sort()) {
    const { bytes, sha256 } = await observe(dir, `${OBJECTS_DIR}/${n}`);
    observedObjects.push({ file: `${OBJECTS_DIR}/${n}`, bytes, sha256 });
  }
  const findings = verifyExport(manifest, observed, observedObjects);
  return { ok: findings.length === 0, dir, manifest, findings };
}
