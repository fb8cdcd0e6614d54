import { isSameOrUnder } from "../../kernel/paths";

/**
 * The last check of a purge (docs/OVERVIEW.md, "Every copy counts"): every path of the manifest is gone, or still
 * there with a documented reason. Pure; the caller feeds it what it read, one batch at a time, so a large
 * manifest is verified with bounded memory.
 */

/** What the execution recorded for a delete path (undefined: never reached). */
export type RecordedOutcome = "deleted" | "gone" | "held" | "deferred" | "blocked";

export interface ObservedDoc {
  exists: boolean;
  /** Which of the item's mask fields are still present. */
  presentFields: readonly string[];
  masked: boolean;
}

export type VerifyProblem =
  /** A delete path is still there and nothing documents why. */
  | "STILL_PRESENT"
  /** A delete path is still there because its predicate refused it at execution. */
  | "BLOCKED"
  /** A retained or masked record is missing. */
  | "RETAINED_MISSING"
  /** A masked record still carries a field it should not. */
  | "MASK_INCOMPLETE"
  /** A record deleted after archiving has no archive copy any more, or one that no longer matches its hash. */
  | "ARCHIVE_NOT_VERIFIED"
  /**
   * A document created under a recursive root while the purge ran, which the destroy predicate refuses, under a
   * parent that is gone (created after the parent's batch probed, before it committed; docs/PURGE-ENGINE.md,
   * "Why every item is probed"): the erasure is not complete.
   */
  | "LATE_FIND_STRANDED"
  /**
   * A document the request's data map reaches, outside the roots the final sweep looks under, that the round did not
   * decide about (written, or written again, after the plan by a server-side writer) and that the sweep may not
   * delete: a keep, archive or recursive entry reaches it, a hold or its class keeps it, the predicate refused it, or it
   * lies under a recursive entry's missing document. The erasure is not complete; the next run plans the request again
   * with it (docs/PURGE-ENGINE.md, "Late finds").
   */
  | "LATE_FIND_UNPLANNED";

export interface VerifyFinding {
  path: string;
  problem: VerifyProblem;
}

/** A path the purge left because a hold covers it (or, for a parent, because held data lies under it). */
export interface HeldPath {
  path: string;
  holdId: string | null;
  reasonCode: string;
}

export interface VerifyTally {
  gone: number;
  /** Deleted paths whose archive copy is present, verified and intact. */
  archived: number;
  retained: number;
  masked: number;
  findings: VerifyFinding[];
  /** How many manifest paths remain because of a hold; the first MAX_HELD_LISTED of them are listed. */
  underHoldCount: number;
  underHold: HeldPath[];
  /**
   * Every hold id that a path remaining under a hold names, each once, however many paths there are (bounded by
   * the number of holds, not of paths), and how many such paths name no hold id (kept by a hold's marks alone).
   * What finalize checks against the holds still active (requests/rules/requests.ts#heldAtGeneration).
   */
  keepers: string[];
  keptWithoutHoldId: number;
  /** Cloud Storage objects the round deleted (its "fully gone by" date then counts the buckets' soft delete). */
  objectsDeleted: number;
}

/** Held paths a request lists on itself and in its evidence (the count stays exact beyond it). */
export const MAX_HELD_LISTED = 100;

export const emptyTally = (): VerifyTally => ({ gone: 0, archived: 0, retained: 0, masked: 0, findings: [], underHoldCount: 0, underHold: [], keepers: [], keptWithoutHoldId: 0, objectsDeleted: 0 });

/** Records a path that remains because of a hold (and the hold that keeps it, listed or not). */
export function noteUnderHold(tally: VerifyTally, held: HeldPath): void {
  tally.underHoldCount++;
  if (tally.underHold.length < MAX_HELD_LISTED) tally.underHold.push(held);
  if (held.holdId === null) tally.keptWithoutHoldId++;
  else if (!tally.keepers.includes(held.holdId)) tally.keepers.push(held.holdId);
}

/**
 * How a deletion request's round ends, from its verification: PURGED when everything is gone or kept for a
 * documented non-hold reason; RETAINED_UNDER_HOLD when all that may be erased is erased and some data
 * remains only because a hold covers it (the erasure is deferred, never dropped: when a hold changes, the
 * request is planned again); BLOCKED when anything is left that nothing documents.
 */
export function requestOutcome(tally: Pick<VerifyTally, "findings" | "underHoldCount">): "PURGED" | "RETAINED_UNDER_HOLD" | "BLOCKED" {
  if (tally.findings.length > 0) return "BLOCKED";
  return tally.underHoldCount > 0 ? "RETAINED_UNDER_HOLD" : "PURGED";
}

