import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { FieldPath, FieldValue, type DocumentReference, type DocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import { notFound, DomainError } from "../kernel/errors";
import type { Actor } from "../evidence/rules";
import { hashCanonical, sha256Hex } from "../kernel/canonical";
import { archiveAfterRelease, isArchivePath } from "../purge/rules/archive";
import {
  assertHoldableClass,
  claimingHoldIds,
  holdClassForPath,
  assertReleaseAllowed,
  classifyHoldTarget,
  PathDigest,
  requireHoldReason,
  type HoldRecord,
  type HoldTargetType,
} from "./rules";
import { walkPhaseOf, type ActiveHoldRef, type WalkPhase } from "../kernel/held";
import { canonicalJson } from "../kernel/canonical";
import type { GovernedFields } from "../kernel/governed";
import { ancestorDocuments, isSameOrUnder } from "../kernel/paths";
import { applyHold, settleHolds } from "../kernel/retention";
import { COLLECTIONS, db } from "../platform/firestore";
import { GOVERNED_FIELDS, governedToFirestore, readGoverned, readGovernedStrict, toMs, toTimestamp } from "../platform/governed-doc";
import { activeHoldsInTx, advanceFenceInTx, deleteWindowRef, holdRefOf, readFenceInTx, windowFrom, windowsCoveringInTx } from "./fence";
import { placementWaits, windowStillOpen } from "../kernel/delete-window";
import { bindingsUnder, holdTargetCoversObject, listingPrefix, objectVars, heldWithPath } from "../kernel/storage-map";
import type { StorageEntry } from "../kernel/policy-schema";
import { bucketOfEntry, clearHoldMarker, listObjectsAfter, placeHoldMarker, type StorageObject } from "../platform/storage";
import { descendantsQuery } from "../platform/kindless";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";

const holdsCol = () => db().collection(COLLECTIONS.retentionHolds);

/** Every active hold record (id, target, reason), ordered by id: what the planner and purge check. */
export async function activeHolds(): Promise<ActiveHoldRef[]> {
  const snap = await holdsCol().where("state", "==", "ACTIVE").select("holdId", "targetPath", "reasonCode", "releasing", "unflagging").orderBy(FieldPath.documentId()).get();
  return snap.docs.map(holdRefOf);
}

/** The document itself and each ancestor document: the targets whose hold would cover it. */
export const coveringTargets = (path: string): string[] => [path, ...ancestorDocuments(path)];

/** Active hold records covering `path` (on it or an ancestor), read inside a transaction. */
export async function activeHoldsCoveringInTx(tx: Transaction, path: string): Promise<ActiveHoldRef[]> {
  const targets = coveringTargets(path);
  const out: ActiveHoldRef[] = [];
  // `in` takes at most 30 values; documents nest far less deep, but stay correct for any depth.
  for (let i = 0; i < targets.length; i += 30) {
    const q = holdsCol().where("state", "==", "ACTIVE").where("targetPath", "in", targets.slice(i, i + 30));
    const snap = await tx.get(q);
    for (const d of snap.docs) out.push(holdRefOf(d));
  }
  return out;
}

export function holdFromFirestore(snap: DocumentSnapshot): HoldRecord {
  const d = snap.data() ?? {};
  const opt = (k: string): Record<string, string> => {
    const v: unknown = d[k];
    return typeof v === "string" ? { [k]: v } : {};
  };
  return {
    holdId: snap.id,
    targetPath: String(d.targetPath),
    targetType: d.targetType === "subtree" ? "subtree" : "document",
    tenantId: String(d.tenantId ?? ""),
    reasonCode: String(d.reasonCode),
    state: d.state === "RELEASED" ? "RELEASED" : "ACTIVE",
    placedBy: String(d.placedBy),
    placedAtMs: toMs(d.placedAt) ?? 0,
    releaseAfterMs: toMs(d.releaseAfter),
    policyVersion: String(d.policyVersion ?? ""),
    affected: typeof d.affected === "number" ? d.affected : 0,
    ...opt("note"),
    ...opt("releasedBy"),
    ...opt("releaseReason"),
    ...(typeof toMs(d.releasedAt) === "number" ? { releasedAtMs: toMs(d.releasedAt) ?? 0 } : {}),
  };
}

export interface PlaceHoldInput {
  targetPath: string;
  reasonCode: string;
  releaseAfterMs: number | null;
  note?: string;
  actor: Actor;
  nowMs: number;
  /**
   * A hold on a scope's record across several governed databases (holds/cells.ts): in the primary, the other cells
   * it is placed in too (`cells`, kept on the hold of record); in each of those, the hold of record's id and
   * `cellOf` (the copy protects the scope's subtree there, whose record document lives in the primary).
   */
  cells?: readonly string[];
  holdId?: string;
  cellOf?: string;
}

/**
 * Applies a subtree hold's flags to the documents under it: inline (the CLI, tests), or by handing it to the
 * `applyRetentionHold` task queue (the callable, which must return within a callable's time).
 */
export type ApplyHold = (holdId: string) => Promise<void>;

/** Applies a subtree hold's flags here and now, to the end (for callers with no time limit). */
export const applyHoldNow: ApplyHold = async (holdId) => {
  for (;;) {
    const r = await applyHoldFlags(holdId);
    if (r !== "CONTINUE") return;
  }
};

/**
 * Places a hold. Validation happens before anything is written (unknown reason code, bad or ungoverned
 * path, a class that denies holds, a missing target). Every placement moves the hold fence in the same
 * transaction as the record (holds/fence.ts), so no destructive transaction can commit over it.
 * A document hold's first transaction writes the record, the target's flags, the fence and the evidence; a
 * subtree hold's writes the record, the fence and the evidence. From that commit the record protects its target
 * and everything under it by path prefix, and every later delete there is refused. The flags (legalHold, TTL
 * cleared) are then set on everything the hold covers, the target's descendants and the archive copies of
 * covered documents included, in resumable batches by `applyHoldFlags`, here or in the background (`apply`):
 * Firestore's TTL sweeper, which no record can stop, finds no TTL value on anything the hold covers.
 * Idempotent: the same placer placing the same reason on the same target (same releaseAfter) while that
 * hold is active gets the existing hold back, and an unfinished flagging is resumed.
 */
export async function placeHold(input: PlaceHoldInput, apply: ApplyHold = applyHoldNow): Promise<{ holdId: string }> {
  const pol = policy();
  requireHoldReason(pol, input.reasonCode);
  const target = classifyHoldTarget(pol, input.targetPath);
  if (target.targetType === "document") {
    const cls = holdClassForPath(pol, input.targetPath);
    if (!cls) throw new DomainError("invalid-argument", "NOT_GOVERNED_PATH", "targetPath is not in a governed collection.");
    assertHoldableClass(cls);
    return placeDocumentHold(input, apply);
  }
  return placeSubtreeHold(input, target.tenantId, apply);
}

function holdRecordData(r: HoldRecord, pathsHash: string | null, applied: boolean): Record<string, unknown> {
  return {
    holdId: r.holdId,
    targetPath: r.targetPath,
    targetType: r.targetType,
    tenantId: r.tenantId,
    reasonCode: r.reasonCode,
    state: r.state,
    placedBy: r.placedBy,
    placedAt: toTimestamp(r.placedAtMs),
    ...(r.releaseAfterMs !== null ? { releaseAfter: toTimestamp(r.releaseAfterMs) } : {}),
    ...(r.note !== undefined ? { note: r.note } : {}),
    policyVersion: r.policyVersion,
    affected: r.affected,
    ...(pathsHash !== null ? { pathsHash } : {}),
    applied,
  };
}

/** The same hold placed again by the same person while it is active: the idempotency key of a placement. */
async function findSameActiveHold(tx: Transaction, input: PlaceHoldInput): Promise<DocumentSnapshot | undefined> {
  const snap = await tx.get(
    holdsCol()
      .where("state", "==", "ACTIVE")
      .where("targetPath", "==", input.targetPath)
      .where("reasonCode", "==", input.reasonCode)
      .where("placedBy", "==", input.actor.id),
  );
  return snap.docs.find((d) => d.get("releasing") !== true && (toMs(d.get("releaseAfter")) ?? null) === input.releaseAfterMs);
}

function newRecord(input: PlaceHoldInput, holdId: string, targetType: HoldTargetType, tenantId: string, affected: number): HoldRecord {
  return {
    holdId,
    targetPath: input.targetPath,
    targetType,
    tenantId,
    reasonCode: input.reasonCode,
    state: "ACTIVE",
    placedBy: input.actor.id,
    placedAtMs: input.nowMs,
    releaseAfterMs: input.releaseAfterMs,
    ...(input.note !== undefined ? { note: input.note } : {}),
    policyVersion: policy().version,
    affected,
  };
}

async function placeDocumentHold(input: PlaceHoldInput, apply: ApplyHold): Promise<{ holdId: string }> {
  const ref = db().doc(input.targetPath);
  const holdRef = holdsCol().doc();
  // Objects held with the target (or with a document under it) are marked by the hold's walk too.
  const more = coversObjects(input.targetPath) || (await coversMore(ref.path));
  const result = await db().runTransaction(async (tx) => {
    const same = await findSameActiveHold(tx, input);
    if (same) return { holdId: same.id, applied: same.get("applied") === true, created: false, waiting: isWaiting(same) };
    const [snap, fence, evidence, windows] = await Promise.all([tx.get(ref), readFenceInTx(tx), openEvidence(tx, holdRef.id), coveredWindowsInTx(tx, input.targetPath)]);
    if (!snap.exists) throw notFound("TARGET_NOT_FOUND", "No document at targetPath.");
    const g = readGovernedStrict(snap.data());
    if (!g) throw new DomainError("failed-precondition", "UNKNOWN_POLICY", "The target document carries no valid retention fields.");
    const digest = new PathDigest();
    digest.add(ref.path);
    const record = newRecord(input, holdRef.id, "document", g.tenantId, 1);
    tx.update(ref, governedToFirestore(applyHold(g, holdRef.id)));
    const generation = advanceFenceInTx(tx, fence, input.nowMs, { holdId: holdRef.id, change: "PLACED" });
    const placed: PlacedEvidence = { counts: { affected: 1 }, pathsHash: digest.hex(), paths: [ref.path], fenceGeneration: generation, windows: windows.seen };
    const waiting = windows.waitFor.length > 0;
    // The target is flagged here; its descendants, the copies of what it covers and its objects, if it has any,
    // follow (`applyHoldFlags`). A document with none is applied in this transaction, unless HOLD_PLACED waits.
    const applied = !more && !waiting;
    tx.create(holdRef, {
      ...holdRecordData(record, digest.hex(), applied),
      ...(applied ? {} : { flagging: initialFlagging(input.nowMs) }),
      ...(waiting ? { placement: pendingPlacement(input, placed, windows.waitFor) } : {}),
    });
    if (!waiting) evidence.append(holdEvidence("HOLD_PLACED", record, input.actor, input.nowMs, placed));
    return { holdId: holdRef.id, applied, created: true, waiting };
  }, EVIDENCE_TX);
  if (result.created) log.info("hold.placed", { holdId: result.holdId, targetType: "document", affected: 1 });
  if (result.waiting) await completePlacement(result.holdId);
  if (!result.applied) await apply(result.holdId);
  return { holdId: result.holdId };
}

/** What HOLD_PLACED records: the counts, paths and digest of the placement, the fence generation it wrote, the windows it was ordered against. */
interface PlacedEvidence {
  counts: Record<string, number>;
  pathsHash: string | null;
  paths: string[];
  fenceGeneration: number;
  /** The delete windows covering the target that the placing transaction found (open or past their end). */
  windows: string[];
}

/**
 * The delete windows a placement on `target` is ordered against (kernel/delete-window.ts), read in its transaction:
 * none without a query for an app whose data map names no Cloud Storage objects.
 */
async function coveredWindowsInTx(tx: Transaction, target: string): Promise<ReturnType<typeof placementWaits>> {
  if (!policy().hasStorageEntries) return { seen: [], waitFor: [] };
  return placementWaits(target, await windowsCoveringInTx(tx, target), Date.now());
}

/** The record's note of a HOLD_PLACED that waits for delete windows, with everything the entry will say. */
function pendingPlacement(input: PlaceHoldInput, placed: PlacedEvidence, waitFor: { id: string; token: string; deleteByMs: number }[]): Record<string, unknown> {
  return { state: "WAITING", actor: input.actor, atMs: input.nowMs, evidence: placed, windows: waitFor };
}

/** Whether a hold record's HOLD_PLACED still waits for delete windows (read from a snapshot the caller has). */
const isWaiting = (snap: DocumentSnapshot): boolean => (snap.get("placement") as { state?: unknown } | undefined)?.state === "WAITING";

/** How often a waiting placement looks at the windows it waits for. */
const WINDOW_POLL_MS = 200;

/**
 * Completes a placement that waits for delete windows (docs/HOLD-FENCE.md, "Cloud Storage objects"): the record is
 * ACTIVE since its first transaction (every later decision keeps what it covers), and HOLD_PLACED is recorded once
 * every window it waits for is closed or past its end, in a second transaction. Anyone may complete it: the placer,
 * or whatever resumes the hold's flagging (the task, the nightly run). A placement that waits for nothing returns
 * at once.
 */
export async function completePlacement(holdId: string): Promise<void> {
  const holdRef = holdsCol().doc(holdId);
  const snap = await holdRef.get();
  const pending = snap.get("placement") as { state?: unknown; windows?: unknown } | undefined;
  if (!pending || pending.state !== "WAITING") return;
  const windows = Array.isArray(pending.windows) ? (pending.windows as { id: string; token: string; deleteByMs: number }[]) : [];
  for (const w of windows) {
    for (;;) {
      const now = windowFrom(await deleteWindowRef(w.id).get());
      if (!windowStillOpen(now, w.token, Date.now())) break;
      await new Promise((r) => setTimeout(r, Math.max(1, Math.min(WINDOW_POLL_MS, (now?.deleteByMs ?? 0) - Date.now()))));
    }
  }
  const recorded = await db().runTransaction(async (tx) => {
    const fresh = await tx.get(holdRef);
    const p = fresh.get("placement") as { state?: unknown; actor?: Actor; atMs?: number; evidence?: PlacedEvidence } | undefined;
    if (!p || p.state !== "WAITING" || !p.actor || typeof p.atMs !== "number" || !p.evidence) return false;
    const evidence = await openEvidence(tx, holdId);
    const record = holdFromFirestore(fresh);
    tx.update(holdRef, { "placement.state": "PLACED" });
    evidence.append(holdEvidence("HOLD_PLACED", record, p.actor, p.atMs, p.evidence));
    return true;
  }, EVIDENCE_TX);
  if (recorded) log.info("hold.placement.waited", { holdId, windows: windows.length });
}

/**
 * Whether a document hold on `path` covers more than the document: a descendant, or an archive copy of the
 * document or of one under it (`sourcePath` equal to it, or in `[path + "/", path + "0")`, which holds exactly the
 * paths under it). Three single-result queries, before the placing transaction: a document that appears under
 * the target after them is covered by the record, as one created after any hold's flagging is (the audit reports
 * it as HOLD_WITH_TTL if it carries a TTL value).
 */
async function coversMore(path: string): Promise<boolean> {
  const [children, copies, copiesUnder] = await Promise.all([
    descendantsQuery(path).select(FieldPath.documentId()).limit(1).get(),
    archivesCol().where("sourcePath", "==", path).select().limit(1).get(),
    archivesCol().where("sourcePath", ">=", `${path}/`).where("sourcePath", "<", `${path}0`).select().limit(1).get(),
  ]);
  return !children.empty || !copies.empty || !copiesUnder.empty;
}

/** Whether a hold on `target` can cover objects of the data map (their heldWith document is the target or under it). */
const coversObjects = (target: string): boolean => policy().allStorageEntries().some((e) => bindingsUnder(e, target) !== null);

/** `scopeId`: the scope whose record the target is; for another subtree root, the scope its own fields name. */
async function placeSubtreeHold(input: PlaceHoldInput, scopeId: string | null, apply: ApplyHold): Promise<{ holdId: string }> {
  // A copy of a scope hold in another cell holds the scope's subtree there; the record document is the primary's.
  const copy = input.cellOf !== undefined;
  const root = copy ? null : await db().doc(input.targetPath).get();
  if (root && !root.exists) throw notFound("TARGET_NOT_FOUND", "No document at targetPath.");
  const tenantId = scopeId ?? readGoverned(root?.data())?.tenantId ?? "";
  const holdRef = input.holdId !== undefined ? holdsCol().doc(input.holdId) : holdsCol().doc();
  const placed = await db().runTransaction(async (tx) => {
    // The copy of a hold already placed in this cell (a placement resumed) is the same hold.
    const existing = input.holdId !== undefined ? await tx.get(holdRef) : null;
    if (existing?.exists) return { holdId: existing.id, applied: existing.get("applied") === true, created: false, waiting: isWaiting(existing) };
    const same = await findSameActiveHold(tx, input);
    if (same) return { holdId: same.id, applied: same.get("applied") === true, created: false, waiting: isWaiting(same) };
    const [fence, evidence, windows] = await Promise.all([readFenceInTx(tx), openEvidence(tx, holdRef.id), coveredWindowsInTx(tx, input.targetPath)]);
    const record = newRecord(input, holdRef.id, "subtree", tenantId, 0);
    const cells = input.cells && input.cells.length > 0 ? { cells: [...input.cells], cellsPending: true } : {};
    const generation = advanceFenceInTx(tx, fence, input.nowMs, { holdId: holdRef.id, change: "PLACED" });
    // The paths are not listed here (a tenant may hold millions of documents): the record covers them all by
    // prefix from this commit, and HOLD_APPLIED records their count and digest once they are flagged.
    const evidenceOf: PlacedEvidence = { counts: {}, pathsHash: null, paths: [record.targetPath], fenceGeneration: generation, windows: windows.seen };
    const waiting = windows.waitFor.length > 0;
    tx.create(holdRef, {
      ...holdRecordData(record, null, false),
      flagging: initialFlagging(input.nowMs),
      ...cells,
      ...(copy ? { cellOf: input.cellOf } : {}),
      ...(waiting ? { placement: pendingPlacement(input, evidenceOf, windows.waitFor) } : {}),
    });
    if (!waiting) evidence.append(holdEvidence("HOLD_PLACED", record, input.actor, input.nowMs, evidenceOf));
    return { holdId: holdRef.id, applied: false, created: true, waiting };
  }, EVIDENCE_TX);
  if (placed.created) log.info("hold.placed", { holdId: placed.holdId, targetType: "subtree" });
  if (placed.waiting) await completePlacement(placed.holdId);
  if (!placed.applied) await apply(placed.holdId);
  return { holdId: placed.holdId };
}

/** A hold whose flagging made no progress for this long is taken up again by the nightly run. */
export const HOLD_APPLY_STALLED_MS = 10 * 60_000;

/**
 * Hands every hold whose flagging has stalled (no progress for HOLD_APPLY_STALLED_MS: a lost task, a
 * crashed worker) to `apply` again. The record protects its subtree meanwhile; this only finishes the flags.
 */
export async function resumeHoldApplications(apply: ApplyHold, wallMs: number = Date.now()): Promise<string[]> {
  const snap = await holdsCol().where("state", "==", "ACTIVE").where("applied", "==", false).get();
  const stalled = snap.docs
    .filter((d) => d.get("releasing") !== true && (toMs(d.get("flagging.updatedAt")) ?? 0) <= wallMs - HOLD_APPLY_STALLED_MS)
    .map((d) => d.id);
  for (const id of stalled) await apply(id);
  return stalled;
}

/** Documents listed (and, where holdable, flagged) per transaction while a hold is applied or released. */
export const HOLD_APPLY_BATCH = 200;

/**
 * A walk over everything a hold covers, in two phases, kept on the hold's record so any worker can resume it:
 * the documents under the target (the target first, then every descendant in name order), then the archive
 * copies. The flagging walks the copies of covered documents (by `sourcePath`, in that order); a release walks
 * the copies that carry its id (in name order). `cursor` is the last name the current phase dealt with.
 */
interface Walk {
  /** `objects`: the Cloud Storage objects the hold covers, after the archives, when the data map names any. */
  phase: WalkPhase;
  cursor: string | null;
  /**
   * The archives phase of a flagging: the last copy's source path, beside its name in `cursor`. The objects phase:
   * the index of the storage entry it is in (`cursor` is then the last object name dealt with).
   */
  sourceCursor: string | null;
  /** Documents the walk flagged (or, for a release, let go). */
  count: number;
  /** Objects the walk marked (or, for a release, cleared its marker from). */
  objects: number;
  vanished: number;
  /** A chained SHA-256 over the paths counted, batch by batch (the hold's `pathsHash` when done). */
  digest: string;
}

const initialWalk = (nowMs: number) => ({ phase: "documents", cursor: null, sourceCursor: null, count: 0, objects: 0, vanished: 0, digest: sha256Hex(""), updatedAt: toTimestamp(nowMs) });
const initialFlagging = initialWalk;

function walkOf(snap: DocumentSnapshot, field: "flagging" | "unflagging"): Walk {
  const f = (snap.get(field) as (Partial<Walk> & { flagged?: unknown }) | undefined) ?? {};
  const phase = walkPhaseOf(f.phase);
  // A flagging recorded before the walk had phases counted `flagged`.
  const count = typeof f.count === "number" ? f.count : typeof f.flagged === "number" ? f.flagged : 0;
  return {
    phase,
    cursor: typeof f.cursor === "string" ? f.cursor : null,
    sourceCursor: typeof f.sourceCursor === "string" ? f.sourceCursor : null,
    count,
    objects: typeof f.objects === "number" ? f.objects : 0,
    vanished: typeof f.vanished === "number" ? f.vanished : 0,
    digest: typeof f.digest === "string" ? f.digest : sha256Hex(""),
  };
}

const sameSpot = (a: Walk, b: Walk) => a.phase === b.phase && a.cursor === b.cursor && a.sourceCursor === b.sourceCursor;

/**
 * The next documents of a subtree after `cursor`, in name order: the root itself first, then every
 * descendant at any depth (one kindless query, names only). Returns every name listed, holdable or not, so
 * the cursor moves past documents a hold does not flag (ungoverned, or of a class that denies holds).
 */
async function nextSubtreeNames(rootPath: string, cursor: string | null, limit: number): Promise<string[]> {
  const names: string[] = [];
  if (cursor === null && (await db().doc(rootPath).get()).exists) names.push(rootPath);
  // A query's limit(0) is no limit at all: a batch of one that already holds the root lists nothing more.
  if (names.length >= limit) return names;
  let q = descendantsQuery(rootPath).select(FieldPath.documentId());
  if (cursor !== null && cursor !== rootPath) q = q.where(FieldPath.documentId(), ">", db().doc(cursor));
  const snap = await q.limit(limit - names.length).get();
  names.push(...snap.docs.map((d) => d.ref.path));
  return names;
}

interface Listed {
  /** Paths to settle in the batch's transaction. */
  paths: string[];
  /** Where the phase stands after this batch, and whether the phase is done. */
  cursor: string | null;
  sourceCursor: string | null;
  phaseDone: boolean;
}

const archivesCol = () => db().collection(COLLECTIONS.archives);

/**
 * The next archive copies of documents under `rootPath` (by source path, then name; one range query on
 * `sourcePath`, names and sources only). The range `[root, root + "0")` also holds sibling names that share the
 * root's text (`workspaces/w-1-x`): the cursor moves past them, only copies of covered documents are kept.
 */
async function nextCopiesCovered(rootPath: string, from: Walk, limit: number): Promise<Listed> {
  let q = archivesCol().where("sourcePath", ">=", rootPath).where("sourcePath", "<", `${rootPath}0`).orderBy("sourcePath").orderBy(FieldPath.documentId()).select("sourcePath");
  if (from.cursor !== null && from.sourceCursor !== null) q = q.startAfter(from.sourceCursor, from.cursor.split("/")[1]!);
  const snap = await q.limit(limit).get();
  const last = snap.docs[snap.docs.length - 1];
  return {
    paths: snap.docs.filter((d) => isSameOrUnder(String(d.get("sourcePath")), rootPath)).map((d) => d.ref.path),
    cursor: last ? last.ref.path : from.cursor,
    sourceCursor: last ? String(last.get("sourcePath")) : from.sourceCursor,
    phaseDone: snap.size < limit,
  };
}

/** The next archive copies that carry a hold's id, in name order. */
async function nextCopiesCarrying(holdId: string, from: Walk, limit: number): Promise<Listed> {
  let q = archivesCol().where("holdIds", "array-contains", holdId).orderBy(FieldPath.documentId()).select();
  if (from.cursor !== null) q = q.startAfter(from.cursor.split("/")[1]!);
  const snap = await q.limit(limit).get();
  const last = snap.docs[snap.docs.length - 1];
  return { paths: snap.docs.map((d) => d.ref.path), cursor: last ? last.ref.path : from.cursor, sourceCursor: null, phaseDone: snap.size < limit };
}

/** The next batch of a walk: documents under the target, then archive copies (`copies` says which). */
async function nextBatch(targetPath: string, from: Walk, limit: number, copies: (from: Walk, limit: number) => Promise<Listed>): Promise<Listed> {
  if (from.phase === "archives") return copies(from, limit);
  const names = await nextSubtreeNames(targetPath, from.cursor, limit);
  return { paths: names, cursor: names.length > 0 ? names[names.length - 1]! : from.cursor, sourceCursor: null, phaseDone: names.length < limit };
}

/**
 * Where a walk stands after a batch: the next phase starts from its beginning. After the archives come the objects
 * when the data map names any (`withObjects`), else the walk is done.
 */
function advance(from: Walk, listed: Listed, settled: readonly string[], vanished: number, withObjects: boolean): Walk {
  const digest = settled.length > 0 ? sha256Hex(`${from.digest}\n${settled.join("\n")}`) : from.digest;
  const moved = { count: from.count + settled.length, objects: from.objects, vanished: from.vanished + vanished, digest };
  if (!listed.phaseDone) return { ...moved, phase: from.phase, cursor: listed.cursor, sourceCursor: listed.sourceCursor };
  const next: Walk["phase"] = from.phase === "documents" ? "archives" : from.phase === "archives" && withObjects ? "objects" : "done";
  return { ...moved, phase: next, cursor: null, sourceCursor: null };
}

/** An object's version, as the adapter's writes name it. */
const refOf = (o: StorageObject) => ({ bucket: o.bucket, name: o.name, generation: o.generation });

/**
 * One batch of a walk's objects phase (docs/STORAGE.md): the next objects, in name order, of the storage entries
 * whose objects a hold on `target` can cover (kernel/storage-map.ts#bindingsUnder), listed from the longest prefix
 * the target fixes and kept when the target covers their heldWith document; `act` marks or clears each. Returns
 * where the phase stands after it (entry index in `sourceCursor`, last name in `cursor`) and how many it changed.
 */
async function objectsBatch(target: string, from: Walk, limit: number, act: (o: StorageObject, entry: StorageEntry) => Promise<boolean>): Promise<{ next: Pick<Walk, "cursor" | "sourceCursor">; changed: number; phaseDone: boolean }> {
  const entries = policy().allStorageEntries();
  let index = from.sourceCursor === null ? 0 : Number(from.sourceCursor);
  let cursor = from.cursor;
  for (; index < entries.length; index++, cursor = null) {
    const entry = entries[index]!;
    const bound = bindingsUnder(entry, target);
    const prefix = bound ? listingPrefix(entry, bound) : null;
    if (prefix === null) continue;
    const listed = await listObjectsAfter(bucketOfEntry(entry), prefix, cursor, limit);
    let changed = 0;
    for (const o of listed) if (holdTargetCoversObject(entry, target, o.name) && (await act(o, entry))) changed++;
    const last = listed[listed.length - 1];
    if (listed.length >= limit && last) return { next: { cursor: last.name, sourceCursor: String(index) }, changed, phaseDone: false };
    if (index + 1 >= entries.length) return { next: { cursor: null, sourceCursor: null }, changed, phaseDone: true };
    return { next: { cursor: null, sourceCursor: String(index + 1) }, changed, phaseDone: false };
  }
  return { next: { cursor: null, sourceCursor: null }, changed: 0, phaseDone: true };
}

/** The active holds other than `holdId` that claim an object held with `heldWith` (a hold being released claims none). */
const otherClaims = (heldWith: string, holdId: string, holds: readonly ActiveHoldRef[]): string[] =>
  holds.filter((h) => h.holdId !== holdId && !h.letGo && isSameOrUnder(heldWith, h.targetPath)).map((h) => h.holdId);

/** The heldWith document of an object of `entry`, or null when its name does not fill the template. */
function objectHeldWith(entry: StorageEntry, name: string): string | null {
  const vars = objectVars(entry, name);
  return vars ? heldWithPath(entry, vars) : null;
}

/**
 * The documents of a batch read in its transaction, with what settling their holds needs: the active hold
 * records (read after the fence, so the set is the one of the fence's generation), each document's class (an
 * archive copy's is the archives collection's) and, for classes that inherit their parent's expiry, the
 * parent's. Every read comes before the batch writes anything.
 */
async function readBatchInTx(tx: Transaction, paths: readonly string[]) {
  const pol = policy();
  // The retention fields only (and an archive copy's source), never business data.
  const fieldMask = [...GOVERNED_FIELDS, "sourcePath"];
  const [snaps, holds] = await Promise.all([
    paths.length > 0 ? tx.getAll(...paths.map((p) => db().doc(p)), { fieldMask }) : Promise.resolve([]),
    readFenceInTx(tx).then(() => activeHoldsInTx(tx)),
  ]);
  const parents = await parentExpiries(tx, snaps);
  const docs = snaps.map((s) => {
    const g = s.exists ? readGovernedStrict(s.data()) : null;
    const cls = g ? holdClassForPath(pol, s.ref.path) : undefined;
    const sourcePath = isArchivePath(s.ref.path) ? (typeof s.get("sourcePath") === "string" ? String(s.get("sourcePath")) : null) : undefined;
    return { snap: s, g, cls, sourcePath, parentExpireAtMs: parents.get(s.ref.path) ?? null };
  });
  return { docs, holds };
}

type BatchDoc = Awaited<ReturnType<typeof readBatchInTx>>["docs"][number];

/**
 * A document's hold marks settled against the holds that claim it (`holds`), in the caller's transaction:
 * written only when they change. An archive copy that no hold claims gets its expiry back from the archive's
 * own class (`archiveAfterRelease`). Returns whether the document was settled (governed, of a known class).
 */
function settleInTx(tx: Transaction, d: BatchDoc, holds: readonly ActiveHoldRef[]): boolean {
  if (!d.g || !d.cls) return false;
  const claiming = claimingHoldIds(d.snap.ref.path, holds, d.sourcePath);
  let next: GovernedFields = settleHolds(d.g, claiming, d.cls, { parentExpireAtMs: d.parentExpireAtMs });
  if (d.sourcePath !== undefined) next = archiveAfterRelease(next, d.cls);
  if (canonicalJson(next) !== canonicalJson(d.g)) tx.update(d.snap.ref, governedToFirestore(next));
  return true;
}

export type HoldApplyResult = "APPLIED" | "CONTINUE" | "STOPPED";

/** Where a hold's flagging stands (the last name it listed). */
export async function holdFlaggingCursor(holdId: string): Promise<string | null> {
  return walkOf(await holdsCol().doc(holdId).get(), "flagging").cursor;
}

export interface HoldApplyOptions {
  batchSize?: number;
  /** Wall-clock budget, checked after each batch; past it the worker returns CONTINUE and the next one resumes from the cursor. */
  budgetMs?: number;
  clock?: () => number;
  /** Test seam: runs after a batch is listed and before its transaction (another writer may act here). */
  afterList?: (names: readonly string[]) => Promise<void>;
}

/**
 * Sets a hold's flags on everything it covers: every holdable document under its target (the target included),
 * then every archive copy of a covered document, a batch per transaction. Each transaction re-reads the record
 * (still ACTIVE, not being released, cursor where this worker left it: two workers cannot both move it), the
 * fence and the active holds, and the batch's documents, and settles each document's marks against every hold
 * that claims it (holds/rules.ts#claimingHoldIds): legalHold, the ids of all of them, no TTL value. A document
 * the listing saw but the transaction finds gone disappeared while it was under the hold: it is recorded as
 * HOLD_TARGET_VANISHED incident evidence and logged at ERROR, never skipped silently. The last batch marks the
 * record applied with HOLD_APPLIED evidence (count and digest).
 */
export async function applyHoldFlags(holdId: string, opts: HoldApplyOptions = {}): Promise<HoldApplyResult> {
  const batchSize = opts.batchSize ?? HOLD_APPLY_BATCH;
  const clock = opts.clock ?? Date.now;
  const deadline = clock() + (opts.budgetMs ?? Number.POSITIVE_INFINITY);
  const holdRef = holdsCol().doc(holdId);
  const pol = policy();
  const holdable = (path: string) => holdClassForPath(pol, path)?.holdBehaviour === "allow";
  for (;;) {
    const snap = await holdRef.get();
    if (!snap.exists) throw notFound("HOLD_NOT_FOUND", "No such hold.");
    if (snap.get("state") !== "ACTIVE" || snap.get("releasing") === true) return "STOPPED";
    if (snap.get("applied") === true) return "APPLIED";
    // A placement that waits for delete windows is completed first: HOLD_PLACED precedes HOLD_APPLIED.
    if (isWaiting(snap)) await completePlacement(holdId);
    const hold = holdFromFirestore(snap);
    const from = walkOf(snap, "flagging");
    if (from.phase === "objects") {
      // Markers are written before the transaction that moves the cursor: a marker is never a decision (the record
      // decides), so a batch that runs twice only writes the same markers again.
      const batch = await objectsBatch(hold.targetPath, from, batchSize, async (o) => {
        if (o.holdIds.includes(holdId)) return false;
        return (await placeHoldMarker(refOf(o), holdId)).outcome === "marked";
      });
      const moved = await db().runTransaction(async (tx) => {
        const fresh = await tx.get(holdRef);
        if (fresh.get("state") !== "ACTIVE" || fresh.get("releasing") === true || fresh.get("applied") === true || !sameSpot(walkOf(fresh, "flagging"), from)) return true;
        const nowMs = clock();
        const next: Walk = { ...from, ...batch.next, objects: from.objects + batch.changed, phase: batch.phaseDone ? "done" : "objects" };
        if (batch.phaseDone) await finishFlagging(tx, holdRef, hold, next, nowMs);
        else tx.update(holdRef, { flagging: { ...next, updatedAt: toTimestamp(nowMs) } });
        return false;
      }, EVIDENCE_TX);
      if (batch.changed > 0) log.info("hold.objects.marked", { holdId, marked: batch.changed });
      if (moved) continue;
      if (batch.phaseDone) {
        log.info("hold.applied", { holdId });
        return "APPLIED";
      }
      if (clock() > deadline) return "CONTINUE";
      continue;
    }
    const listed = from.phase === "done" ? null : await nextBatch(hold.targetPath, from, batchSize, (f, n) => nextCopiesCovered(hold.targetPath, f, n));
    if (listed) await opts.afterList?.(listed.paths);
    const wanted = listed ? (from.phase === "documents" ? listed.paths.filter(holdable) : listed.paths) : [];
    const outcome = await db().runTransaction(async (tx) => {
      const fresh = await tx.get(holdRef);
      if (fresh.get("state") !== "ACTIVE" || fresh.get("releasing") === true || fresh.get("applied") === true) return "moved" as const;
      if (!sameSpot(walkOf(fresh, "flagging"), from)) return "moved" as const;
      const { docs, holds } = await readBatchInTx(tx, wanted);
      const vanished = from.phase === "documents" ? docs.filter((d) => !d.snap.exists).map((d) => d.snap.ref.path) : [];
      const last = !listed || (from.phase === "archives" && listed.phaseDone && !pol.hasStorageEntries);
      const evidence = vanished.length > 0 || last ? await openEvidence(tx, holdId) : null;
      const flagged = docs.filter((d) => settleInTx(tx, d, holds)).map((d) => d.snap.ref.path);
      const next = listed ? advance(from, listed, flagged, vanished.length, pol.hasStorageEntries) : from;
      const nowMs = clock();
      if (vanished.length > 0) {
        evidence!.append(
          holdEvidence("HOLD_TARGET_VANISHED", hold, { type: "system", id: "applyRetentionHold" }, nowMs, {
            counts: { vanished: vanished.length },
            pathsHash: null,
            paths: vanished,
            reason: "DELETED_WHILE_HELD",
          }),
        );
      }
      if (last) {
        tx.update(holdRef, { flagging: { ...next, phase: "done", updatedAt: toTimestamp(nowMs) }, applied: true, affected: next.count, pathsHash: next.digest });
        evidence!.append(holdEvidence("HOLD_APPLIED", { ...hold, affected: next.count }, { type: "system", id: "applyRetentionHold" }, nowMs, appliedCounts(next)));
      } else {
        tx.update(holdRef, { flagging: { ...next, updatedAt: toTimestamp(nowMs) } });
      }
      return { vanished: vanished.length, last };
    }, EVIDENCE_TX);
    if (outcome === "moved") continue;
    if (outcome.vanished > 0) log.error("hold.target_vanished", { holdId, vanished: outcome.vanished });
    if (outcome.last) {
      log.info("hold.applied", { holdId });
      return "APPLIED";
    }
    // Every call makes progress: the budget is checked after a batch, never before the first.
    if (clock() > deadline) return "CONTINUE";
  }
}

/** HOLD_APPLIED's counts: the documents flagged, those that vanished, and (when the data map names any) the objects marked. */
const appliedCounts = (w: Walk) => ({
  counts: { affected: w.count, vanished: w.vanished, ...(w.objects > 0 ? { objects: w.objects } : {}) },
  pathsHash: w.digest,
});

/** The flagging's last transaction, when it ends in the objects phase: the record applied, with HOLD_APPLIED. */
async function finishFlagging(tx: Transaction, holdRef: DocumentReference, hold: HoldRecord, w: Walk, nowMs: number): Promise<void> {
  const evidence = await openEvidence(tx, hold.holdId);
  tx.update(holdRef, { flagging: { ...w, phase: "done", updatedAt: toTimestamp(nowMs) }, applied: true, affected: w.count, pathsHash: w.digest });
  evidence.append(holdEvidence("HOLD_APPLIED", { ...hold, affected: w.count }, { type: "system", id: "applyRetentionHold" }, nowMs, appliedCounts(w)));
}

function holdEvidence(
  action: "HOLD_PLACED" | "HOLD_APPLIED" | "HOLD_TARGET_VANISHED" | "HOLD_RELEASED",
  record: HoldRecord,
  actor: Actor,
  nowMs: number,
  o: { counts: Record<string, number>; pathsHash: string | null; paths?: string[]; fenceGeneration?: number; releaseReasonHash?: string; reason?: string; windows?: string[] },
) {
  return {
    action,
    actor,
    decision: { reason: o.reason ?? record.reasonCode, targetType: record.targetType },
    policyVersion: policy().version,
    atMs: nowMs,
    holdId: record.holdId,
    paths: o.paths ?? [record.targetPath],
    counts: o.counts,
    detail: {
      tenantId: record.tenantId,
      ...(o.pathsHash !== null ? { pathsHash: o.pathsHash } : {}),
      ...(o.fenceGeneration !== undefined ? { fenceGeneration: o.fenceGeneration } : {}),
      ...(o.releaseReasonHash ? { releaseReasonHash: o.releaseReasonHash } : {}),
      // The delete windows the placement found covering its target: the ledger's order of this hold against them.
      ...(o.windows && o.windows.length > 0 ? { windows: o.windows.join(",") } : {}),
    },
  };
}

export interface ReleaseHoldInput {
  holdId: string;
  reason: string;
  actor: Actor;
  nowMs: number;
}

/**
 * Releases a hold: the two-person rule and releaseAfter are checked before anything is written, and again in
 * the last transaction. The release first marks the record `releasing` (which stops its flagging and moves the
 * fence, so every purge sees it), then walks what the hold covers in resumable batches, with its cursor on the
 * record (`unflagging`): the documents under the target in name order, then every archive copy that carries the
 * hold's id. Each document that carries the id is settled against the holds that still claim it
 * (holds/rules.ts#claimingHoldIds): another active hold covering it (on it, on an ancestor, a subtree hold whose
 * flagging has not reached it yet, or another release that has not reached it yet) keeps it held, under that
 * hold's id, with no TTL value; only a document no other hold claims gets its retention back from policy, an
 * archive copy from the archive's own class. Each documents batch's range is listed again after its commit
 * (`settleStragglers`), for documents created after its listing. The record becomes RELEASED last, with its evidence, so an
 * interrupted release leaves the record ACTIVE (still protecting everything under it), and releasing it again
 * resumes from the cursor.
 */
export async function releaseHoldById(input: ReleaseHoldInput, opts: HoldApplyOptions = {}): Promise<{ holdId: string; released: number }> {
  const pol = policy();
  const batchSize = opts.batchSize ?? HOLD_APPLY_BATCH;
  const holdRef = holdsCol().doc(input.holdId);
  const snap = await holdRef.get();
  if (!snap.exists) throw notFound("HOLD_NOT_FOUND", "No such hold.");
  const hold = holdFromFirestore(snap);
  assertReleaseAllowed(hold, pol.holdReason(hold.reasonCode), input.actor.id, input.nowMs);
  // A placement still waiting for delete windows records HOLD_PLACED before the release can begin.
  if (isWaiting(snap)) await completePlacement(input.holdId);

  if (snap.get("releasing") !== true) {
    // From here the hold's flagging stops and no other writer gives its id to a document its walk has passed or
    // to an archive copy. The fence moves, so a purge's cached view of the holds sees the release begin.
    await db().runTransaction(async (tx) => {
      const fresh = await tx.get(holdRef);
      const current = holdFromFirestore(fresh);
      assertReleaseAllowed(current, pol.holdReason(current.reasonCode), input.actor.id, input.nowMs);
      if (fresh.get("releasing") === true) return;
      const fence = await readFenceInTx(tx);
      tx.update(holdRef, { releasing: true, unflagging: initialWalk(input.nowMs) });
      advanceFenceInTx(tx, fence, input.nowMs, { holdId: hold.holdId, change: "RELEASING" });
    }, EVIDENCE_TX);
  }

  for (;;) {
    const rec = await holdRef.get();
    const from = walkOf(rec, "unflagging");
    const recheck = recheckOf(rec);
    if (recheck) {
      if (!(await settleStragglers(holdRef, hold, from, recheck, input.nowMs))) {
        const now = await holdRef.get();
        if (now.get("state") !== "ACTIVE") break;
      }
      continue;
    }
    if (from.phase === "done") break;
    if (from.phase === "objects") {
      // Each object that carries this hold's marker: the other holds that claim it get theirs first, then this
      // one's is cleared (kept: the object stays marked for as long as any hold answers for it).
      const holds = await activeHolds();
      const batch = await objectsBatch(hold.targetPath, from, batchSize, async (o, entry) => {
        if (!o.holdIds.includes(hold.holdId)) return false;
        const heldWith = objectHeldWith(entry, o.name);
        for (const other of heldWith ? otherClaims(heldWith, hold.holdId, holds) : []) if (!o.holdIds.includes(other)) await placeHoldMarker(refOf(o), other);
        return (await clearHoldMarker(refOf(o), hold.holdId)).outcome === "cleared";
      });
      const moved = await db().runTransaction(async (tx) => {
        const fresh = await tx.get(holdRef);
        if (fresh.get("state") !== "ACTIVE" || fresh.get("releasing") !== true || !sameSpot(walkOf(fresh, "unflagging"), from)) return true;
        const next: Walk = { ...from, ...batch.next, objects: from.objects + batch.changed, phase: batch.phaseDone ? "done" : "objects" };
        tx.update(holdRef, { unflagging: { ...next, updatedAt: toTimestamp(input.nowMs) } });
        return false;
      }, EVIDENCE_TX);
      if (batch.changed > 0) log.info("hold.objects.cleared", { holdId: hold.holdId, cleared: batch.changed });
      if (moved) {
        const now = await holdRef.get();
        if (now.get("state") !== "ACTIVE") break;
      }
      continue;
    }
    const listed = await nextBatch(hold.targetPath, from, batchSize, (f, n) => nextCopiesCarrying(hold.holdId, f, n));
    await opts.afterList?.(listed.paths);
    const moved = await db().runTransaction(async (tx) => {
      const fresh = await tx.get(holdRef);
      if (fresh.get("state") !== "ACTIVE" || fresh.get("releasing") !== true || !sameSpot(walkOf(fresh, "unflagging"), from)) return true;
      const { docs, holds } = await readBatchInTx(tx, listed.paths);
      // Every other hold, this one never: its own walk is what lets go of the document.
      const others = holds.filter((h) => h.holdId !== hold.holdId);
      const carriers = docs.filter((d) => d.g?.holdIds.includes(hold.holdId) === true);
      const settled = carriers.filter((d) => settleInTx(tx, d, others)).map((d) => d.snap.ref.path);
      // A documents batch leaves the range it passed to be listed again (`settleStragglers`).
      const passed: Recheck | null = from.phase === "documents" ? { after: from.cursor, through: listed.phaseDone ? true : listed.cursor } : null;
      tx.update(holdRef, { unflagging: { ...advance(from, listed, settled, 0, pol.hasStorageEntries), updatedAt: toTimestamp(input.nowMs), ...(passed ? { recheck: passed } : {}) } });
      return false;
    }, EVIDENCE_TX);
    if (moved) {
      const now = await holdRef.get();
      if (now.get("state") !== "ACTIVE") break;
    }
  }

  const reasonHash = hashCanonical({ releaseReason: input.reason });
  const total = await db().runTransaction(async (tx) => {
    const fresh = await tx.get(holdRef);
    const current = holdFromFirestore(fresh);
    assertReleaseAllowed(current, pol.holdReason(current.reasonCode), input.actor.id, input.nowMs);
    const walk = walkOf(fresh, "unflagging");
    const [fence, evidence] = await Promise.all([readFenceInTx(tx), openEvidence(tx, hold.holdId)]);
    tx.update(holdRef, {
      state: "RELEASED",
      releasedBy: input.actor.id,
      releasedAt: toTimestamp(input.nowMs),
      releaseReason: input.reason,
      releasedCount: walk.count,
      releasedPathsHash: walk.digest,
      ...(walk.objects > 0 ? { releasedObjects: walk.objects } : {}),
      releasing: FieldValue.delete(),
    });
    // The set of active holds changes: cached hold sets of running purges are invalidated, and requests
    // retained under a hold are planned again by the next run.
    const generation = advanceFenceInTx(tx, fence, input.nowMs, { holdId: hold.holdId, change: "RELEASED" });
    evidence.append(
      holdEvidence("HOLD_RELEASED", current, input.actor, input.nowMs, {
        counts: { released: walk.count, ...(walk.objects > 0 ? { objects: walk.objects } : {}) },
        pathsHash: walk.digest,
        fenceGeneration: generation,
        releaseReasonHash: reasonHash,
      }),
    );
    return walk.count;
  }, EVIDENCE_TX);
  log.info("hold.released", { holdId: hold.holdId, released: total });
  return { holdId: hold.holdId, released: total };
}

/**
 * The range of documents a release's documents batch passed: after `after` up to `through` (inclusive; `true`:
 * to the end of the subtree). Written by the batch's transaction, cleared once the range is listed again.
 */
interface Recheck {
  after: string | null;
  through: string | true | null;
}

function recheckOf(snap: DocumentSnapshot): Recheck | null {
  const r = snap.get("unflagging.recheck") as { after?: unknown; through?: unknown } | undefined;
  if (!r || typeof r !== "object") return null;
  return { after: typeof r.after === "string" ? r.after : null, through: r.through === true ? true : typeof r.through === "string" ? r.through : null };
}

/**
 * A documents batch of a release settles what it listed, and its transaction moves the cursor past a range that
 * may hold documents created after the listing. Until that commit the hold still claimed them (its cursor was
 * before them), so another hold's walk could give them its id. From the commit nothing can (holds/rules.ts#
 * claimingHoldIds reads the cursor), so listing the range once more finds every such document: each that carries
 * the id is settled against the other holds, like the batch's own. The range stays on the record until this is
 * done, so a release interrupted here does it when resumed. Returns false when another worker moved the walk.
 */
async function settleStragglers(holdRef: DocumentReference, hold: HoldRecord, from: Walk, recheck: Recheck, nowMs: number): Promise<boolean> {
  const names = recheck.through === null ? [] : await subtreeNamesThrough(hold.targetPath, recheck.after, recheck.through);
  return db().runTransaction(async (tx) => {
    const fresh = await tx.get(holdRef);
    const now = recheckOf(fresh);
    const same = now !== null && now.after === recheck.after && now.through === recheck.through;
    if (fresh.get("state") !== "ACTIVE" || fresh.get("releasing") !== true || !same || !sameSpot(walkOf(fresh, "unflagging"), from)) return false;
    const { docs, holds } = await readBatchInTx(tx, names);
    const others = holds.filter((h) => h.holdId !== hold.holdId);
    const settled = docs.filter((d) => d.g?.holdIds.includes(hold.holdId) === true).filter((d) => settleInTx(tx, d, others)).map((d) => d.snap.ref.path);
    const digest = settled.length > 0 ? sha256Hex(`${from.digest}\n${settled.join("\n")}`) : from.digest;
    tx.update(holdRef, {
      "unflagging.recheck": FieldValue.delete(),
      "unflagging.count": from.count + settled.length,
      "unflagging.digest": digest,
      "unflagging.updatedAt": toTimestamp(nowMs),
    });
    return true;
  }, EVIDENCE_TX);
}

/** The documents of a subtree after `cursor` up to `through` (inclusive; `true`: to the end), in name order, the root first. */
async function subtreeNamesThrough(rootPath: string, cursor: string | null, through: string | true): Promise<string[]> {
  const names: string[] = [];
  if (cursor === null && (await db().doc(rootPath).get()).exists) names.push(rootPath);
  if (through === rootPath) return names;
  let q = descendantsQuery(rootPath).select(FieldPath.documentId());
  if (cursor !== null && cursor !== rootPath) q = q.where(FieldPath.documentId(), ">", db().doc(cursor));
  if (through !== true) q = q.where(FieldPath.documentId(), "<=", db().doc(through));
  const snap = await q.get();
  names.push(...snap.docs.map((d) => d.ref.path));
  return names;
}

/** For classes that inherit their parent's expiry: the parent's current expireAt, read in the transaction. */
async function parentExpiries(tx: Transaction, snaps: DocumentSnapshot[]): Promise<Map<string, number | null>> {
  const pol = policy();
  const wanted = new Map<string, DocumentReference>();
  for (const s of snaps) {
    const parent = pol.classForPath(s.ref.path)?.inheritsParentExpiry ? pol.expiryParentOf(s.ref.path) : null;
    if (parent) wanted.set(s.ref.path, db().doc(parent));
  }
  const out = new Map<string, number | null>();
  if (wanted.size === 0) return out;
  const parentSnaps = await tx.getAll(...wanted.values());
  const byPath = new Map(parentSnaps.map((p) => [p.ref.path, readGovernedStrict(p.data())?.expireAtMs ?? null]));
  for (const [child, ref] of wanted) out.set(child, byPath.get(ref.path) ?? null);
  return out;
}
