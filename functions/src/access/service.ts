import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FieldValue, Timestamp, type DocumentSnapshot } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { exportSubject, type ExportManifest } from "../export/index";
import { hashCanonical } from "../kernel/canonical";
import { notFound } from "../kernel/errors";
import { groupSubjects } from "../requests/rules/group";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs, toTimestamp } from "../platform/governed-doc";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";
import { assertMayFetch, BUILD_LEASE_MS, exportDecision, PAGE_PARTS, partId, partsOf, type AccessExport, type ExportSource, type ExportState, EXPORT_STATES } from "./rules";

/**
 * Access exports (docs/decisions/0040-legal-clocks-and-access.md): a subject's copy of their data, asked for by them
 * (requestDataExport) or by staff for a request received another way, built by a task with the subject export
 * (export/subject.ts, the tenant export's format), kept in Firestore as parts the subject pages through
 * (getDataExport) until it expires, when Firestore's TTL deletes the record and its parts. Holds do not matter here:
 * an export reads, it deletes nothing. The asking, the building and every download are evidence, in the export's
 * own chain (its id is the shard key).
 */

const textOf = (v: unknown): string => (typeof v === "string" ? v : "");

/** The subcollection of an export's parts (a TTL policy of its own: indexes/rules.ts lists it with the others). */
export const EXPORT_PARTS = "exportParts";
const exportsCol = () => db().collection(COLLECTIONS.dataExports);

function exportFromFirestore(snap: DocumentSnapshot): AccessExport {
  const d = snap.data() ?? {};
  const state = (EXPORT_STATES as readonly unknown[]).includes(d.state) ? (d.state as ExportState) : "FAILED";
  return {
    exportId: snap.id,
    uid: String(d.uid ?? ""),
    scopes: Array.isArray(d.scopes) ? (d.scopes as unknown[]).map(String) : [""],
    state,
    source: d.source === "staff" ? "staff" : "subject",
    requestedBy: String(d.requestedBy ?? ""),
    requestedAtMs: toMs(d.requestedAt) ?? 0,
    readyAtMs: toMs(d.readyAt),
    expireAtMs: toMs(d.expireAt),
    parts: typeof d.parts === "number" ? d.parts : 0,
    downloads: typeof d.downloads === "number" ? d.downloads : 0,
  };
}

export interface RequestExportInput {
  uid: string;
  /** The scopes the user is exported in ([""] in an app without scopes), as `scopesOfRequester` finds them. */
  scopes: readonly string[];
  source: ExportSource;
  actor: Actor;
  /** Staff: where the request came from (a ticket, an email's reference); stored on the record, hashed in evidence. */
  reference?: string;
  nowMs: number;
}

/**
 * Opens an access export for a user, or returns the one being built or still downloadable (rules.ts#exportDecision,
 * which also applies the subject's cooldown). One transaction reads the user's exports (an equality query on `uid`:
 * TTL keeps them few), creates the record PENDING and appends ACCESS_EXPORT_REQUESTED; two concurrent asks create one.
 * The caller then hands the build to the task queue (`created`).
 */
export async function requestAccessExport(input: RequestExportInput): Promise<{ export: AccessExport; created: boolean }> {
  // Validates the scopes the way an erasure's request group does (TOO_MANY_SCOPES past its bound).
  const scopes = groupSubjects(input.uid, input.scopes).map((s) => s.tenantId);
  return db().runTransaction(async (tx) => {
    const mine = (await tx.get(exportsCol().where("uid", "==", input.uid))).docs.map(exportFromFirestore);
    const decision = exportDecision(mine, input.source, settings.accessExportCooldownMs(), input.nowMs);
    if (decision.kind === "existing") return { export: decision.export, created: false };
    const ref = exportsCol().doc();
    const evidence = await openEvidence(tx, ref.id);
    const record: AccessExport = {
      exportId: ref.id,
      uid: input.uid,
      scopes,
      state: "PENDING",
      source: input.source,
      requestedBy: input.actor.id,
      requestedAtMs: input.nowMs,
      readyAtMs: null,
      expireAtMs: null,
      parts: 0,
      downloads: 0,
    };
    tx.create(ref, {
      uid: record.uid,
      scopes: record.scopes,
      state: record.state,
      source: record.source,
      requestedBy: record.requestedBy,
      requestedAt: toTimestamp(input.nowMs),
      ...(input.reference ? { reference: input.reference } : {}),
      parts: 0,
      downloads: 0,
    });
    evidence.append({
      action: "ACCESS_EXPORT_REQUESTED",
      actor: input.actor,
      decision: { reason: input.source === "subject" ? "SUBJECT_REQUEST" : "STAFF_ON_BEHALF", source: input.source },
      policyVersion: policy().version,
      atMs: input.nowMs,
      correlationId: ref.id,
      detail: { exportId: ref.id, scopes: scopes.length, ...(input.reference ? { referenceHash: hashCanonical({ reference: input.reference }) } : {}) },
    });
    return { export: record, created: true };
  }, EVIDENCE_TX);
}

