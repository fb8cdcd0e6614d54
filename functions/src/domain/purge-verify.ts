import { isSameOrUnder } from "./paths";

/**
 * The last check of a purge (PRODUCT.md "Every copy counts"): every path of the manifest is gone, or still
 * there with a documented reason. Pure; the caller feeds it what it read, one batch at a time, so a large
 * manifest is verified with bounded memory.
 */

/** What the execution recorded for a delete path (undefined: never reached). */
export type RecordedOutcome = "deleted" | "gone" | "held" | "claimed" | "deferred" | "blocked";

export interface ObservedDoc {
  exists: boolean;
  /** Which of the item's mask fields are still present. */
  presentFields: readonly string[];
  masked: boolean;
}

export type VerifyProblem =
  /** A delete path is still there and nothing documents why. */
  | "STILL_PRESENT"
  /** A delete path is still there because another unit claimed it and has not finished. */
  | "CLAIMED_ELSEWHERE"
  /** A delete path is still there because its predicate refused it at execution. */
  | "BLOCKED"
  /** A retained or masked record is missing. */
  | "RETAINED_MISSING"
  /** A masked record still carries a field it should not. */
  | "MASK_INCOMPLETE";

export interface VerifyFinding {
  path: string;
  problem: VerifyProblem;
}

export interface VerifyTally {
  gone: number;
  retained: number;
  masked: number;
  findings: VerifyFinding[];
}

export const emptyTally = (): VerifyTally => ({ gone: 0, retained: 0, masked: 0, findings: [] });

/**
 * Checks one delete path. A path still present is documented when a hold stopped it (LEGAL_HOLD), or when
 * it was deferred because a retained document lies under it (RETAINED_DESCENDANT). `strict` (deletion
 * requests) also refuses paths left to another unit or refused by the predicate: the subject's erasure is
 * not complete while they remain. A sweep (not strict) leaves them, documented, for its next run.
 */
export function verifyDeletePath(
  path: string,
  observed: ObservedDoc,
  outcome: RecordedOutcome | undefined,
  retainedPaths: ReadonlySet<string>,
  strict: boolean,
  tally: VerifyTally,
): void {
  if (!observed.exists) {
    tally.gone++;
    return;
  }
  if (outcome === "held") {
    tally.retained++;
    return;
  }
  if (outcome === "deferred" && hasRetainedDescendant(path, retainedPaths)) {
    tally.retained++;
    return;
  }
  if (!strict && (outcome === "claimed" || outcome === "blocked" || outcome === "deferred")) {
    tally.retained++;
    return;
  }
  const problem: VerifyProblem = outcome === "claimed" ? "CLAIMED_ELSEWHERE" : outcome === "blocked" ? "BLOCKED" : "STILL_PRESENT";
  tally.findings.push({ path, problem });
}

/** Checks one retained record: it must still exist. */
export function verifyRetainedPath(path: string, observed: ObservedDoc, tally: VerifyTally): void {
  if (observed.exists) tally.retained++;
  else tally.findings.push({ path, problem: "RETAINED_MISSING" });
}

/** Checks one masked record: present, marked masked, and none of its mask fields left (unless a hold stopped the mask). */
export function verifyMaskedPath(path: string, observed: ObservedDoc, heldStopped: boolean, tally: VerifyTally): void {
  if (!observed.exists) {
    tally.findings.push({ path, problem: "RETAINED_MISSING" });
    return;
  }
  if (heldStopped) {
    tally.retained++;
    return;
  }
  if (!observed.masked || observed.presentFields.length > 0) tally.findings.push({ path, problem: "MASK_INCOMPLETE" });
  else tally.masked++;
}

function hasRetainedDescendant(path: string, retained: ReadonlySet<string>): boolean {
  for (const r of retained) if (r !== path && isSameOrUnder(r, path)) return true;
  return false;
}
