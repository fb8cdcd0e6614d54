import { DomainError, permissionDenied, preconditionFailed } from "./errors";
import type { GovernedFields } from "./governed";
import { assertTransition, isLifecycleState, type LifecycleState } from "./lifecycle";
import { DAY_MS, type PolicyIndex } from "./policy";

export const REQUEST_STATES = ["PENDING", "CANCELLED", "PROCESSING", "PURGED", "BLOCKED"] as const;
export type RequestState = (typeof REQUEST_STATES)[number];
export type RequestSource = "user" | "auth-backstop" | "staff";

/** A request is open while the subject's erasure is in progress: the user gets the same request back. */
export const OPEN_REQUEST_STATES: readonly RequestState[] = ["PENDING", "PROCESSING"];
/**
 * The Auth backstop treats a uid as already handled when any request for it exists that was not
 * cancelled: the purge deletes the Auth account itself (PROCESSING/PURGED), and a BLOCKED request is
 * still the subject's erasure, waiting for an operator.
 */
export const HANDLED_REQUEST_STATES: readonly RequestState[] = ["PENDING", "PROCESSING", "PURGED", "BLOCKED"];

/** The retention class whose grace and due periods govern an account-deletion request. */
export const USER_DELETE_CLASS = "user-delete";

export interface TimelineEntry {
  atMs: number;
  event: string;
  detail?: string;
}

/** `deletionRequests/{requestId}` in domain form (times as epoch ms). */
export interface DeletionRequest {
  requestId: string;
  subjectType: "user";
  uid: string;
  tenantId: string;
  state: RequestState;
  source: RequestSource;
  reason?: string;
  requestedAtMs: number;
  graceEndsAtMs: number;
  dueAtMs: number;
  policyVersion: string;
  timeline: TimelineEntry[];
  softDeleted: number;
  manifestHash?: string;
}

/**
 * A new account-deletion request. Grace and due periods come from the `user-delete` class, so a change of
 * policy (a new registry version) changes them for new requests only: the request records its version.
 */
export function newDeletionRequest(
  args: { requestId: string; uid: string; tenantId: string; source: RequestSource; reason?: string; nowMs: number },
  policy: PolicyIndex,
): DeletionRequest {
  const cls = policy.classById(USER_DELETE_CLASS);
  if (!cls || cls.dueDays === undefined) {
    throw new Error(`registry ${policy.version}: class ${USER_DELETE_CLASS} with dueDays is required for deletion requests`);
  }
  const graceDays = cls.graceDays ?? 0;
  return {
    requestId: args.requestId,
    subjectType: "user",
    uid: args.uid,
    tenantId: args.tenantId,
    state: "PENDING",
    source: args.source,
    ...(args.reason !== undefined && args.reason !== "" ? { reason: args.reason } : {}),
    requestedAtMs: args.nowMs,
    graceEndsAtMs: args.nowMs + graceDays * DAY_MS,
    dueAtMs: args.nowMs + cls.dueDays * DAY_MS,
    policyVersion: policy.version,
    timeline: [{ atMs: args.nowMs, event: "REQUESTED", detail: `source ${args.source}` }],
    softDeleted: 0,
  };
}

/**
 * Whether the owner may cancel now. Cancelling is idempotent: an already cancelled request reports
 * "already-cancelled" so that a retried call finishes restoring data instead of failing.
 * Errors: NOT_OWNER (permission-denied), REQUEST_NOT_OPEN and GRACE_EXPIRED (failed-precondition).
 */
export function cancelDecision(
  req: Pick<DeletionRequest, "uid" | "state" | "graceEndsAtMs">,
  callerUid: string,
  nowMs: number,
): "cancel" | "already-cancelled" {
  if (req.uid !== callerUid) throw permissionDenied("NOT_OWNER", "Only the subject of a deletion request may cancel it.");
  if (req.state === "CANCELLED") return "already-cancelled";
  if (req.state !== "PENDING") {
    throw preconditionFailed("REQUEST_NOT_OPEN", `The request is ${req.state} and can no longer be cancelled.`, { state: req.state });
  }
  if (nowMs >= req.graceEndsAtMs) {
    throw preconditionFailed("GRACE_EXPIRED", "The grace period is over; the request can no longer be cancelled.", {
      graceEndsAt: new Date(req.graceEndsAtMs).toISOString(),
    });
  }
  return "cancel";
}

