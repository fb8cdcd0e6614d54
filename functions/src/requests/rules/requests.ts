import type { LegalClock } from "./legal-clock";
import { DomainError, permissionDenied, preconditionFailed } from "../../kernel/errors";
import type { GovernedFields } from "../../kernel/governed";
import { assertTransition, isLifecycleState, type LifecycleState } from "../../kernel/lifecycle";
import { DAY_MS, type PolicyIndex } from "../../kernel/policy";
import { REQUEST_STATES, type RequestState } from "../../kernel/request-states";
import type { Subject } from "../../plan/rules";

export { REQUEST_STATES, type RequestState };
export type RequestSource = "user" | "auth-backstop" | "staff" | "erasure-replay";

/**
 * A request is open while the subject's erasure is in progress: waiting for a second staff member's approval
 * (AWAITING_APPROVAL, a tenant's closure only), waiting for its grace period (PENDING), under way (PROCESSING),
 * stopped for an operator (BLOCKED), or done except for data under a hold (RETAINED_UNDER_HOLD). While a
 * request is open its subject gets this same request back, the data it soft-deleted is its own (never a policy
 * sweep's), and its uid's leftovers are not orphans.
 */
export const OPEN_REQUEST_STATES: readonly RequestState[] = ["AWAITING_APPROVAL", "PENDING", "PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD"];
/** Whether a request in `state` is open (see OPEN_REQUEST_STATES). */
export const isOpenRequest = (state: unknown): boolean => (OPEN_REQUEST_STATES as readonly unknown[]).includes(state);
/**
 * States in which erasure is owed and not yet carried out, so the request's due date applies (a request
 * retained under a hold has erased all the law lets it erase: what remains is kept for a legal obligation;
 * a closure awaiting approval has no due date yet: its periods start when it is approved).
 */
export const ERASURE_OWED_STATES: readonly RequestState[] = ["PENDING", "PROCESSING", "BLOCKED"];
/**
 * The Auth backstop treats a uid as already handled when an open request or a PURGED one exists: the purge
 * deletes the Auth account itself, so its own delete event must not open a second request.
 */
export const HANDLED_REQUEST_STATES: readonly RequestState[] = [...OPEN_REQUEST_STATES, "PURGED"];
/**
 * A tenant's closure in these states has been taken by the purge (it can no longer be cancelled): it erases
 * the data of every user of the tenant and deletes their Auth accounts, so the Auth backstop treats the
 * deletion of such a user's account as handled by it.
 */
export const CLOSURE_HANDLES_USERS_STATES: readonly RequestState[] = ["PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD", "PURGED"];

/**
 * The request state machine. Every writer reads the state in the same transaction as its write and moves
 * only along these edges, so a cancel and the purge can never both win:
 *   AWAITING_APPROVAL    -> PENDING (a second staff member approves a tenant's closure: the data is hidden and
 *                           the grace period starts), CANCELLED (withdrawn before approval: nothing was hidden)
 *   PENDING              -> CANCELLING (the owner cancels in grace), PROCESSING (a purge round starts),
 *                           BLOCKED (the plan is refused before anything happens)
 *   CANCELLING           -> CANCELLED (the restore is complete)
 *   PROCESSING           -> PURGED, RETAINED_UNDER_HOLD, BLOCKED (the round ends)
 *   BLOCKED              -> PROCESSING, BLOCKED (re-planned by a later run)
 *   RETAINED_UNDER_HOLD  -> PROCESSING, BLOCKED (a hold changed: what was held is planned again)
 *   CANCELLED, PURGED    -> (terminal)
 */
const REQUEST_MOVES: Readonly<Record<RequestState, readonly RequestState[]>> = {
  AWAITING_APPROVAL: ["PENDING", "CANCELLED"],
  PENDING: ["CANCELLING", "PROCESSING", "BLOCKED"],
  CANCELLING: ["CANCELLED"],
  PROCESSING: ["PURGED", "RETAINED_UNDER_HOLD", "BLOCKED"],
  BLOCKED: ["PROCESSING", "BLOCKED"],
  RETAINED_UNDER_HOLD: ["PROCESSING", "BLOCKED"],
  CANCELLED: [],
  PURGED: [],
};