/**
 * Checks one delete path. A path still present is documented when a hold stopped it (LEGAL_HOLD), or when
 * it was deferred because a retained document lies under it (RETAINED_DESCENDANT). `strict` (deletion
 * requests) also refuses paths the predicate refused at execution: the subject's erasure is not complete
 * while they remain. A sweep (not strict) leaves them, documented, for its next run.
 */
export function verifyDeletePath(
  path: string,
  observed: ObservedDoc,
  outcome: RecordedOutcome | undefined,
  retainedPaths: ReadonlySet<string>,
  strict: boolean,
  tally: VerifyTally,
  hold?: HeldPath,
): void {
  if (!observed.exists) {
    tally.gone++;
    return;
  }
  if (outcome === "held") {
    tally.retained++;
    noteUnderHold(tally, hold ?? { path, holdId: null, reasonCode: "LEGAL_HOLD" });
    return;
  }
  if (outcome === "deferred" && hasRetainedDescendant(path, retainedPaths)) {
    tally.retained++;
    return;
  }
  if (!strict && (outcome === "blocked" || outcome === "deferred")) {
    tally.retained++;
    return;
  }
  const problem: VerifyProblem = outcome === "blocked" ? "BLOCKED" : "STILL_PRESENT";
  tally.findings.push({ path, problem });
}

/** An archive copy as read back at verification. */
export interface ObservedArchive {
  exists: boolean;
  sourcePath: string | null;
  verified: boolean;
  /** The hash recorded on the copy, and the hash of its data as read now. */
  recordedSha256: string | null;
  dataSha256: string | null;
}

/**
 * Checks the archive copy of a delete path that was archived first: once the original is gone, the copy is the
 * record, so it must exist, name the path, be marked verified and still hash to what was recorded.
 */
export function verifyArchivedPath(path: string, sourceGone: boolean, archive: ObservedArchive, tally: VerifyTally): void {
  if (!sourceGone) return;
  const intact = archive.exists && archive.sourcePath === path && archive.verified && archive.recordedSha256 !== null && archive.recordedSha256 === archive.dataSha256;
  if (intact) tally.archived++;
  else tally.findings.push({ path, problem: "ARCHIVE_NOT_VERIFIED" });
}

/** Checks one retained record: it must still exist. One retained because of a hold (`hold`) is noted as such. */
export function verifyRetainedPath(path: string, observed: ObservedDoc, tally: VerifyTally, hold?: HeldPath): void {
  if (!observed.exists) {
    tally.findings.push({ path, problem: "RETAINED_MISSING" });
    return;
  }
  tally.retained++;
  if (hold) noteUnderHold(tally, hold);
}

/** Checks one masked record: present, marked masked, and none of its mask fields left (unless a hold stopped the mask). */
export function verifyMaskedPath(path: string, observed: ObservedDoc, heldStopped: HeldPath | null, tally: VerifyTally): void {
  if (!observed.exists) {
    tally.findings.push({ path, problem: "RETAINED_MISSING" });
    return;
  }
  if (heldStopped) {
    tally.retained++;
    noteUnderHold(tally, heldStopped);
    return;
  }
  if (!observed.masked || observed.presentFields.length > 0) tally.findings.push({ path, problem: "MASK_INCOMPLETE" });
  else tally.masked++;
}

function hasRetainedDescendant(path: string, retained: ReadonlySet<string>): boolean {
  for (const r of retained) if (r !== path && isSameOrUnder(r, path)) return true;
  return false;
}

/** What an object batch recorded for an object (undefined: never reached). */
export type RecordedObjectOutcome = "deleted" | "gone" | "changed" | "held";

/** A Cloud Storage object as read back at verification: whether its name is there, and at which generation. */
export interface ObservedObject {
  exists: boolean;
  generation: string | null;
}

/**
 * Checks one object of an object batch. Its decided generation must be gone: deleted by the round, already gone, or
 * replaced by a newer upload (`changed`; the final sweep decides the new generation in a late batch of its own). A
 * held object that is still there is kept under its hold. The decided generation still there, and not held, is a
 * finding.
 */
export function verifyObjectPath(path: string, decidedGeneration: string, observed: ObservedObject, outcome: RecordedObjectOutcome | undefined, tally: VerifyTally, hold?: HeldPath): void {
  if (outcome === "held") {
    if (observed.exists) {
      tally.retained++;
      noteUnderHold(tally, hold ?? { path, holdId: null, reasonCode: "LEGAL_HOLD" });
    } else tally.gone++;
    return;
  }
  if (observed.exists && observed.generation === decidedGeneration) {
    tally.findings.push({ path, problem: "STILL_PRESENT" });
    return;
  }
  tally.gone++;
  if (outcome === "deleted") tally.objectsDeleted++;
}