/** Server-only bookkeeping a soft delete leaves on a document, so that a cancel can undo exactly it. */
export interface SoftDeleteMarks {
  softDeletedAtMs: number | null;
  preDeleteState: LifecycleState | null;
  deletionRequestId: string | null;
}

export type SoftDeleteOutcome =
  | { kind: "move"; fields: GovernedFields; marks: SoftDeleteMarks }
  | { kind: "already" }
  | { kind: "held" }
  | { kind: "not-active"; state: LifecycleState };

/**
 * What an account-deletion request does to one document of its subject: ACTIVE data becomes SOFT_DELETED
 * (state-machine checked) and leaves every product read. Held documents stay as they are (holds win), and
 * so does data already in another part of its lifecycle, which this request must not claim: a cancel
 * restores only what the request itself moved.
 */
export function softDeleteOutcome(
  doc: GovernedFields,
  marks: SoftDeleteMarks,
  requestId: string,
  heldByRecord: boolean,
  nowMs: number,
): SoftDeleteOutcome {
  if (doc.lifecycleState === "SOFT_DELETED" && marks.deletionRequestId === requestId) return { kind: "already" };
  if (heldByRecord || doc.legalHold || doc.lifecycleState === "LEGAL_HOLD") return { kind: "held" };
  if (doc.lifecycleState !== "ACTIVE") return { kind: "not-active", state: doc.lifecycleState };
  assertTransition(doc.lifecycleState, "SOFT_DELETED");
  return {
    kind: "move",
    fields: { ...doc, lifecycleState: "SOFT_DELETED" },
    marks: { softDeletedAtMs: nowMs, preDeleteState: doc.lifecycleState, deletionRequestId: requestId },
  };
}

export type RestoreOutcome =
  | { kind: "restore"; fields: GovernedFields }
  | { kind: "skip"; why: "OTHER_REQUEST" | "MOVED_ON" };

/**
 * What cancelling a request does to a document it soft-deleted: the state before the request comes back.
 * A hold placed after the soft delete parked SOFT_DELETED in `preHold`; that is rewritten to the state
 * before the request, so the later release also lands on it. A document that moved on since (archived,
 * made purge-eligible by an administrator) is left for the operator and reported.
 */
export function restoreOutcome(doc: GovernedFields, marks: SoftDeleteMarks, requestId: string): RestoreOutcome {
  if (marks.deletionRequestId !== requestId) return { kind: "skip", why: "OTHER_REQUEST" };
  const before: LifecycleState = marks.preDeleteState && isLifecycleState(marks.preDeleteState) ? marks.preDeleteState : "ACTIVE";
  if (doc.lifecycleState === "SOFT_DELETED") {
    assertTransition("SOFT_DELETED", before);
    return { kind: "restore", fields: { ...doc, lifecycleState: before } };
  }
  if (doc.lifecycleState === "LEGAL_HOLD" && doc.preHold?.lifecycleState === "SOFT_DELETED") {
    return { kind: "restore", fields: { ...doc, preHold: { ...doc.preHold, lifecycleState: before } } };
  }
  return { kind: "skip", why: "MOVED_ON" };
}

/** Parses a stored request state; an unknown value is a corrupted record, never silently "open". */
export function parseRequestState(value: unknown): RequestState {
  if (typeof value === "string" && (REQUEST_STATES as readonly string[]).includes(value)) return value as RequestState;
  throw new DomainError("failed-precondition", "CORRUPT_REQUEST", "The deletion request record has an unknown state.");
}