export const canMoveRequest = (from: RequestState, to: RequestState): boolean => REQUEST_MOVES[from].includes(to);

/** The one definition of "grace over": the request's grace period has ended at `nowMs`. */
export const isGraceOver = (req: { graceEndsAtMs: number | null }, nowMs: number): boolean => req.graceEndsAtMs !== null && req.graceEndsAtMs <= nowMs;

/** What the purge reads of a request to decide whether a run may take it. */
export interface TakeFacts {
  state: unknown;
  graceEndsAtMs: number | null;
  /**
   * For RETAINED_UNDER_HOLD: `heldAtGeneration`, a hold fence generation at which every hold that keeps part of
   * the request was still active (`heldAtGeneration` below). Anything but a number (a request retained before
   * this field existed, whose `heldFenceGeneration` may postdate a release) makes the request takeable.
   */
  heldAtGeneration: unknown;
  /**
   * A cell request (a request of record's part in another governed database) waits until the request of record has
   * been taken by the primary's purge (requests/rules/cells.ts#recordTaken), so that a cancel, which the request of
   * record decides, can never lose to a cell's purge. `true` until then; absent on every other request.
   */
  awaitingRecord?: unknown;
}

/**
 * Whether a purge run may take a request: PENDING or BLOCKED with its grace period over (BLOCKED is
 * re-planned every run), PROCESSING (a run stopped part-way: resume it), or RETAINED_UNDER_HOLD when the hold
 * fence has moved from the generation it was retained at (a hold was placed or released since: what was held
 * may be free now), or when it records no such generation. A request being cancelled, cancelled or purged is
 * never taken, and neither is a cell request still awaiting its request of record (`awaitingRecord`).
 */
export function purgeMayTake(r: TakeFacts, nowMs: number, fenceGeneration: number): boolean {
  if (r.awaitingRecord === true) return false;
  if (r.state === "PROCESSING") return true;
  if (r.state === "RETAINED_UNDER_HOLD") return typeof r.heldAtGeneration !== "number" || r.heldAtGeneration !== fenceGeneration;
  return (r.state === "PENDING" || r.state === "BLOCKED") && isGraceOver(r, nowMs);
}

/** What a round that ends RETAINED_UNDER_HOLD knows about the holds that keep what remains. */
export interface HeldJudgement {
  /**
   * The fence generation the round's plan read before it read the holds. Every held decision of the round (the
   * plan's, a batch's, the final sweep's, a mask's) was made at this generation or a later one.
   */
  decidedGeneration: number;
  /** The generation read in the finalize transaction, the one that writes the request. */
  finalGeneration: number;
  /** The hold ids the remaining held paths name, all of them (purge/rules/verify.ts#VerifyTally.keepers). */
  keepers: readonly string[];
  /** Remaining held paths that name no hold id (kept by a hold's marks alone). */
  keptWithoutHoldId: number;
  /** Which keepers are ACTIVE as read in the finalize transaction (null: not read, e.g. too many to read). */
  activeAtFinal: ReadonlySet<string> | null;
}

/**
 * The generation a request retained under a hold stores as `heldAtGeneration`: the next run that reads another
 * generation takes it up again (`purgeMayTake`). It must be older than the release of every hold that kept part
 * of it, so that the fence, which every release moves on, can never read it again once they are all gone
 * (docs/HOLD-FENCE.md, "A request retained under a hold resumes after every release"):
 * - `finalGeneration` when every remaining held path names a hold that is still ACTIVE in the finalize
 *   transaction: Firestore serialises that transaction against each release (which writes the record and the
 *   fence), so each of those releases commits later and writes a greater generation;
 * - otherwise `decidedGeneration`: each held decision saw its hold active at that generation or a later one, so
 *   that hold's release, which came after the decision, wrote a greater generation. A release that landed while
 *   the round ran (before the plan read the holds excepted) has already moved the fence past it, and the next run
 *   takes the request up.
 */
export function heldAtGeneration(j: HeldJudgement): number {
  const stand = j.activeAtFinal !== null && j.keptWithoutHoldId === 0 && j.keepers.length > 0 && j.keepers.every((id) => j.activeAtFinal!.has(id));
  return stand ? j.finalGeneration : Math.min(j.decidedGeneration, j.finalGeneration);
}

