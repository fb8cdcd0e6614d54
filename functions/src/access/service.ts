import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FieldValue, Timestamp, type DocumentReference, type DocumentSnapshot } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { exportSubject, type ExportManifest } from "../export/index";
import { hashCanonical } from "../kernel/canonical";
import { notFound } from "../kernel/errors";
import { groupSubjects } from "../requests/rules/group";
import { isOpenRequest } from "../requests/rules/requests";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs, toTimestamp } from "../platform/governed-doc";
import { checkLease, LEASE_TX, LeaseLostError, leaseState, leaseValue, releaseLease, releaseLeaseInTx, type LeaseHolder } from "../platform/lease";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";
import {
  assertMayFetch,
  BUILD_GIVE_UP_MS,
  BUILD_LEASE_MS,
  buildGivesUp,
  exportDecision,
  failureCode,
  PAGE_PARTS,
  partId,
  partsOf,
  type AccessExport,
  type ExportSource,
  type ExportState,
  EXPORT_STATES,
} from "./rules";

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
 * which also applies the subject's cooldown and refuses a new export while an erasure of the subject is open). One
 * transaction reads the user's exports and requests (equality queries on `uid`: TTL keeps the exports few, and a
 * user's requests are few), creates the record PENDING and appends ACCESS_EXPORT_REQUESTED; two concurrent asks create
 * one, and an erasure opened meanwhile makes the transaction retry and refuse. The record carries an expiry from the
 * start (its build's give-up time plus the download period), so a record whose build never ran is still deleted by
 * TTL. Staff handed an export that already exists get it back with evidence of their ask (their reference, hashed).
 * The caller then hands the build to the task queue (`created`).
 */
export async function requestAccessExport(input: RequestExportInput): Promise<{ export: AccessExport; created: boolean }> {
  // Validates the scopes the way an erasure's request group does (TOO_MANY_SCOPES past its bound).
  const scopes = groupSubjects(input.uid, input.scopes).map((s) => s.tenantId);
  return db().runTransaction(async (tx) => {
    const [exports, requests] = await Promise.all([tx.get(exportsCol().where("uid", "==", input.uid)), tx.get(db().collection(COLLECTIONS.deletionRequests).where("uid", "==", input.uid))]);
    const mine = exports.docs.map(exportFromFirestore);
    const erasureOpen = requests.docs.some((d) => isOpenRequest(d.get("state")));
    const decision = exportDecision(mine, input.source, settings.accessExportCooldownMs(), input.nowMs, erasureOpen);
    const referenceHash: Record<string, string> = input.reference ? { referenceHash: hashCanonical({ reference: input.reference }) } : {};
    if (decision.kind === "existing") {
      if (input.source === "staff") {
        const evidence = await openEvidence(tx, decision.export.exportId);
        evidence.append({
          action: "ACCESS_EXPORT_REQUESTED",
          actor: input.actor,
          decision: { reason: "STAFF_ON_BEHALF", source: input.source, outcome: "EXISTING_EXPORT" },
          policyVersion: policy().version,
          atMs: input.nowMs,
          correlationId: decision.export.exportId,
          detail: { exportId: decision.export.exportId, state: decision.export.state, ...referenceHash },
        });
      }
      return { export: decision.export, created: false };
    }
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
      expireAtMs: input.nowMs + BUILD_GIVE_UP_MS + settings.accessExportMs(),
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
      expireAt: toTimestamp(record.expireAtMs!),
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
      detail: { exportId: ref.id, scopes: scopes.length, ...referenceHash },
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

/** How a build attempt is run: whether it is the queue's last (a failure then ends the export FAILED), and which attempt. */
export interface BuildOptions {
  finalAttempt?: boolean;
  attempt?: number;
}

export type BuildOutcome = "BUILT" | "ALREADY_BUILT" | "LEASED" | "FAILED" | "GONE";

/**
 * Builds an export (the task's body; idempotent, so a redelivered task is harmless): leases it (platform/lease.ts; a
 * PENDING export, or a RUNNING one whose lease lapsed, becomes RUNNING), exports the subject with the subject export
 * into a private temporary directory (every document the data map finds, in every governed database, and every Cloud
 * Storage object its storage entries reach), writes every file as parts (rules.ts#partsOf) with the export's expiry
 * as their TTL field, then in one transaction fenced by the lease marks it READY with its manifest and expiry and
 * appends ACCESS_EXPORT_READY (the manifest's set hash and counts).
 *
 * A build that fails releases its lease and throws, so the queue retries (the next attempt rewrites the parts); on the
 * queue's last attempt, or at once for an error no retry can fix (rules.ts#buildGivesUp), it ends FAILED instead: its
 * parts deleted, ACCESS_EXPORT_FAILED evidence with the error's code (never its message), and an expiry for TTL; a
 * FAILED export blocks no new ask. An export deleted meanwhile (its subject's erasure: eraseSubjectExports) is not
 * rebuilt: the parts this attempt wrote are deleted ("GONE"). Returns the outcome; LEASED: another attempt holds it.
 */
export async function buildAccessExport(exportId: string, nowMs: number, opts: BuildOptions = {}): Promise<BuildOutcome> {
  const ref = exportsCol().doc(exportId);
  // Leases run on the wall clock (platform/lease.ts); `nowMs` dates what the build records.
  const holder: LeaseHolder = { owner: `build-${randomUUID()}`, ttlMs: BUILD_LEASE_MS, clock: () => Date.now() };
  const leased = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists) return "GONE" as const;
    const e = exportFromFirestore(snap);
    if (e.state === "READY" || e.state === "FAILED") return "ALREADY_BUILT" as const;
    if (leaseState(snap.data(), holder.owner, holder.clock()) === "taken") return "LEASED" as const;
    tx.update(ref, { state: "RUNNING", lease: leaseValue(holder) });
    return e;
  }, LEASE_TX);
  if (typeof leased === "string") return leased;
  let dir: string | null = null;
  try {
    dir = await mkdtemp(join(tmpdir(), "access-export-"));
    const out = join(dir, "export");
    const manifest = await exportSubject({ subject: groupSubjects(leased.uid, leased.scopes), outDir: out, nowMs });
    const files = await readTree(out);
    const parts = partsOf(files);
    const expireAtMs = nowMs + settings.accessExportMs();
    const expireAt = Timestamp.fromMillis(expireAtMs);
    // Parts from an earlier, interrupted attempt beyond this one's count go; the rest are overwritten by id.
    const stale = await ref.collection(EXPORT_PARTS).where("index", ">=", parts.length).get();
    const writer = partWriter();
    for (const s of stale.docs) await writer.remove(s.ref);
    const bytesOf = new Map(files.map((f) => [f.file, f.bytes]));
    for (const [i, p] of parts.entries()) {
      const slice = Buffer.from(bytesOf.get(p.file)!.subarray(p.start, p.end));
      await writer.set(ref.collection(EXPORT_PARTS).doc(partId(i)), { index: i, file: p.file, chunk: p.chunk, encoding: p.encoding, data: p.encoding === "utf8" ? slice.toString("utf8") : slice, expireAt }, slice.length);
    }
    await writer.flush();
    const ready = await db().runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      // Deleted while it was built: the subject's erasure took it (eraseSubjectExports).
      if (!snap.exists) return false;
      checkLease(snap, holder);
      const evidence = await openEvidence(tx, exportId);
      releaseLeaseInTx(tx, ref, {
        state: "READY",
        readyAt: toTimestamp(nowMs),
        expireAt,
        parts: parts.length,
        manifest: manifestSummary(manifest),
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
      return true;
    }, EVIDENCE_TX);
    if (!ready) {
      await deleteParts(ref);
      log.info("access.export.gone", { exportId });
      return "GONE";
    }
    log.info("access.export.ready", { exportId, documents: manifest.documents, parts: parts.length });
    return "BUILT";
  } catch (err) {
    // A lost lease is another attempt's export now: it decides, this one touches nothing more.
    if (!(err instanceof LeaseLostError) && (await failed(ref, holder, err, nowMs, opts))) return "FAILED";
    throw err;
  } finally {
    if (dir !== null) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A build attempt that threw: ends the export FAILED (rules.ts#buildGivesUp: the queue's last attempt, or an error no
 * retry fixes) and returns true, or releases the lease for the queue's next attempt and returns false (the caller
 * rethrows). FAILED deletes the parts written so far, then in one transaction fenced by the lease records the state,
 * the error's code, an expiry for TTL (the download period from now: long enough for the subject and staff to see
 * the failure) and ACCESS_EXPORT_FAILED evidence. A lease lost meanwhile changes nothing: its new holder decides.
 */
async function failed(ref: DocumentReference, holder: LeaseHolder, err: unknown, nowMs: number, opts: BuildOptions): Promise<boolean> {
  if (!buildGivesUp(err, opts.finalAttempt === true)) {
    await releaseLease(ref, holder);
    log.warn("access.export.retry", { exportId: ref.id, code: failureCode(err), attempt: opts.attempt ?? null });
    return false;
  }
  // Only the lease's holder may end it: checked before its parts go, and again where FAILED is written.
  if (leaseState((await ref.get()).data(), holder.owner, holder.clock()) !== "mine") return false;
  await deleteParts(ref);
  const code = failureCode(err);
  const expireAtMs = nowMs + settings.accessExportMs();
  const marked = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists || leaseState(snap.data(), holder.owner, holder.clock()) !== "mine") return false;
    const evidence = await openEvidence(tx, ref.id);
    releaseLeaseInTx(tx, ref, { state: "FAILED", failedAt: toTimestamp(nowMs), failure: code, expireAt: toTimestamp(expireAtMs), parts: 0 });
    evidence.append({
      action: "ACCESS_EXPORT_FAILED",
      actor: { type: "system", id: "buildDataExport" },
      decision: { reason: opts.finalAttempt === true ? "RETRIES_EXHAUSTED" : "CANNOT_SUCCEED", code },
      policyVersion: policy().version,
      atMs: nowMs,
      correlationId: ref.id,
      detail: { exportId: ref.id, code, ...(opts.attempt !== undefined ? { attempts: opts.attempt } : {}), expireAt: new Date(expireAtMs).toISOString() },
    });
    return true;
  }, EVIDENCE_TX);
  log.error("access.export.failed", { exportId: ref.id, code, marked });
  return marked;
}

