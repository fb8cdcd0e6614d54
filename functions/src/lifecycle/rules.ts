import type { DestroyDecision } from "../kernel/destroy-predicate";
import { preconditionFailed } from "../kernel/errors";
import { assertTransition, type LifecycleState } from "../kernel/lifecycle";

export interface AdminMoveInput {
  from: LifecycleState;
  to: LifecycleState;
  /** A hold covers the document: its flag, its LEGAL_HOLD state, or an active hold record on it or an ancestor. */
  held: boolean;
  /** The document was soft-deleted by a deletion request that is still open. */
  ownedByOpenRequest: boolean;
}

/**
 * The rules for a lifecycle move requested by a retention-admin (`transitionLifecycle`), checked in this
 * order so the caller always learns the most fundamental reason:
 * 1. the state machine (`INVALID_LIFECYCLE_<FROM>_TO_<TO>`, as the contract says for any move outside it);
 * 2. LEGAL_HOLD is entered only through placeRetentionHold (a hold needs a record, a reason and evidence);
 * 3. PURGED is reached only by the purge engine, which deletes and verifies: the one machine move into it,
 *    PURGE_ELIGIBLE -> PURGED, is refused here as `PURGE_ONLY_BY_ENGINE`;
 * 4. held data goes nowhere until its hold is released;
 * 5. data an open deletion request soft-deleted is not made ACTIVE again behind the subject's back: only
 *    the subject's cancel brings it back (moving it on towards archive or purge is the workflow).
 * The PURGE_ELIGIBLE check needs the destroy predicate, see {@link assertDestroyAuthorized}.
 */
export function assertAdminMove(input: AdminMoveInput): void {
  assertTransition(input.from, input.to);
  if (input.to === "LEGAL_HOLD") {
    throw preconditionFailed("HOLD_VIA_PLACE_RETENTION_HOLD", "Place a retention hold instead: holds need a record and a reason code.");
  }
  if (input.to === "PURGED") throw preconditionFailed("PURGE_ONLY_BY_ENGINE", "Only the purge engine purges data.");
  if (input.held) throw preconditionFailed("LEGAL_HOLD", "The document is under a retention hold; release the hold first.");
  if (input.from === "SOFT_DELETED" && input.to === "ACTIVE" && input.ownedByOpenRequest) {
    throw preconditionFailed("OPEN_DELETION_REQUEST", "An open deletion request soft-deleted this document; it is restored only by cancelling that request.");
  }
}

/** A move to PURGE_ELIGIBLE records a decision, and only an AUTHORIZED_BY_POLICY one lets it happen. */
export function assertDestroyAuthorized(decision: DestroyDecision): void {
  if (!decision.allowed) {
    throw preconditionFailed(decision.reason, `The destroy predicate refuses: ${decision.reason}.`, { policyVersion: decision.policyVersion });
  }
}