/** Throws REQUEST_STATE_CHANGED unless the request may move from the state its writer read to `to`. */
export function assertRequestMove(from: RequestState, to: RequestState): void {
  if (!canMoveRequest(from, to)) {
    throw preconditionFailed("REQUEST_STATE_CHANGED", `A ${from} deletion request cannot become ${to}.`, { state: from, to });
  }
}

/**
 * The retention classes whose grace and due periods govern a user's erasure and a scope's closure when the
 * registry names none (`subjects.user.requestClass`, `subjects.scope.requestClass`): the product's conventions.
 */
export const USER_DELETE_CLASS = "user-delete";
export const TENANT_CLOSURE_CLASS = "tenant-account";

/**
 * Who owns a request: the user it erases, or the staff member who opened a tenant's closure (who may read its
 * status; any retention-admin may cancel a closure, see `cancelDecision`).
 */
export const requestOwner = (req: Pick<DeletionRequest, "subject" | "requestedBy">): string => (req.subject.type === "user" ? req.subject.uid : req.requestedBy);

export interface TimelineEntry {
  atMs: number;
  event: string;
  detail?: string;
}

/**
 * `deletionRequests/{requestId}` in domain form (times as epoch ms). Its subject is a user (an account
 * erasure) or a tenant (a tenant's closure): one model, one state machine, one purge path.
 */
export interface DeletionRequest {
  requestId: string;
  subject: Subject;
  /** Who opened it: the user for their own account, the staff member for a tenant closure, or the system. */
  requestedBy: string;
  state: RequestState;
  source: RequestSource;
  reason?: string;
  requestedAtMs: number;
  /** When the grace period ends; null while a tenant's closure awaits its approval (the period starts then). */
  graceEndsAtMs: number | null;
  /** When the erasure is due; null while awaiting approval. */
  dueAtMs: number | null;
  policyVersion: string;
  timeline: TimelineEntry[];
  softDeleted: number;
  manifestHash?: string;
  /** When the owner asked to cancel (the request/cancel cooldown counts from here). */
  cancelledAtMs?: number;
  /** A tenant's closure: the second staff member who approved it, and when. */
  approvedBy?: string;
  approvedAtMs?: number;
  /**
   * The request group this request is a member of (a user erased in several scopes by one request): the group's
   * id, which is its lead's request id (requests/rules/group.ts). Absent for a request on its own.
   */
  groupId?: string;
  /**
   * The legal clock the request runs on (rules/legal-clock.ts): its law, its deadline from the moment it was opened, and
   * staff's one extension. `dueAtMs` is the clock's deadline. Absent: due by its class's `dueDays`, not extendable.
   */
  legalClock?: LegalClock;
}

/**
 * The subject a stored request (or a purge checkpoint) names: `subjectType`, `tenantId`, and for a user `uid` and,
 * for a member of a request group that is not its lead, `scopedOnly`.
 */
export function subjectFromRecord(data: Readonly<Record<string, unknown>>): Subject {
  const text = (v: unknown): string => (typeof v === "string" ? v : "");
  const tenantId = text(data.tenantId);
  if (data.subjectType === "tenant") return { type: "tenant", tenantId };
  return { type: "user", uid: text(data.uid), tenantId, ...(data.scopedOnly === true ? { scopedOnly: true as const } : {}) };
}

/** How a request stores its subject (the inverse of `subjectFromRecord`). */
export function subjectRecord(subject: Subject): Record<string, string | boolean> {
  if (subject.type === "tenant") return { subjectType: "tenant", tenantId: subject.tenantId };
  return { subjectType: "user", uid: subject.uid, tenantId: subject.tenantId, ...(subject.scopedOnly === true ? { scopedOnly: true } : {}) };
}

/** A tenant's closure needs a second staff member's approval before anything is hidden; a user's erasure does not. */
export const needsApproval = (subject: Subject): boolean => subject.type === "tenant";

