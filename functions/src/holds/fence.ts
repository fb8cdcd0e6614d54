import type { DocumentReference, DocumentSnapshot, Transaction } from "firebase-admin/firestore";
import { letGoOfWalk, type ActiveHoldRef, type HoldLetGo } from "../kernel/held";
import type { DeleteWindow } from "../kernel/delete-window";
import { COLLECTIONS, db } from "../platform/firestore";
import { toTimestamp } from "../platform/governed-doc";

/**
 * The hold fence (docs/HOLD-FENCE.md): one document, `retentionJobs/hold-fence`, whose `generation` moves in
 * the same transaction as every change to the set of active holds (a placement or a release). Every
 * transaction that destroys governed data (a purge batch's deletes, a mask, a TTL trigger's child deletes, a
 * backfill's orphan deletes) reads it and decides on the hold records of that same generation. Firestore
 * serialises a transaction that read the fence against one that writes it, so a destructive transaction
 * either commits before a hold is placed (the data was gone before the hold existed) or sees the new
 * generation and decides again with the new hold in view. It is written only when a person places or
 * releases a hold, so it is never a write hotspot; reading it costs one document read per transaction.
 */
export const HOLD_FENCE_DOC = "hold-fence";

export const holdFenceRef = (): DocumentReference => db().collection(COLLECTIONS.retentionJobs).doc(HOLD_FENCE_DOC);

/** The current fence generation, read inside the caller's transaction (0 before the first hold). */
export async function readFenceInTx(tx: Transaction): Promise<number> {
  return fenceGenerationOf(await tx.get(holdFenceRef()));
}

/** The generation a read of the fence document holds (0 before the first hold). */
export function fenceGenerationOf(snap: DocumentSnapshot): number {
  const g = snap.get("generation") as unknown;
  return typeof g === "number" ? g : 0;
}

/** The current fence generation, outside a transaction (a hint for scheduling, never for a decision). */
export async function readFence(): Promise<number> {
  const g = (await holdFenceRef().get()).get("generation") as unknown;
  return typeof g === "number" ? g : 0;
}

/**
 * Moves the fence on in the caller's transaction, which must have read it with `readFenceInTx` (`current`).
 * Returns the new generation, which the hold's evidence records.
 */
export function advanceFenceInTx(tx: Transaction, current: number, nowMs: number, cause: { holdId: string; change: "PLACED" | "RELEASING" | "RELEASED" }): number {
  const next = current + 1;
  tx.set(holdFenceRef(), { generation: next, changedAt: toTimestamp(nowMs), lastChange: cause });
  return next;
}

/** How far a hold's release has let go of what it covers (null: not being released). */
export function letGoOf(record: DocumentSnapshot): HoldLetGo | null {
  return letGoOfWalk(record.get("releasing"), record.get("unflagging"));
}

/** An active hold record as the rules see it. */
export const holdRefOf = (d: DocumentSnapshot): ActiveHoldRef => ({
  holdId: d.id,
  targetPath: String(d.get("targetPath")),
  reasonCode: String(d.get("reasonCode")),
  letGo: letGoOf(d),
});

/** Active hold records read inside a transaction, ordered by id (every active hold: the purge's re-check). */
export async function activeHoldsInTx(tx: Transaction): Promise<ActiveHoldRef[]> {
  const snap = await tx.get(db().collection(COLLECTIONS.retentionHolds).where("state", "==", "ACTIVE"));
  return snap.docs.map(holdRefOf).sort((a, b) => (a.holdId < b.holdId ? -1 : a.holdId > b.holdId ? 1 : 0));
}

/**
 * Which of `holdIds` name a hold record that is ACTIVE, read inside the caller's transaction (one read per id).
 * A record being released (`releasing`) is still ACTIVE: it protects until its release's last transaction,
 * which is also the one that moves the fence.
 */
export async function activeAmongInTx(tx: Transaction, holdIds: readonly string[]): Promise<Set<string>> {
  const ids = [...new Set(holdIds)];
  if (ids.length === 0) return new Set();
  const col = db().collection(COLLECTIONS.retentionHolds);
  const snaps = await tx.getAll(...ids.map((id) => col.doc(id)));
  return new Set(snaps.filter((s) => s.exists && s.get("state") === "ACTIVE").map((s) => s.id));
}

/** The active holds as of one fence generation. */
export interface HoldSnapshot {
  generation: number;
  holds: readonly ActiveHoldRef[];
}

/**
 * The active holds seen through the fence, for one invocation. Each call reads the fence generation in the
 * caller's transaction; the hold records are read again only when the generation moved since the last call
 * (every placement and release moves it), so a batch pays one read for its hold check while nothing changes.
 */
export class HoldView {
  private cached: HoldSnapshot | null = null;

  async inTx(tx: Transaction): Promise<HoldSnapshot> {
    return this.atGeneration(tx, await readFenceInTx(tx));
  }

  /** `inTx` for a transaction that already read the fence (`holdFenceRef()`) among its other reads. */
  async atGeneration(tx: Transaction, generation: number): Promise<HoldSnapshot> {
    if (this.cached?.generation === generation) return this.cached;
    const holds = await activeHoldsInTx(tx);
    this.cached = { generation, holds };
    return this.cached;
  }
}

/**
 * The open delete windows of object batches (kernel/delete-window.ts, docs/HOLD-FENCE.md): one document per batch
 * whose deletes may be under way, removed when the batch records its outcome. A hold placement reads the ones it
 * covers in its transaction; only an app whose data map names Cloud Storage objects ever has one.
 */
export const deleteWindowsCol = () => db().collection(COLLECTIONS.retentionJobs).doc("storage-windows").collection("open");
export const deleteWindowRef = (id: string): DocumentReference => deleteWindowsCol().doc(id);

export function windowFrom(snap: DocumentSnapshot): (DeleteWindow & { id: string }) | null {
  const d = snap.data();
  if (!d || typeof d.token !== "string" || typeof d.deleteByMs !== "number") return null;
  return {
    id: snap.id,
    token: d.token,
    unitKey: String(d.unitKey ?? ""),
    batch: String(d.batch ?? ""),
    covers: Array.isArray(d.covers) ? (d.covers as unknown[]).map(String) : [],
    decidedGeneration: typeof d.decidedGeneration === "number" ? d.decidedGeneration : -1,
    openedAtMs: typeof d.openedAtMs === "number" ? d.openedAtMs : 0,
    deleteByMs: d.deleteByMs,
    objects: typeof d.objects === "number" ? d.objects : 0,
  };
}

/**
 * The delete windows whose objects a hold on `target` would cover, read in the placement's transaction: one
 * equality query on `covers` (each window lists its objects' heldWith documents and their ancestors). Firestore
 * serialises it against a window's opening, which reads the fence the placement writes: a window opened before the
 * placement is in the answer, one opened after it saw the hold (docs/HOLD-FENCE.md).
 */
export async function windowsCoveringInTx(tx: Transaction, target: string): Promise<(DeleteWindow & { id: string })[]> {
  const snap = await tx.get(deleteWindowsCol().where("covers", "array-contains", target));
  return snap.docs.map(windowFrom).filter((w): w is DeleteWindow & { id: string } => w !== null);
}
