import { createHash } from "node:crypto";
import { ARCHIVES_COLLECTION, isArchivePath } from "../purge/rules/archive";
import { DomainError, permissionDenied, preconditionFailed } from "../kernel/errors";
import type { ActiveHoldRef, HoldLetGo } from "../kernel/held";
import { compareNames, isDocumentPath, isSameOrUnder, matchPattern } from "../kernel/paths";
import type { PolicyIndex } from "../kernel/policy";
import type { HoldReason, RetentionClass } from "../kernel/policy-schema";
import { isObjectPath } from "../kernel/storage-map";

export type HoldTargetType = "document" | "subtree";

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

/**
 * A hold targets one document, or a subtree: a document the registry names as a subtree root (the scope's
 * record, such as a tenant, or `subtreeHoldRoots`, such as a chat) and every descendant, including documents
 * created after the hold, because holds are matched by path prefix. `tenantId`: the scope whose record it is.
 */
export function classifyHoldTarget(policy: PolicyIndex, path: string): { targetType: HoldTargetType; tenantId: string | null } {
  if (isObjectPath(path)) {
    throw new DomainError("invalid-argument", "INVALID_TARGET_PATH", "A Cloud Storage object is held through the document the data map holds it with (its heldWith): hold that document.");
  }
  if (!isDocumentPath(path)) throw new DomainError("invalid-argument", "INVALID_TARGET_PATH", "targetPath must be a document path.");
  if (!isSubtreeHoldRoot(policy, path)) return { targetType: "document", tenantId: null };
  return { targetType: "subtree", tenantId: policy.scopeOfRecord(path) };
}

/** Whether a hold on `path` holds it as a subtree (the registry's subtree roots). */
export const isSubtreeHoldRoot = (policy: PolicyIndex, path: string): boolean => policy.subtreeHoldRoots().some((p) => matchPattern(p, path) !== null);

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

/**
 * The ids of the active holds that claim a document now: those whose record covers it (on it or an ancestor),
 * except a hold being released once its release has passed the document (`letGo`: the release walks the
 * documents under its target in name order, then the archive copies). An archive copy (`sourcePath` given) is
 * claimed by a hold covering the copy or the document it copies, never by a hold being released: a release's
 * walk of the copies lists those that carry its id, so no copy may take the id after the walk began.
 * This is what a document's hold marks must say (kernel/retention.ts#settleHolds): a hold that covers a
 * document flags it whether or not its own flagging reached it yet, and a release restores TTL only where no
 * other hold claims the document.
 */
export function claimingHoldIds(path: string, holds: readonly ActiveHoldRef[], sourcePath?: string | null): string[] {
  const copy = sourcePath !== undefined;
  const ids = holds
    .filter((h) => isSameOrUnder(path, h.targetPath) || (copy && sourcePath !== null && isSameOrUnder(sourcePath, h.targetPath)))
    .filter((h) => stillClaims(h.letGo, path, copy))
    .map((h) => h.holdId);
  return [...new Set(ids)].sort();
}

/**
 * Whether an active hold that covers `path` still claims it, given how far its release has let go (`letGo`, null when
 * it is not being released): a document until the release's walk passes it; an archive copy never once a release
 * began.
 */
export function stillClaims(letGo: HoldLetGo | null | undefined, path: string, copy: boolean): boolean {
  if (!letGo) return true;
  if (copy) return false;
  return letGo.phase === "documents" && (letGo.cursor === null || compareNames(path, letGo.cursor) > 0);
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