/** The grace and due periods of a request starting at `startMs` (its opening, or a closure's approval). */
export function requestPeriods(subject: Subject, startMs: number, policy: PolicyIndex): { graceEndsAtMs: number; dueAtMs: number } {
  const classId = requestClassOf(subject, policy);
  const cls = policy.classById(classId);
  if (!cls || cls.dueDays === undefined) {
    throw new Error(`registry ${policy.version}: class ${classId} with dueDays is required for deletion requests`);
  }
  return { graceEndsAtMs: startMs + (cls.graceDays ?? 0) * DAY_MS, dueAtMs: startMs + cls.dueDays * DAY_MS };
}

/** The class whose grace and due periods govern a request: the registry's, else `user-delete` for a user, `tenant-account` for a scope. */
export function requestClassOf(subject: Subject, policy: PolicyIndex): string {
  const named = subject.type === "user" ? policy.registry.subjects?.user.requestClass : policy.registry.subjects?.scope?.requestClass;
  return named ?? (subject.type === "user" ? USER_DELETE_CLASS : TENANT_CLOSURE_CLASS);
}

/**
 * A new deletion request. Grace and due periods come from the subject's class (`requestClassOf`), so a change
 * of policy (a new registry version) changes them for new requests only: the request records its version.
 * A tenant's closure opens AWAITING_APPROVAL, with no periods yet: they start when a second staff member
 * approves it (`approveDecision`).
 */
export function newDeletionRequest(
  args: { requestId: string; subject: Subject; requestedBy: string; source: RequestSource; reason?: string; nowMs: number },
  policy: PolicyIndex,
): DeletionRequest {
  const periods = requestPeriods(args.subject, args.nowMs, policy);
  const awaiting = needsApproval(args.subject);
  return {
    requestId: args.requestId,
    subject: args.subject,
    requestedBy: args.requestedBy,
    state: awaiting ? "AWAITING_APPROVAL" : "PENDING",
    source: args.source,
    ...(args.reason !== undefined && args.reason !== "" ? { reason: args.reason } : {}),
    requestedAtMs: args.nowMs,
    graceEndsAtMs: awaiting ? null : periods.graceEndsAtMs,
    dueAtMs: awaiting ? null : periods.dueAtMs,
    policyVersion: policy.version,
    timeline: [{ atMs: args.nowMs, event: "REQUESTED", detail: `source ${args.source}` }],
    softDeleted: 0,
  };
}

/** Who asks to cancel: their uid, and whether they hold the retention-admin role. */
export interface Canceller {
  uid: string;
  retentionAdmin: boolean;
}

/**
 * Who may cancel: a user's erasure only by that user; a tenant's closure by any retention-admin (the role that
 * opens closures: a cancel destroys nothing, so one person suffices, and the opener may be away).
 */
export function mayCancel(req: Pick<DeletionRequest, "subject" | "requestedBy">, caller: Canceller): boolean {
  return req.subject.type === "tenant" ? caller.retentionAdmin : requestOwner(req) === caller.uid;
}

/**
 * Whether the caller may cancel now, read in the same transaction that writes the outcome. Cancelling is
 * idempotent: a request already CANCELLED reports "already-cancelled", and one CANCELLING (its restore was
 * interrupted) reports "resume", so a retried call finishes the restore instead of failing. A closure still
 * awaiting its approval is "withdraw"n: nothing was hidden, so there is nothing to restore.
 * Errors: NOT_OWNER (permission-denied: see `mayCancel`); ALREADY_PROCESSING when the purge has taken the
 * request (its lease is live, or a round started) while the caller's clock is still inside the grace period;
 * GRACE_EXPIRED once the grace period is over (both failed-precondition).
 */
export function cancelDecision(
  req: Pick<DeletionRequest, "subject" | "requestedBy" | "state" | "graceEndsAtMs">,
  caller: Canceller,
  nowMs: number,
  purgeLeaseLive: boolean,
): "cancel" | "resume" | "already-cancelled" | "withdraw" {
  if (!mayCancel(req, caller)) {
    throw permissionDenied("NOT_OWNER", req.subject.type === "tenant" ? "Only a retention-admin may cancel a tenant's closure." : "Only the owner of a deletion request may cancel it.");
  }
  if (req.state === "CANCELLED") return "already-cancelled";
  if (req.state === "CANCELLING") return "resume";
  if (req.state === "AWAITING_APPROVAL") return "withdraw";
  if (isGraceOver(req, nowMs)) {
    throw preconditionFailed("GRACE_EXPIRED", "The grace period is over; the request can no longer be cancelled.", {
      graceEndsAt: new Date(req.graceEndsAtMs ?? 0).toISOString(),
      state: req.state,
    });
  }
  if (req.state !== "PENDING" || purgeLeaseLive) {
    throw preconditionFailed("ALREADY_PROCESSING", "The erasure has already started and can no longer be cancelled.", { state: req.state });
  }
  return "cancel";
}

