import { createHash } from "node:crypto";
import { ARCHIVES_COLLECTION, isArchivePath } from "./archive";
import { DomainError, permissionDenied, preconditionFailed } from "./errors";
import { isDocumentPath, isSameOrUnder, matchPattern } from "./paths";
import type { PolicyIndex } from "./policy";
import type { HoldReason, RetentionClass } from "./policy-schema";

export type HoldTargetType = "document" | "subtree";

/** An active hold record as the rules see it: a hold covers its target and everything under it. */
export interface ActiveHoldRef {
  holdId: string;
  targetPath: string;
  reasonCode: string;
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
export type HoldState = "ACTIVE" | "RELEASED";

/** `retentionHolds/{holdId}` in domain form (times as epoch ms). */
export interface HoldRecord {
  holdId: string;
  targetPath: string;
  targetType: HoldTargetType;
  tenantId: string;
  reasonCode: string;
  state: HoldState;
  placedBy: string;
  placedAtMs: number;
  releaseAfterMs: number | null;
  note?: string;
  policyVersion: string;
  affected: number;
  releasedBy?: string;
  releasedAtMs?: number;
  releaseReason?: string;
}

/** The subtree a hold may target as a whole: a tenant and everything under it. */
export const SUBTREE_PATTERN = "tenants/{tenantId}";

/**
 * A hold targets one document, or a tenant subtree (`tenants/{tenantId}`: the tenant document and every
 * descendant, including documents created after the hold, because holds are matched by path prefix).
 */
export function classifyHoldTarget(path: string): { targetType: HoldTargetType; tenantId: string | null } {
  if (!isDocumentPath(path)) throw new DomainError("invalid-argument", "INVALID_TARGET_PATH", "targetPath must be a document path.");
  const subtree = matchPattern(SUBTREE_PATTERN, path);
  return subtree ? { targetType: "subtree", tenantId: subtree.tenantId ?? null } : { targetType: "document", tenantId: null };
}

/** The registry's entry for a hold reason code; unknown codes are bad input (nothing is written). */
export function requireHoldReason(policy: PolicyIndex, code: string): HoldReason {
  const reason = policy.holdReason(code);
  if (!reason) throw new DomainError("invalid-argument", "UNKNOWN_REASON_CODE", `Hold reason code ${code} is not in registry ${policy.version}.`);
  return reason;
}

/**
 * The class that decides whether a document may be held: the registry's class for a governed path, or, for an
 * archive copy (`archives/{id}`), the class the registry gives the archives collection. Any other path is not
 * governed and cannot be held.
 */
export function holdClassForPath(policy: PolicyIndex, path: string): RetentionClass | undefined {
  return policy.classForPath(path) ?? (isArchivePath(path) ? policy.controlPlaneClass(ARCHIVES_COLLECTION) : undefined);
}

/** Classes with holdBehaviour "deny" (sessions) are never held: their expiry is a business fact. */
export function assertHoldableClass(cls: RetentionClass): void {
  if (cls.holdBehaviour !== "allow") {
    throw preconditionFailed("HOLD_NOT_ALLOWED_FOR_CLASS", `Class ${cls.id} does not allow holds.`, { retentionClass: cls.id });
  }
}

/**
 * Whether `releaserUid` may release `hold` at `nowMs`. Reason codes are looked up in the current registry;
 * a code that is no longer there gets the strictest treatment (two people, no early release).
 * - TWO_PERSON_RULE (permission-denied): the placer releasing a two-person hold;
 * - RELEASE_BEFORE_RELEASE_AFTER (failed-precondition): before releaseAfter, unless the code allows it;
 * - HOLD_NOT_ACTIVE (failed-precondition): already released.
 */
export function assertReleaseAllowed(
  hold: Pick<HoldRecord, "state" | "placedBy" | "releaseAfterMs" | "reasonCode">,
  reason: HoldReason | undefined,
  releaserUid: string,
  nowMs: number,
): void {
  if (hold.state !== "ACTIVE") throw preconditionFailed("HOLD_NOT_ACTIVE", "The hold is already released.");
  const twoPerson = reason?.twoPersonRelease ?? true;
  if (twoPerson && hold.placedBy === releaserUid) {
    throw permissionDenied("TWO_PERSON_RULE", `Reason ${hold.reasonCode} needs a second person: the placer cannot release it.`);
  }
  const early = reason?.earlyReleaseAllowed ?? false;
  if (hold.releaseAfterMs !== null && nowMs < hold.releaseAfterMs && !early) {
    throw preconditionFailed("RELEASE_BEFORE_RELEASE_AFTER", `Reason ${hold.reasonCode} does not allow release before releaseAfter.`, {
      releaseAfter: new Date(hold.releaseAfterMs).toISOString(),
    });
  }
}

/**
 * A digest of the paths a hold action touched, for evidence: SHA-256 over the paths, one per line, in the
 * order given. Callers feed paths in a deterministic order (the walk is ordered by collection and id).
 */
export class PathDigest {
  private readonly hash = createHash("sha256");
  private n = 0;

  add(path: string): void {
    this.hash.update(`${path}\n`, "utf8");
    this.n++;
  }

  get count(): number {
    return this.n;
  }

  hex(): string {
    return this.hash.copy().digest("hex");
  }
}