/**
 * Batched writes of parts: a commit carries at most 500 writes and 10 MiB, so a batch takes at most 400 writes and
 * 4 MiB of part bytes.
 */
function partWriter() {
  let batch = db().batch();
  let writes = 0;
  let bytes = 0;
  const flush = async () => {
    if (writes > 0) await batch.commit();
    batch = db().batch();
    writes = 0;
    bytes = 0;
  };
  return {
    flush,
    async set(doc: DocumentReference, data: Record<string, unknown>, size: number) {
      if (bytes + size > 4 * 1024 * 1024 || writes >= 400) await flush();
      batch.set(doc, data);
      writes++;
      bytes += size;
    },
    async remove(doc: DocumentReference) {
      if (writes >= 400) await flush();
      batch.delete(doc);
      writes++;
    },
  };
}

/** Deletes every part of an export, a page at a time (ids only). Returns how many it deleted. */
async function deleteParts(ref: DocumentReference): Promise<number> {
  let deleted = 0;
  for (;;) {
    const page = await ref.collection(EXPORT_PARTS).select().limit(400).get();
    if (page.empty) return deleted;
    const batch = db().batch();
    for (const d of page.docs) batch.delete(d.ref);
    await batch.commit();
    deleted += page.size;
  }
}

/** What an erasure did to its subject's access exports (eraseSubjectExports). */
export interface ErasedExports {
  erased: number;
  /**
   * The latest expiry parts may still carry because a build was writing them when the erasure deleted its export
   * (the build deletes them when it finds its record gone; were it to die first, TTL takes them at this date at the
   * latest); null when no build was under way. "Fully gone by" counts it.
   */
  survivesUntilMs: number | null;
}

