import { isSameOrUnder } from "./paths";

/**
 * "Held", defined once for every path that destroys, masks or moves data: the purge, the planner, the TTL
 * trigger, the backfill, the audit, soft deletes and lifecycle moves all ask here.
 */

/** An active hold record as the rules see it: a hold covers its target and everything under it. */
export interface ActiveHoldRef {
  holdId: string;
  targetPath: string;
  reasonCode: string;
  /**
   * Set while the hold is being released: how far its release has let go of what it covers (holds/service.ts,
   * docs/HOLD-FENCE.md). The record still covers everything by path until the release's last transaction.
   */
  letGo?: HoldLetGo | null;
}

/** A release's progress: the documents under the target in name order up to `cursor`, then the rest ("archives": past every document). */
export interface HoldLetGo {
  phase: "documents" | "archives";
  /** The last name the phase has dealt with; null before its first batch. */
  cursor: string | null;
}

/**
 * The phases of a hold's walk (flagging or release), in order: the documents under the target, the archive copies,
 * the Cloud Storage objects when the data map names any, then done.
 */
export type WalkPhase = "documents" | "archives" | "objects" | "done";

/** A walk's phase as its record stores it; a record without a known phase is at the documents. */
export function walkPhaseOf(raw: unknown): WalkPhase {
  return raw === "archives" || raw === "objects" || raw === "done" ? raw : "documents";
}

/**
 * A release's progress as its hold record states it (`releasing`, and the `unflagging` walk), or null when the hold
 * is not being released. Every phase after the documents has passed all of them.
 */
export function letGoOfWalk(releasing: unknown, unflagging: unknown): HoldLetGo | null {
  if (releasing !== true) return null;
  const u = (typeof unflagging === "object" && unflagging !== null ? unflagging : {}) as { phase?: unknown; cursor?: unknown };
  return { phase: walkPhaseOf(u.phase) === "documents" ? "documents" : "archives", cursor: typeof u.cursor === "string" ? u.cursor : null };
}

/** The first active hold record covering `path` (on the path itself or an ancestor), if any. */
export function coveringHold(path: string, holds: readonly ActiveHoldRef[]): ActiveHoldRef | undefined {
  return holds.find((h) => isSameOrUnder(path, h.targetPath));
}

/** The marks a hold leaves on a document. */
export interface HoldMarks {
  path: string;
  legalHold: boolean;
  lifecycleState: string | null;
  holdIds?: readonly string[];
}

/**
 * The one definition of "held". A document is held when an active hold record covers it (on the document or
 * any ancestor, so a subtree hold covers documents created after it, and before its flags are set), or when
 * it carries a hold's marks (the `legalHold` flag, the LEGAL_HOLD state, or hold ids). Returns the hold that
 * stops it: a covering record first (its id and reason), else the marks (reason LEGAL_HOLD).
 */
export function heldBy(doc: HoldMarks, holds: readonly ActiveHoldRef[]): { holdId: string | null; reasonCode: string } | null {
  const record = coveringHold(doc.path, holds);
  if (record) return { holdId: record.holdId, reasonCode: record.reasonCode };
  const ids = doc.holdIds ?? [];
  if (doc.legalHold || doc.lifecycleState === "LEGAL_HOLD" || ids.length > 0) return { holdId: ids[0] ?? null, reasonCode: "LEGAL_HOLD" };
  return null;
}

/** Whether a document is held (see `heldBy`). */
export const isHeld = (doc: HoldMarks, holds: readonly ActiveHoldRef[]): boolean => heldBy(doc, holds) !== null;