/** Reads one export; EXPORT_NOT_FOUND when there is none (or TTL took it). */
export async function readAccessExport(exportId: string): Promise<AccessExport> {
  const snap = await exportsCol().doc(exportId).get();
  if (!snap.exists) throw notFound("EXPORT_NOT_FOUND", "No such export.");
  return exportFromFirestore(snap);
}

/**
 * Builds an export (the task's body; idempotent, so a redelivered task is harmless): leases it (PENDING, or RUNNING
 * with a lapsed lease, becomes RUNNING), exports the subject with the subject export into a private temporary
 * directory (every document the data map finds, in every governed database, and every Cloud Storage object its
 * storage entries reach), writes every file as parts (rules.ts#partsOf) with the export's expiry as their TTL field,
 * then in one transaction marks it READY with its manifest and expiry and appends ACCESS_EXPORT_READY (the manifest's
 * set hash and counts). A build that fails throws, so the task retries; the next attempt rewrites the parts.
 * Returns the outcome: built, already built, or leased by another attempt.
 */
export async function buildAccessExport(exportId: string, nowMs: number): Promise<"BUILT" | "ALREADY_BUILT" | "LEASED"> {
  const ref = exportsCol().doc(exportId);
  const leased = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists) throw notFound("EXPORT_NOT_FOUND", `No such export ${exportId}.`);
    const e = exportFromFirestore(snap);
    if (e.state === "READY" || e.state === "FAILED") return "ALREADY_BUILT" as const;
    const lease = toMs(snap.get("leaseExpiresAt"));
    if (e.state === "RUNNING" && lease !== null && lease > nowMs) return "LEASED" as const;
    tx.update(ref, { state: "RUNNING", leaseExpiresAt: toTimestamp(nowMs + BUILD_LEASE_MS) });
    return e;
  });
  if (typeof leased === "string") return leased;
  const dir = await mkdtemp(join(tmpdir(), "access-export-"));
  try {
    const out = join(dir, "export");
    const manifest = await exportSubject({ subject: groupSubjects(leased.uid, leased.scopes), outDir: out, nowMs });
    const files = await readTree(out);
    const parts = partsOf(files);
    const expireAtMs = nowMs + settings.accessExportMs();
    const expireAt = Timestamp.fromMillis(expireAtMs);
    // Parts from an earlier, interrupted attempt beyond this one's count go; the rest are overwritten by id.
    const stale = await ref.collection(EXPORT_PARTS).where("index", ">=", parts.length).get();
    let batch = db().batch();
    let inBatch = 0;
    let batchBytes = 0;
    const flush = async () => {
      if (inBatch > 0) await batch.commit();
      batch = db().batch();
      inBatch = 0;
      batchBytes = 0;
    };
    for (const s of stale.docs) {
      batch.delete(s.ref);
      if (++inBatch >= 400) await flush();
    }
    const bytesOf = new Map(files.map((f) => [f.file, f.bytes]));
    for (const [i, p] of parts.entries()) {
      const slice = Buffer.from(bytesOf.get(p.file)!.subarray(p.start, p.end));
      // A commit carries at most 10 MiB: a few parts per batch.
      if (batchBytes + slice.length > 4 * 1024 * 1024) await flush();
      batch.set(ref.collection(EXPORT_PARTS).doc(partId(i)), {
        index: i,
        file: p.file,
        chunk: p.chunk,
        encoding: p.encoding,
        data: p.encoding === "utf8" ? slice.toString("utf8") : slice,
        expireAt,
      });
      inBatch++;
      batchBytes += slice.length;
    }
    await flush();
    await db().runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      const evidence = await openEvidence(tx, exportId);
      tx.update(ref, {
        state: "READY",
        readyAt: toTimestamp(nowMs),
        expireAt,
        parts: parts.length,
        manifest: manifestSummary(manifest),
        leaseExpiresAt: FieldValue.delete(),
      });
      evidence.append({
        action: "ACCESS_EXPORT_READY",
        actor: { type: "system", id: "buildDataExport" },
        decision: { reason: "ACCESS_REQUEST", source: String(snap.get("source") ?? "subject") },
        policyVersion: manifest.policyVersion,
        atMs: nowMs,
        correlationId: exportId,
        manifestHash: manifest.sha256,
        counts: { documents: manifest.documents, files: manifest.files.length, objects: manifest.objects?.length ?? 0, parts: parts.length },
        detail: { exportId, expireAt: new Date(expireAtMs).toISOString() },
      });
    }, EVIDENCE_TX);
    log.info("access.export.ready", { exportId, documents: manifest.documents, parts: parts.length });
    return "BUILT";
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What the record keeps of the manifest: its set hash and counts (the manifest itself travels as the first part). */
const manifestSummary = (m: ExportManifest) => ({ format: m.format, sha256: m.sha256, documents: m.documents, files: m.files.length, objects: m.objects?.length ?? 0, policyVersion: m.policyVersion });