/**
 * An erasure deletes its subject's access exports (docs/decisions/0040-legal-clocks-and-access.md): an export is a
 * copy of the personal data the erasure erases, whatever its state, and a hold does not keep it (a hold keeps the
 * data itself, which stays where it is; the export is only the subject's copy of it). Each export's parts go first,
 * then in one transaction the record, with ACCESS_EXPORT_ERASED evidence in the export's chain naming the request; so
 * a crash leaves the record for the next attempt, and a second run finds nothing. Idempotent.
 */
export async function eraseSubjectExports(input: { uid: string; requestId: string; actor: Actor; nowMs: number }): Promise<ErasedExports> {
  const found = await exportsCol().where("uid", "==", input.uid).get();
  let erased = 0;
  let survivesUntilMs: number | null = null;
  for (const snap of found.docs) {
    // A build under way (a live lease) may write parts after this deletion: their expiry is at most the lease's end
    // plus the download period.
    if (snap.get("state") === "RUNNING" && leaseState(snap.data(), "", Date.now()) === "taken") {
      const leaseEnd = toMs(snap.get("lease.expiresAt")) ?? input.nowMs;
      survivesUntilMs = Math.max(survivesUntilMs ?? 0, leaseEnd + settings.accessExportMs());
    }
    const parts = await deleteParts(snap.ref);
    const done = await db().runTransaction(async (tx) => {
      const now = await tx.get(snap.ref);
      if (!now.exists) return false;
      const evidence = await openEvidence(tx, snap.id);
      tx.delete(snap.ref);
      evidence.append({
        action: "ACCESS_EXPORT_ERASED",
        actor: input.actor,
        decision: { reason: "SUBJECT_ERASED", state: String(now.get("state") ?? "") },
        policyVersion: policy().version,
        atMs: input.nowMs,
        requestId: input.requestId,
        correlationId: snap.id,
        counts: { parts },
        detail: { exportId: snap.id, downloads: typeof now.get("downloads") === "number" ? (now.get("downloads") as number) : 0 },
      });
      return true;
    }, EVIDENCE_TX);
    if (done) erased++;
  }
  if (erased > 0) log.info("access.export.erased", { requestId: input.requestId, erased });
  return { erased, survivesUntilMs };
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
