import { coveringHold, type ActiveHoldRef } from "./held";
import { coverTargets } from "./storage-map";

/**
 * The delete window, pure (docs/HOLD-FENCE.md, "Cloud Storage objects: the delete window"). An object delete cannot
 * join a Firestore transaction, so the purge decides an object batch in a transaction that reads the hold fence and
 * opens a window in the same commit: a control document naming the documents the batch's objects are held with and
 * a deadline, `deleteByMs`. Deletes go out only while the window has more than a margin left; a hold placement that
 * covers an open window waits until it is closed or past its deadline before it records HOLD_PLACED.
 */

/** A window as stored (`retentionJobs/storage-windows/open/{id}`) and as a placement reads it. */
export interface DeleteWindow {
  /** Changes with every opening: a placement waits for this opening, not a later one of the same batch. */
  token: string;
  unitKey: string;
  /** The batch record's id. */
  batch: string;
  /** The heldWith documents of the objects it may delete, and every ancestor of them: the hold targets that cover it. */
  covers: string[];
  /** The fence generation its decision read. */
  decidedGeneration: number;
  openedAtMs: number;
  /** No delete of the window may be under way at or after this moment (the runner's wall clock). */
  deleteByMs: number;
  /** How many objects it may delete. */
  objects: number;
}

/** One object of a batch as the window's decision sees it. */
export interface WindowItem {
  path: string;
  generation: string;
  heldWith: string;
}

export type WindowDecision = { path: string; verdict: "delete" } | { path: string; verdict: "held"; holdId: string; reasonCode: string };

/**
 * The decision about one object in the transaction that opens the window: held when an active hold record covers
 * its heldWith document (on it or an ancestor, as a hold on the document covers the document's own subtree), else
 * deleted if it is still the generation decided on (the delete itself checks that, and a hold marker on the object).
 */
export function decideObject(item: WindowItem, holds: readonly ActiveHoldRef[]): WindowDecision {
  const hold = coveringHold(item.heldWith, holds);
  return hold ? { path: item.path, verdict: "held", holdId: hold.holdId, reasonCode: hold.reasonCode } : { path: item.path, verdict: "delete" };
}

/** The window a decision opens for the objects it will delete. */
export function openWindow(a: { token: string; unitKey: string; batch: string; decidedGeneration: number; nowMs: number; windowMs: number; toDelete: readonly WindowItem[] }): DeleteWindow {
  if (!(a.windowMs > 0)) throw new Error(`a delete window needs a positive length, got ${a.windowMs}`);
  return {
    token: a.token,
    unitKey: a.unitKey,
    batch: a.batch,
    covers: coverTargets(a.toDelete.map((i) => i.heldWith)),
    decidedGeneration: a.decidedGeneration,
    openedAtMs: a.nowMs,
    deleteByMs: a.nowMs + a.windowMs,
    objects: a.toDelete.length,
  };
}

/**
 * Whether a delete may still start: the window must have more than `marginMs` left, the margin being at least the
 * delete request's timeout (plus the allowance for the clocks), so every delete is over before the window ends.
 */
export const mayStartDelete = (nowMs: number, deleteByMs: number, marginMs: number): boolean => nowMs < deleteByMs - marginMs;

/** Whether a window still keeps a covering hold's HOLD_PLACED waiting: it exists, is this opening, and its deadline is ahead. */
export const windowStillOpen = (w: Pick<DeleteWindow, "token" | "deleteByMs"> | null, token: string, nowMs: number): boolean =>
  w !== null && w.token === token && w.deleteByMs > nowMs;

/**
 * What a placement on `target` must wait for, among the windows its transaction found covering it: those whose
 * deadline is still ahead. An expired window is not waited on (its deletes were over by its deadline) but is named
 * in the placement's evidence with the others, so the ledger shows which windows the hold was ordered against.
 */
export function placementWaits(target: string, windows: readonly (Pick<DeleteWindow, "covers" | "deleteByMs"> & { id: string; token: string })[], nowMs: number): { seen: string[]; waitFor: { id: string; token: string; deleteByMs: number }[] } {
  const covering = windows.filter((w) => w.covers.includes(target));
  return {
    seen: covering.map((w) => w.id).sort(),
    waitFor: covering.filter((w) => w.deleteByMs > nowMs).map((w) => ({ id: w.id, token: w.token, deleteByMs: w.deleteByMs })),
  };
}