/** Every file under `dir`, relative paths with `/`, and its bytes (an export: manifest.json, *.jsonl, objects/*). */
async function readTree(dir: string): Promise<{ file: string; bytes: Uint8Array }[]> {
  const out: { file: string; bytes: Uint8Array }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      for (const inner of await readTree(join(dir, entry.name))) out.push({ file: `${entry.name}/${inner.file}`, bytes: inner.bytes });
    } else {
      out.push({ file: entry.name, bytes: await readFile(join(dir, entry.name)) });
    }
  }
  return out;
}

export interface ExportPage {
  exportId: string;
  expiresAt: string;
  /** The manifest's set hash and counts, on every page, so a client can tell when it has everything. */
  manifest: { sha256: string; documents: number; files: number; objects: number };
  totalParts: number;
  parts: { index: number; file: string; chunk: number; encoding: "utf8" | "base64"; data: string }[];
  /** The index of the next page's first part; null after the last. */
  next: number | null;
}

/**
 * One page of an export for its subject (rules.ts#assertMayFetch says who and when): PAGE_PARTS parts from `from`.
 * A download starts at part 0: that page is recorded as ACCESS_EXPORT_DOWNLOADED evidence and counted on the record,
 * in the transaction that reads the record, so every download is evidence and none is counted twice.
 */
export async function readExportPage(input: { exportId: string; uid: string; from: number; nowMs: number }): Promise<ExportPage> {
  const ref = exportsCol().doc(input.exportId);
  const e = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const found = assertMayFetch(snap.exists ? exportFromFirestore(snap) : null, input.uid, input.nowMs);
    if (input.from !== 0) return { found, manifest: snap.get("manifest") as Record<string, unknown> };
    const evidence = await openEvidence(tx, input.exportId);
    tx.update(ref, { downloads: FieldValue.increment(1), lastDownloadAt: toTimestamp(input.nowMs) });
    evidence.append({
      action: "ACCESS_EXPORT_DOWNLOADED",
      actor: { type: "user", id: input.uid },
      decision: { reason: "SUBJECT_DOWNLOAD" },
      policyVersion: policy().version,
      atMs: input.nowMs,
      correlationId: input.exportId,
      manifestHash: textOf((snap.get("manifest") as Record<string, unknown> | undefined)?.sha256),
      counts: { download: found.downloads + 1 },
      detail: { exportId: input.exportId },
    });
    return { found, manifest: snap.get("manifest") as Record<string, unknown> };
  }, EVIDENCE_TX);
  if (input.from === 0) log.info("access.export.downloaded", { exportId: input.exportId });
  const snap = await ref.collection(EXPORT_PARTS).where("index", ">=", input.from).orderBy("index").limit(PAGE_PARTS).get();
  const parts = snap.docs.map((d) => {
    const data = d.get("data") as unknown;
    const encoding = d.get("encoding") === "base64" ? ("base64" as const) : ("utf8" as const);
    return {
      index: Number(d.get("index")),
      file: String(d.get("file")),
      chunk: Number(d.get("chunk")),
      encoding,
      data: encoding === "base64" ? Buffer.from(data as Uint8Array).toString("base64") : String(data),
    };
  });
  const last = parts[parts.length - 1];
  const next = last && last.index + 1 < e.found.parts ? last.index + 1 : null;
  const m = e.manifest ?? {};
  return {
    exportId: input.exportId,
    expiresAt: new Date(e.found.expireAtMs!).toISOString(),
    manifest: { sha256: textOf(m.sha256), documents: Number(m.documents ?? 0), files: Number(m.files ?? 0), objects: Number(m.objects ?? 0) },
    totalParts: e.found.parts,
    parts,
    next,
  };
}
