import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { FieldPath, FieldValue, type DocumentReference, type DocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import { notFound, DomainError } from "../kernel/errors";
import type { Actor } from "../evidence/rules";
import { hashCanonical, sha256Hex } from "../kernel/canonical";
import { archiveAfterRelease, isArchivePath } from "../purge/rules/archive";
import { assertHoldableClass, holdClassForPath, assertReleaseAllowed, classifyHoldTarget, PathDigest, requireHoldReason, type HoldRecord, type HoldTargetType } from "./rules";
import type { ActiveHoldRef } from "../kernel/held";
import { ancestorDocuments } from "../kernel/paths";
import { applyHold, releaseHold } from "../kernel/retention";
import { COLLECTIONS, db } from "../platform/firestore";
import { governedToFirestore, readGovernedStrict, toMs, toTimestamp, streamGovernedDescendants } from "../platform/governed-doc";
import { advanceFenceInTx, readFenceInTx } from "./fence";
import { descendantsQuery } from "../platform/kindless";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";

/** Documents changed per transaction when a hold is applied to or released from a subtree. */
const HOLD_BATCH = 200;

const holdsCol = () => db().collection(COLLECTIONS.retentionHolds);

/** Every active hold record (id, target, reason), ordered by id: what the planner and purge check. */
export async function activeHolds(): Promise<ActiveHoldRef[]> {
  const snap = await holdsCol().where("state", "==", "ACTIVE").select("holdId", "targetPath", "reasonCode").orderBy(FieldPath.documentId()).get();
  return snap.docs.map((d) => ({ holdId: d.id, targetPath: String(d.get("targetPath")), reasonCode: String(d.get("reasonCode")) }));
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
    for (const d of snap.docs) out.push({ holdId: d.id, targetPath: String(d.get("targetPath")), reasonCode: String(d.get("reasonCode")) });
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
 * A document hold is one transaction: record, document flags, fence and evidence. A subtree hold writes its
 * record, the fence and its evidence first: from that commit the record protects the whole subtree by path
 * prefix, and every later delete under it is refused. The flags (legalHold, TTL cleared) are then set in
 * resumable batches by `applyHoldFlags`, here or in the background (`apply`).
 * Idempotent: the same placer placing the same reason on the same target (same releaseAfter) while that
 * hold is active gets the existing hold back, and an unfinished flagging is resumed.
 */
export async function placeHold(input: PlaceHoldInput, apply: ApplyHold = applyHoldNow): Promise<{ holdId: string }> {
  const pol = policy();
  requireHoldReason(pol, input.reasonCode);
  const target = classifyHoldTarget(input.targetPath);
  if (target.targetType === "document") {
    const cls = holdClassForPath(pol, input.targetPath);
    if (!cls) throw new DomainError("invalid-argument", "NOT_GOVERNED_PATH", "targetPath is not in a governed collection.");
    assertHoldableClass(cls);
    return placeDocumentHold(input);
  }
  return placeSubtreeHold(input, target.tenantId ?? "", apply);
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

async function placeDocumentHold(input: PlaceHoldInput): Promise<{ holdId: string }> {
  const ref = db().doc(input.targetPath);
  const holdRef = holdsCol().doc();
  const result = await db().runTransaction(async (tx) => {
    const same = await findSameActiveHold(tx, input);
    if (same) return { holdId: same.id, created: false };
    const [snap, fence, evidence] = await Promise.all([tx.get(ref), readFenceInTx(tx), openEvidence(tx, holdRef.id)]);
    if (!snap.exists) throw notFound("TARGET_NOT_FOUND", "No document at targetPath.");
    const g = readGovernedStrict(snap.data());
    if (!g) throw new DomainError("failed-precondition", "UNKNOWN_POLICY", "The target document carries no valid retention fields.");
    const digest = new PathDigest();
    digest.add(ref.path);
    const record = newRecord(input, holdRef.id, "document", g.tenantId, 1);
    tx.update(ref, governedToFirestore(applyHold(g, holdRef.id)));
    tx.create(holdRef, holdRecordData(record, digest.hex(), true));
    const generation = advanceFenceInTx(tx, fence, input.nowMs, { holdId: holdRef.id, change: "PLACED" });
    evidence.append(holdEvidence("HOLD_PLACED", record, input.actor, input.nowMs, { counts: { affected: 1 }, pathsHash: digest.hex(), paths: [ref.path], fenceGeneration: generation }));
    return { holdId: holdRef.id, created: true };
  }, EVIDENCE_TX);
  if (result.created) log.info("hold.placed", { holdId: result.holdId, targetType: "document", affected: 1 });
  return { holdId: result.holdId };
}

async function placeSubtreeHold(input: PlaceHoldInput, tenantId: string, apply: ApplyHold): Promise<{ holdId: string }> {
  const root = await db().doc(input.targetPath).get();
  if (!root.exists) throw notFound("TARGET_NOT_FOUND", "No tenant document at targetPath.");
  const holdRef = holdsCol().doc();
  const placed = await db().runTransaction(async (tx) => {
    const same = await findSameActiveHold(tx, input);
    if (same) return { holdId: same.id, applied: same.get("applied") === true, created: false };
    const [fence, evidence] = await Promise.all([readFenceInTx(tx), openEvidence(tx, holdRef.id)]);
    const record = newRecord(input, holdRef.id, "subtree", tenantId, 0);
    tx.create(holdRef, { ...holdRecordData(record, null, false), flagging: initialFlagging(input.nowMs) });
    const generation = advanceFenceInTx(tx, fence, input.nowMs, { holdId: holdRef.id, change: "PLACED" });
    // The paths are not listed here (a tenant may hold millions of documents): the record covers them all by
    // prefix from this commit, and HOLD_APPLIED records their count and digest once they are flagged.
    evidence.append(holdEvidence("HOLD_PLACED", record, input.actor, input.nowMs, { counts: {}, pathsHash: null, paths: [record.targetPath], fenceGeneration: generation }));
    return { holdId: holdRef.id, applied: false, created: true };
  }, EVIDENCE_TX);
  if (placed.created) log.info("hold.placed", { holdId: placed.holdId, targetType: "subtree" });
  if (!placed.applied) await apply(placed.holdId);
  return { holdId: placed.holdId };
}

/** A subtree hold whose flagging made no progress for this long is taken up again by the nightly run. */
export const HOLD_APPLY_STALLED_MS = 10 * 60_000;

/**
 * Hands every subtree hold whose flagging has stalled (no progress for HOLD_APPLY_STALLED_MS: a lost task, a
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

/** Documents listed (and, where holdable, flagged) per transaction while a subtree hold is applied. */
export const HOLD_APPLY_BATCH = 200;

/** The progress of a subtree hold's flagging, kept on its record so any worker can resume it. */
interface Flagging {
  /** The last document name listed (flagged or skipped); null before the first batch. */
  cursor: string | null;
  flagged: number;
  vanished: number;
  /** A chained SHA-256 over the flagged paths, batch by batch (the hold's `pathsHash` when done). */
  digest: string;
}

const initialFlagging = (nowMs: number) => ({ cursor: null, flagged: 0, vanished: 0, digest: sha256Hex(""), updatedAt: toTimestamp(nowMs) });

function flaggingOf(snap: DocumentSnapshot): Flagging {
  const f = (snap.get("flagging") as Partial<Flagging> | undefined) ?? {};
  return {
    cursor: typeof f.cursor === "string" ? f.cursor : null,
    flagged: typeof f.flagged === "number" ? f.flagged : 0,
    vanished: typeof f.vanished === "number" ? f.vanished : 0,
    digest: typeof f.digest === "string" ? f.digest : sha256Hex(""),
  };
}

/**
 * The next documents of a subtree after `cursor`, in name order: the root itself first, then every
 * descendant at any depth (one kindless query, names only). Returns every name listed, holdable or not, so
 * the cursor moves past documents a hold does not flag (ungoverned, or of a class that denies holds).
 */
async function nextSubtreeNames(rootPath: string, cursor: string | null, limit: number): Promise<string[]> {
  const names: string[] = [];
  if (cursor === null && (await db().doc(rootPath).get()).exists) names.push(rootPath);
  let q = descendantsQuery(rootPath).select(FieldPath.documentId());
  if (cursor !== null && cursor !== rootPath) q = q.where(FieldPath.documentId(), ">", db().doc(cursor));
  const snap = await q.limit(limit - names.length).get();
  names.push(...snap.docs.map((d) => d.ref.path));
  return names;
}

export type HoldApplyResult = "APPLIED" | "CONTINUE" | "STOPPED";

/** Where a subtree hold's flagging stands (the last document name it listed). */
export async function holdFlaggingCursor(holdId: string): Promise<string | null> {
  return flaggingOf(await holdsCol().doc(holdId).get()).cursor;
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
 * Sets a subtree hold's flags on every holdable document under its target, a batch per transaction. Each
 * transaction re-reads the record (still ACTIVE, not being released, cursor where this worker left it: two
 * workers cannot both move it) and the batch's documents, flags them, and moves the cursor with a digest of
 * what it flagged. A document the listing saw but the transaction finds gone disappeared while it was under
 * the hold: it is recorded as HOLD_TARGET_VANISHED incident evidence and logged at ERROR, never skipped
 * silently. The last batch marks the record applied with HOLD_APPLIED evidence (count and digest).
 */
export async function applyHoldFlags(holdId: string, opts: HoldApplyOptions = {}): Promise<HoldApplyResult> {
  const batchSize = opts.batchSize ?? HOLD_APPLY_BATCH;
  const clock = opts.clock ?? Date.now;
  const deadline = clock() + (opts.budgetMs ?? Number.POSITIVE_INFINITY);
  const holdRef = holdsCol().doc(holdId);
  const pol = policy();
  const holdable = (path: string) => pol.classForPath(path)?.holdBehaviour === "allow";
  for (;;) {
    const snap = await holdRef.get();
    if (!snap.exists) throw notFound("HOLD_NOT_FOUND", "No such hold.");
    if (snap.get("state") !== "ACTIVE" || snap.get("releasing") === true) return "STOPPED";
    if (snap.get("applied") === true) return "APPLIED";
    const hold = holdFromFirestore(snap);
    const from = flaggingOf(snap);
    const names = await nextSubtreeNames(hold.targetPath, from.cursor, batchSize);
    await opts.afterList?.(names);
    const last = names.length < batchSize;
    const wanted = names.filter(holdable);
    const outcome = await db().runTransaction(async (tx) => {
      const fresh = await tx.get(holdRef);
      if (fresh.get("state") !== "ACTIVE" || fresh.get("releasing") === true || fresh.get("applied") === true) return "moved" as const;
      if (flaggingOf(fresh).cursor !== from.cursor) return "moved" as const;
      const snaps = wanted.length > 0 ? await tx.getAll(...wanted.map((p) => db().doc(p))) : [];
      const vanished = snaps.filter((s) => !s.exists).map((s) => s.ref.path);
      const evidence = vanished.length > 0 || last ? await openEvidence(tx, holdId) : null;
      const flagged: string[] = [];
      for (const s of snaps) {
        const g = s.exists ? readGovernedStrict(s.data()) : null;
        if (!g) continue;
        tx.update(s.ref, governedToFirestore(applyHold(g, holdId)));
        flagged.push(s.ref.path);
      }
      const next: Flagging = {
        cursor: names.length > 0 ? names[names.length - 1]! : from.cursor,
        flagged: from.flagged + flagged.length,
        vanished: from.vanished + vanished.length,
        digest: flagged.length > 0 ? sha256Hex(`${from.digest}\n${flagged.join("\n")}`) : from.digest,
      };
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
        tx.update(holdRef, { flagging: { ...next, updatedAt: toTimestamp(nowMs) }, applied: true, affected: next.flagged, pathsHash: next.digest });
        evidence!.append(holdEvidence("HOLD_APPLIED", { ...hold, affected: next.flagged }, { type: "system", id: "applyRetentionHold" }, nowMs, { counts: { affected: next.flagged, vanished: next.vanished }, pathsHash: next.digest }));
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

async function forEachBatch(paths: AsyncIterable<string>, fn: (batch: string[]) => Promise<void>): Promise<void> {
  let batch: string[] = [];
  for await (const p of paths) {
    batch.push(p);
    if (batch.length >= HOLD_BATCH) {
      await fn(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await fn(batch);
}

function holdEvidence(
  action: "HOLD_PLACED" | "HOLD_APPLIED" | "HOLD_TARGET_VANISHED" | "HOLD_RELEASED",
  record: HoldRecord,
  actor: Actor,
  nowMs: number,
  o: { counts: Record<string, number>; pathsHash: string | null; paths?: string[]; fenceGeneration?: number; releaseReasonHash?: string; reason?: string },
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
 * Releases a hold: the two-person rule and releaseAfter are checked before anything is written, and again
 * in the final transaction. Each document carrying the hold id gets `releaseHold()` (retention restored from
 * policy as of now, pre-hold state back; other holds keep it held). The record becomes RELEASED last, with
 * its evidence, so an interrupted release leaves the record ACTIVE (still protecting everything under it)
 * and a retried release completes it.
 */
export async function releaseHoldById(input: ReleaseHoldInput): Promise<{ holdId: string; released: number }> {
  const pol = policy();
  const holdRef = holdsCol().doc(input.holdId);
  const snap = await holdRef.get();
  if (!snap.exists) throw notFound("HOLD_NOT_FOUND", "No such hold.");
  const hold = holdFromFirestore(snap);
  assertReleaseAllowed(hold, pol.holdReason(hold.reasonCode), input.actor.id, input.nowMs);

  const digest = new PathDigest();
  let released = 0;
  const restore = async (tx: Transaction, paths: string[]) => {
    const refs = paths.map((p) => db().doc(p));
    const snaps = refs.length > 0 ? await tx.getAll(...refs) : [];
    const parents = await parentExpiries(tx, snaps);
    return snaps.flatMap((s) => {
      const g = readGovernedStrict(s.data());
      const cls = g ? pol.classById(g.retentionClass) : undefined;
      if (!g || !cls || !g.holdIds.includes(hold.holdId)) return [];
      const released = releaseHold(g, hold.holdId, cls, { parentExpireAtMs: parents.get(s.ref.path) ?? null });
      const next = isArchivePath(s.ref.path) ? archiveAfterRelease(released, cls) : released;
      return [{ ref: s.ref, next }];
    });
  };

  if (hold.targetType === "subtree") {
    if (snap.get("applied") !== true) {
      // Flagging may still be running: stop it first, so it cannot flag documents behind the restore. The
      // record stays ACTIVE (still protecting) until the last transaction below.
      await db().runTransaction(async (tx) => {
        const fresh = holdFromFirestore(await tx.get(holdRef));
        assertReleaseAllowed(fresh, pol.holdReason(fresh.reasonCode), input.actor.id, input.nowMs);
        tx.update(holdRef, { releasing: true });
      }, EVIDENCE_TX);
    }
    await forEachBatch(carriersOf(hold.targetPath, hold.holdId), async (paths) => {
      const n = await db().runTransaction(async (tx) => {
        const changes = await restore(tx, paths);
        for (const c of changes) tx.update(c.ref, governedToFirestore(c.next));
        return changes.map((c) => c.ref.path);
      }, EVIDENCE_TX);
      for (const p of n) digest.add(p);
      released += n.length;
    });
  }
  const reasonHash = hashCanonical({ releaseReason: input.reason });
  const finalPaths = hold.targetType === "document" ? [hold.targetPath] : [];
  const total = await db().runTransaction(async (tx) => {
    const fresh = await tx.get(holdRef);
    const current = holdFromFirestore(fresh);
    assertReleaseAllowed(current, pol.holdReason(current.reasonCode), input.actor.id, input.nowMs);
    const changes = await restore(tx, finalPaths);
    const [fence, evidence] = await Promise.all([readFenceInTx(tx), openEvidence(tx, hold.holdId)]);
    for (const c of changes) tx.update(c.ref, governedToFirestore(c.next));
    const txDigest = new PathDigest();
    for (const c of changes) txDigest.add(c.ref.path);
    const count = released + changes.length;
    const pathsHash = hold.targetType === "document" ? txDigest.hex() : digest.hex();
    tx.update(holdRef, {
      state: "RELEASED",
      releasedBy: input.actor.id,
      releasedAt: toTimestamp(input.nowMs),
      releaseReason: input.reason,
      releasedCount: count,
      releasedPathsHash: pathsHash,
      releasing: FieldValue.delete(),
    });
    // The set of active holds changes: cached hold sets of running purges are invalidated, and requests
    // retained under a hold are planned again by the next run.
    const generation = advanceFenceInTx(tx, fence, input.nowMs, { holdId: hold.holdId, change: "RELEASED" });
    evidence.append(
      holdEvidence("HOLD_RELEASED", current, input.actor, input.nowMs, { counts: { released: count }, pathsHash, fenceGeneration: generation, releaseReasonHash: reasonHash }),
    );
    return count;
  }, EVIDENCE_TX);
  log.info("hold.released", { holdId: hold.holdId, released: total });
  return { holdId: hold.holdId, released: total };
}

/** The root and descendants that still carry the hold id (documents created later never did). */
async function* carriersOf(rootPath: string, holdId: string): AsyncGenerator<string> {
  const root = await db().doc(rootPath).get();
  if (root.exists && carries(root.get("holdIds"), holdId)) yield rootPath;
  for await (const d of streamGovernedDescendants(rootPath)) if (carries(d.get("holdIds"), holdId)) yield d.ref.path;
}

const carries = (ids: unknown, holdId: string) => Array.isArray(ids) && ids.includes(holdId);

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

