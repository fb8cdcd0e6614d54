import { FieldPath, type DocumentReference, type DocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import type { ActiveHoldRef } from "../domain/destroy-predicate";
import { notFound, DomainError } from "../domain/errors";
import type { Actor } from "../domain/evidence";
import { hashCanonical } from "../domain/canonical";
import { archiveAfterRelease, isArchivePath } from "../domain/archive";
import {
  assertHoldableClass,
  holdClassForPath,
  assertReleaseAllowed,
  classifyHoldTarget,
  PathDigest,
  requireHoldReason,
  type HoldRecord,
  type HoldTargetType,
} from "../domain/holds";
import { segments } from "../domain/paths";
import { applyHold, releaseHold } from "../domain/retention";
import { openEvidence } from "./evidence-store";
import { COLLECTIONS, db } from "./firestore";
import { governedToFirestore, readGovernedStrict, toMs, toTimestamp } from "./governed-doc";
import { streamDescendants } from "./discovery";
import { log } from "./logs";
import { policy } from "./registry";

/** Documents changed per transaction when a hold is applied to or released from a subtree. */
const HOLD_BATCH = 200;
/** Writers contend on the evidence-chain head; give the transaction room to retry under load. */
export const TX_OPTIONS = { maxAttempts: 30 } as const;

const holdsCol = () => db().collection(COLLECTIONS.retentionHolds);

/** Every active hold record (id, target, reason), ordered by id: what the planner and purge check. */
export async function activeHolds(): Promise<ActiveHoldRef[]> {
  const snap = await holdsCol().where("state", "==", "ACTIVE").select("holdId", "targetPath", "reasonCode").orderBy(FieldPath.documentId()).get();
  return snap.docs.map((d) => ({ holdId: d.id, targetPath: String(d.get("targetPath")), reasonCode: String(d.get("reasonCode")) }));
}

/** The document itself and each ancestor document: the targets whose hold would cover it. */
export function coveringTargets(path: string): string[] {
  const s = segments(path);
  const out: string[] = [];
  for (let n = s.length; n >= 2; n -= 2) out.push(s.slice(0, n).join("/"));
  return out;
}

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
 * Places a hold. Validation happens before anything is written (unknown reason code, bad or ungoverned
 * path, a class that denies holds, a missing target). A document hold is one transaction: record, document
 * and evidence. A subtree hold creates its record first, in the same transaction as its evidence (counts
 * and a hash of the paths it will flag): from that moment the record protects the whole subtree by path
 * prefix, then the documents are flagged in batches.
 * Idempotent: the same placer placing the same reason on the same target (same releaseAfter) while that
 * hold is active gets the existing hold back, and an interrupted subtree placement is completed.
 */
export async function placeHold(input: PlaceHoldInput): Promise<{ holdId: string; affected: number }> {
  const pol = policy();
  requireHoldReason(pol, input.reasonCode);
  const target = classifyHoldTarget(input.targetPath);
  if (target.targetType === "document") {
    const cls = holdClassForPath(pol, input.targetPath);
    if (!cls) throw new DomainError("invalid-argument", "NOT_GOVERNED_PATH", "targetPath is not in a governed collection.");
    assertHoldableClass(cls);
    return placeDocumentHold(input);
  }
  return placeSubtreeHold(input, target.tenantId ?? "");
}

function holdRecordData(r: HoldRecord, pathsHash: string, applied: boolean): Record<string, unknown> {
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
    pathsHash,
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
  return snap.docs.find((d) => (toMs(d.get("releaseAfter")) ?? null) === input.releaseAfterMs);
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

async function placeDocumentHold(input: PlaceHoldInput): Promise<{ holdId: string; affected: number }> {
  const ref = db().doc(input.targetPath);
  const holdRef = holdsCol().doc();
  const result = await db().runTransaction(async (tx) => {
    const same = await findSameActiveHold(tx, input);
    if (same) return { holdId: same.id, affected: Number(same.get("affected") ?? 0), created: false };
    const snap = await tx.get(ref);
    if (!snap.exists) throw notFound("TARGET_NOT_FOUND", "No document at targetPath.");
    const g = readGovernedStrict(snap.data());
    if (!g) throw new DomainError("failed-precondition", "UNKNOWN_POLICY", "The target document carries no valid retention fields.");
    const evidence = await openEvidence(tx);
    const digest = new PathDigest();
    digest.add(ref.path);
    const record = newRecord(input, holdRef.id, "document", g.tenantId, 1);
    tx.update(ref, governedToFirestore(applyHold(g, holdRef.id)));
    tx.create(holdRef, holdRecordData(record, digest.hex(), true));
    evidence.append(holdEvidence("HOLD_PLACED", record, input.actor, input.nowMs, { affected: 1 }, digest.hex(), [ref.path]));
    return { holdId: holdRef.id, affected: 1, created: true };
  }, TX_OPTIONS);
  if (result.created) log.info("hold.placed", { holdId: result.holdId, targetType: "document", affected: 1 });
  return { holdId: result.holdId, affected: result.affected };
}

/** The governed, holdable documents of a subtree: the root and every descendant. Ungoverned ones are skipped. */
async function* holdablePaths(rootPath: string): AsyncGenerator<string> {
  const pol = policy();
  const holdable = (path: string) => pol.classForPath(path)?.holdBehaviour === "allow";
  const root = await db().doc(rootPath).get();
  if (root.exists && holdable(rootPath)) yield rootPath;
  for await (const d of streamDescendants(rootPath)) if (holdable(d.ref.path)) yield d.ref.path;
}

async function placeSubtreeHold(input: PlaceHoldInput, tenantId: string): Promise<{ holdId: string; affected: number }> {
  const root = await db().doc(input.targetPath).get();
  if (!root.exists) throw notFound("TARGET_NOT_FOUND", "No tenant document at targetPath.");
  // The paths to flag are listed (read-only) before the record exists, so the evidence can name them.
  const digest = new PathDigest();
  for await (const p of holdablePaths(input.targetPath)) digest.add(p);
  const holdRef = holdsCol().doc();
  const placed = await db().runTransaction(async (tx) => {
    const same = await findSameActiveHold(tx, input);
    if (same) return { holdId: same.id, affected: Number(same.get("affected") ?? 0), applied: same.get("applied") === true, created: false };
    const evidence = await openEvidence(tx);
    const record = newRecord(input, holdRef.id, "subtree", tenantId, digest.count);
    tx.create(holdRef, holdRecordData(record, digest.hex(), false));
    evidence.append(holdEvidence("HOLD_PLACED", record, input.actor, input.nowMs, { affected: digest.count }, digest.hex()));
    return { holdId: holdRef.id, affected: digest.count, applied: false, created: true };
  }, TX_OPTIONS);
  if (!placed.applied) {
    await forEachBatch(holdablePaths(input.targetPath), async (paths) => {
      await db().runTransaction(async (tx) => {
        const snaps = await tx.getAll(...paths.map((p) => db().doc(p)));
        for (const s of snaps) {
          const g = readGovernedStrict(s.data());
          if (g) tx.update(s.ref, governedToFirestore(applyHold(g, placed.holdId)));
        }
      }, TX_OPTIONS);
    });
    await holdsCol().doc(placed.holdId).update({ applied: true });
  }
  if (placed.created) log.info("hold.placed", { holdId: placed.holdId, targetType: "subtree", affected: placed.affected });
  return { holdId: placed.holdId, affected: placed.affected };
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
  action: "HOLD_PLACED" | "HOLD_RELEASED",
  record: HoldRecord,
  actor: Actor,
  nowMs: number,
  counts: Record<string, number>,
  pathsHash: string,
  paths?: string[],
  releaseReasonHash?: string,
) {
  return {
    action,
    actor,
    decision: { reason: record.reasonCode, targetType: record.targetType },
    policyVersion: policy().version,
    atMs: nowMs,
    holdId: record.holdId,
    paths: paths ?? [record.targetPath],
    counts,
    detail: { pathsHash, tenantId: record.tenantId, ...(releaseReasonHash ? { releaseReasonHash } : {}) },
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
    await forEachBatch(carriersOf(hold.targetPath, hold.holdId), async (paths) => {
      const n = await db().runTransaction(async (tx) => {
        const changes = await restore(tx, paths);
        for (const c of changes) tx.update(c.ref, governedToFirestore(c.next));
        return changes.map((c) => c.ref.path);
      }, TX_OPTIONS);
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
    const evidence = await openEvidence(tx);
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
    });
    evidence.append(holdEvidence("HOLD_RELEASED", current, input.actor, input.nowMs, { released: count }, pathsHash, undefined, reasonHash));
    return count;
  }, TX_OPTIONS);
  log.info("hold.released", { holdId: hold.holdId, released: total });
  return { holdId: hold.holdId, released: total };
}

/** The root and descendants that still carry the hold id (documents created later never did). */
async function* carriersOf(rootPath: string, holdId: string): AsyncGenerator<string> {
  const root = await db().doc(rootPath).get();
  if (root.exists && carries(root.get("holdIds"), holdId)) yield rootPath;
  for await (const d of streamDescendants(rootPath)) if (carries(d.get("holdIds"), holdId)) yield d.ref.path;
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