/**
 * What approving a tenant's closure does, read in the transaction that writes it. The two-person rule: the
 * staff member who opened the closure can never approve it (TWO_PERSON_RULE, permission-denied). A closure
 * awaiting approval is approved: its grace and due periods start now. Approving again, by the same approver,
 * is idempotent ("already-approved": the caller resumes the soft delete); anything else is
 * NOT_AWAITING_APPROVAL (failed-precondition: approved by someone else, withdrawn or cancelled).
 */
export function approveDecision(
  req: Pick<DeletionRequest, "subject" | "requestedBy" | "state" | "approvedBy">,
  approverUid: string,
  nowMs: number,
  policy: PolicyIndex,
): { kind: "approve"; graceEndsAtMs: number; dueAtMs: number } | { kind: "already-approved" } {
  if (req.requestedBy === approverUid) {
    throw permissionDenied("TWO_PERSON_RULE", "A tenant's closure needs a second person: the staff member who requested it cannot approve it.");
  }
  if (req.state === "AWAITING_APPROVAL") return { kind: "approve", ...requestPeriods(req.subject, nowMs, policy) };
  if (req.approvedBy === approverUid) return { kind: "already-approved" };
  throw preconditionFailed("NOT_AWAITING_APPROVAL", "This closure is not awaiting approval.", { state: req.state });
}

/** A cancellation of a subject's earlier request, for the request/cancel cooldown. */
export interface PastCancellation {
  cancelledAtMs: number;
}

/** How far back cancellations count towards the cooldown, and its bounds. */
export const COOLDOWN_WINDOW_MS = 30 * DAY_MS;
export const COOLDOWN_MAX_MS = 7 * DAY_MS;

/**
 * The request/cancel cooldown. Each request soft-deletes the subject's whole data and each cancel restores
 * it, so a loop of the two is an abuse of the service's write budget. After a cancel a new request from the
 * same user waits `baseMs`, doubled for every further cancel in the last 30 days, up to 7 days. Returns
 * when a new request is allowed again (null: now). The Auth backstop is never held back (the account is
 * already gone), and neither are staff.
 */
export function requestCooldownUntil(cancellations: readonly PastCancellation[], baseMs: number, nowMs: number): number | null {
  const recent = cancellations.filter((c) => nowMs - c.cancelledAtMs < COOLDOWN_WINDOW_MS);
  if (recent.length === 0 || baseMs <= 0) return null;
  const last = Math.max(...recent.map((c) => c.cancelledAtMs));
  const wait = Math.min(COOLDOWN_MAX_MS, baseMs * 2 ** (recent.length - 1));
  return last + wait > nowMs ? last + wait : null;
}

