import type { GovernedFields } from "./governed";
import { isHeld, type ActiveHoldRef } from "./held";
import type { PolicyIndex } from "./policy";
import { isExpired } from "./retention";

export type DestroyReason = "LEGAL_HOLD" | "UNKNOWN_POLICY" | "ARCHIVE_NOT_VERIFIED" | "NOT_EXPIRED" | "AUTHORIZED_BY_POLICY";

export interface DestroyDecision {
  path: string;
  allowed: boolean;
  reason: DestroyReason;
  /** The registry version that made the decision; recorded with it. */
  policyVersion: string;
  retentionClass: string | null;
  decidedAtMs: number;
}

export interface DestroyInput {
  path: string;
  doc: Pick<GovernedFields, "legalHold" | "lifecycleState" | "expireAtMs" | "retainUntilMs"> & { retentionClass: string | null; holdIds?: readonly string[] };
  /** Active hold records: a hold covers a path when its target is the path or an ancestor of it. */
  activeHolds: readonly ActiveHoldRef[];
  /** For archive classes: whether a read-back-verified archive of this document exists. */
  archiveVerified: boolean;
  /** The purge workflow authorises this path (its deletion request's grace period is over). */
  workflowEligible: boolean;
  /**
   * The document's PURGE_ELIGIBLE state is the decision of the unit and round acting now, made under the
   * current policy version. An older mark is not a standing authorisation: without this, a PURGE_ELIGIBLE
   * document is judged on its expiry and the workflow like any other.
   */
  currentDecision?: boolean;
}

/**
 * The destroy predicate. A document may be destroyed only when, in this order:
 * 1. no active hold covers it (flag or hold record)   otherwise LEGAL_HOLD
 * 2. its class is known                                otherwise UNKNOWN_POLICY
 * 3. its archive is verified, where the class needs one otherwise ARCHIVE_NOT_VERIFIED
 * 4. it has expired, the workflow authorises it, or it carries the current
 *    decision of the purge round acting now            otherwise NOT_EXPIRED
 * Holds are checked first so that a held document is never reported as merely "not expired".
 */
export function evaluateDestroy(input: DestroyInput, policy: PolicyIndex, nowMs: number): DestroyDecision {
  const base = { path: input.path, policyVersion: policy.version, retentionClass: input.doc.retentionClass, decidedAtMs: nowMs };
  const decide = (reason: DestroyReason): DestroyDecision => ({ ...base, reason, allowed: reason === "AUTHORIZED_BY_POLICY" });

  if (isHeld({ path: input.path, ...input.doc }, input.activeHolds)) {
    return decide("LEGAL_HOLD");
  }
  const cls = policy.classById(input.doc.retentionClass);
  if (!cls) return decide("UNKNOWN_POLICY");
  if (cls.archive.required && !input.archiveVerified) return decide("ARCHIVE_NOT_VERIFIED");
  const eligible =
    (input.currentDecision === true && input.doc.lifecycleState === "PURGE_ELIGIBLE") ||
    isExpired(input.doc, nowMs) ||
    (input.workflowEligible && cls.userDeletable);
  return decide(eligible ? "AUTHORIZED_BY_POLICY" : "NOT_EXPIRED");
}