/** Throws REQUEST_COOLDOWN (resource-exhausted) while a user's new request must wait. */
export function assertNoCooldown(cancellations: readonly PastCancellation[], baseMs: number, nowMs: number): void {
  const until = requestCooldownUntil(cancellations, baseMs, nowMs);
  if (until !== null) {
    throw new DomainError("resource-exhausted", "REQUEST_COOLDOWN", "A deletion request was cancelled recently; ask again later.", {
      retryAfter: new Date(until).toISOString(),
    });
  }
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
 * (state-machine checked) and leaves every product read. Held documents (`held`: holds/rules.ts#isHeld) stay
 * as they are (holds win), and
 * so does data already in another part of its lifecycle, which this request must not claim: a cancel
 * restores only what the request itself moved.
 */
export function softDeleteOutcome(
  doc: GovernedFields,
  marks: SoftDeleteMarks,
  requestId: string,
  held: boolean,
  nowMs: number,
): SoftDeleteOutcome {
  if (doc.lifecycleState === "SOFT_DELETED" && marks.deletionRequestId === requestId) return { kind: "already" };
  if (held) return { kind: "held" };
  if (doc.lifecycleState !== "ACTIVE") return { kind: "not-active", state: doc.lifecycleState };
  assertTransition(doc.lifecycleState, "SOFT_DELETED");
  return {
    kind: "move",
    fields: { ...doc, lifecycleState: "SOFT_DELETED" },
    marks: { softDeletedAtMs: nowMs, preDeleteState: doc.lifecycleState, deletionRequestId: requestId },
  };
}

/**
 * The timeline after one batch of a soft-delete pass moved `moved` documents. A pass keeps one SOFT_DELETED entry:
 * `inEntry` is what that entry counts so far (0 before the pass's first move). The entry is brought up to date only if
 * it is still exactly what the pass last wrote (the last one, SOFT_DELETED, at the pass's time, with its count); an
 * entry another writer added since (an officer's extension) ends it, and the batch starts a new one counting only its
 * own documents. `merged`: whether the pass's entry was brought up to date.
 */
export function softDeletedTimeline(
  timeline: readonly TimelineEntry[],
  inEntry: number,
  moved: number,
  nowMs: number,
): { timeline: TimelineEntry[]; merged: boolean } {
  const last = timeline[timeline.length - 1];
  const merged = inEntry > 0 && last?.event === "SOFT_DELETED" && last.atMs === nowMs && last.detail === softDeletedDetail(inEntry);
  const entry = { atMs: nowMs, event: "SOFT_DELETED", detail: softDeletedDetail((merged ? inEntry : 0) + moved) };
  return { timeline: [...(merged ? timeline.slice(0, -1) : timeline), entry], merged };
}

const softDeletedDetail = (n: number): string => `${n} documents`;

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

/**
 * What an erasure replay does with the request id the erasure ledger names, in a restored database:
 * - `create`: the request is not there (the backup predates it): open it again under the same id, its grace
 *   already served;
 * - `end-grace`: it is there and PENDING (the backup was taken in its grace), or a tenant's closure still
 *   AWAITING_APPROVAL (the backup predates the second person's approval, which the ledger's entry proves was
 *   given): it becomes PENDING with its grace ended now;
 * - `take`: it is under way (PROCESSING, BLOCKED, RETAINED_UNDER_HOLD): the purge takes it as it would anyway;
 * - `closed`: CANCELLING, CANCELLED or PURGED under that id, which the ledger's PURGED request cannot have been
 *   in a copy of its own past: the operator must look (nothing is done).
 */
export function replayAction(state: RequestState | null): "create" | "end-grace" | "take" | "closed" {
  if (state === null) return "create";
  if (state === "PENDING" || state === "AWAITING_APPROVAL") return "end-grace";
  if (state === "PROCESSING" || state === "BLOCKED" || state === "RETAINED_UNDER_HOLD") return "take";
  return "closed";
}

/**
 * Who approved a tenant's closure that an erasure replay reopens: the erasure ledger, whose entry records a closure
 * that was approved and carried out (not the replaying operator, who would read as requester and approver at once).
 */
export const REPLAY_APPROVER = "erasure-ledger";

/**
 * A request opened again by an erasure replay: the subject already had its grace period, so it ends at once, and
 * a tenant's closure already had its two approvals (the ledger's entry is their outcome), so it opens PENDING.
 */
export function replayedDeletionRequest(args: { requestId: string; subject: Subject; requestedBy: string; nowMs: number }, policy: PolicyIndex): DeletionRequest {
  const r = newDeletionRequest({ ...args, source: "erasure-replay" }, policy);
  return {
    ...r,
    state: "PENDING",
    graceEndsAtMs: args.nowMs,
    dueAtMs: args.nowMs,
    ...(needsApproval(args.subject) ? { approvedBy: REPLAY_APPROVER, approvedAtMs: args.nowMs } : {}),
    timeline: [{ atMs: args.nowMs, event: "REPLAYED", detail: "erasure ledger: erased before a restore" }],
  };
}
