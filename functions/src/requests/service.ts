import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { FieldValue, type DocumentData, type DocumentReference, type DocumentSnapshot } from "firebase-admin/firestore";
import { hashCanonical } from "../kernel/canonical";
import {
  approveDecision,
  assertNoCooldown,
  assertRequestMove,
  cancelDecision,
  CLOSURE_HANDLES_USERS_STATES,
  HANDLED_REQUEST_STATES,
  newDeletionRequest,
  OPEN_REQUEST_STATES,
  parseRequestState,
  replayAction,
  replayedDeletionRequest,
  REPLAY_APPROVER,
  restoreOutcome,
  softDeleteOutcome,
  softDeletedTimeline,
  subjectFromRecord,
  subjectRecord,
  type Canceller,
  type DeletionRequest,
  type RequestSource,
  type RequestState,
  type SoftDeleteMarks,
  type TimelineEntry,
} from "./rules/requests";
import { groupSubjects } from "./rules/group";
import { clockDueAtMs, type LegalClock } from "./rules/legal-clock";
import { clocksForNewRequests, legalClockFromFirestore, legalClockToFirestore } from "./legal-clock";
import { isHeld, type ActiveHoldRef } from "../kernel/held";
import { notFound } from "../kernel/errors";
import { TENANT_CLOSURE_FIELD, TENANT_CLOSURE_REASON } from "../kernel/visibility";
import type { Actor, EvidenceBody } from "../evidence/rules";
import { isLifecycleState } from "../kernel/lifecycle";
import { segments, sortedUnique } from "../kernel/paths";
import { discoverSubject } from "../plan/index";
import type { Subject } from "../plan/rules";
import { DEFAULT_PAGE_SIZE, pageGoverned, governedToFirestore, readGovernedStrict, toMs, toTimestamp } from "../platform/governed-doc";
import { COLLECTIONS, currentCell, db } from "../platform/firestore";
import { activeHolds } from "../holds/index";
import { leaseState } from "../platform/lease";
import { log } from "../platform/logs";
import { policy, registryPolicy } from "../platform/registry";
import { PRIMARY_CELL } from "../kernel/policy";
import { settings } from "../platform/settings";

/** Documents changed per transaction by a soft delete or a restore. */
const REQUEST_BATCH = 200;
/** Paths a soft-delete pass gathers before it moves them (10 transactions; about 80 bytes a path). */
const PASS_CHUNK = 2_000;
/** Descendants per page a soft-delete pass reads (each page read whole, so no query is open while it moves). */
const PASS_PAGE = 2_000;

const requestsCol = () => db().collection(COLLECTIONS.deletionRequests);

/** Every request of a subject: a user's by uid, a tenant's closures by tenant (equality filters only: no composite index). */
const requestsOf = (subject: Subject) =>
  subject.type === "user" ? requestsCol().where("uid", "==", subject.uid) : requestsCol().where("subjectType", "==", "tenant").where("tenantId", "==", subject.tenantId);

export function requestToFirestore(r: DeletionRequest): Record<string, unknown> {
  return {
    requestId: r.requestId,
    // `subjectType`, `tenantId`, a user's `uid` (queried by the backstop and the audit) and a group member's `scopedOnly`.
    ...subjectRecord(r.subject),
    requestedBy: r.requestedBy,
    state: r.state,
    source: r.source,
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    requestedAt: toTimestamp(r.requestedAtMs),
    ...(r.graceEndsAtMs !== null ? { graceEndsAt: toTimestamp(r.graceEndsAtMs) } : {}),
    ...(r.dueAtMs !== null ? { dueAt: toTimestamp(r.dueAtMs) } : {}),
    policyVersion: r.policyVersion,
    timeline: r.timeline.map(timelineToFirestore),
    softDeleted: r.softDeleted,
    ...(r.manifestHash !== undefined ? { manifestHash: r.manifestHash } : {}),
    ...(r.approvedBy !== undefined ? { approvedBy: r.approvedBy } : {}),
    ...(r.approvedAtMs !== undefined ? { approvedAt: toTimestamp(r.approvedAtMs) } : {}),
    ...(r.groupId !== undefined ? { groupId: r.groupId } : {}),
    ...(r.legalClock !== undefined ? { legalClock: legalClockToFirestore(r.legalClock) } : {}),
  };
}

const timelineToFirestore = (t: TimelineEntry) => ({ at: toTimestamp(t.atMs), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}) });

/** The subject of a stored deletion request: a user (an account erasure), or a tenant (its closure). */
export const subjectOfRequest = (data: DocumentData): Subject => subjectFromRecord(data);

export function requestFromFirestore(snap: DocumentSnapshot): DeletionRequest {
  const d = snap.data() ?? {};
  const timeline = Array.isArray(d.timeline) ? (d.timeline as Record<string, unknown>[]) : [];
  const subject = subjectOfRequest(d);
  return {
    requestId: snap.id,
    subject,
    requestedBy: typeof d.requestedBy === "string" ? d.requestedBy : subject.type === "user" ? subject.uid : "",
    state: parseRequestState(d.state),
    source: (d.source as RequestSource) ?? "user",
    ...(typeof d.reason === "string" ? { reason: d.reason } : {}),
    requestedAtMs: toMs(d.requestedAt) ?? 0,
    graceEndsAtMs: toMs(d.graceEndsAt),
    dueAtMs: toMs(d.dueAt),
    policyVersion: String(d.policyVersion ?? ""),
    timeline: timeline.map((t) => ({
      atMs: toMs(t.at) ?? 0,
      event: String(t.event),
      ...(typeof t.detail === "string" ? { detail: t.detail } : {}),
    })),
    softDeleted: typeof d.softDeleted === "number" ? d.softDeleted : 0,
    ...(typeof d.manifestHash === "string" ? { manifestHash: d.manifestHash } : {}),
    ...(toMs(d.cancelledAt) !== null ? { cancelledAtMs: toMs(d.cancelledAt) ?? 0 } : {}),
    ...(typeof d.approvedBy === "string" ? { approvedBy: d.approvedBy } : {}),
    ...(toMs(d.approvedAt) !== null ? { approvedAtMs: toMs(d.approvedAt) ?? 0 } : {}),
    ...(typeof d.groupId === "string" ? { groupId: d.groupId } : {}),
    ...withClock(legalClockFromFirestore(d)),
  };
}

const withClock = (c: LegalClock | null): { legalClock?: LegalClock } => (c === null ? {} : { legalClock: c });

/** A new request on its legal clock: due when the clock says (a user's request never awaits an approval, so it has a due date from the start). */
const onClock = (r: DeletionRequest, c: LegalClock | null | undefined): DeletionRequest => (c ? { ...r, dueAtMs: clockDueAtMs(c), legalClock: c } : r);

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * The other governed databases a new request of record opens a cell request in: those whose part of the subject's
 * data map is not empty (kernel/policy.ts#cellsReaching). None for a request opened inside a cell (a restored copy's
 * replay) or under a registry with one database.
 */
function cellsOfNewRecord(subject: Subject): string[] {
  return currentCell() === PRIMARY_CELL ? registryPolicy().cellsReaching(subject.type) : [];
}

/** The tenant's document, where a closure is recorded (TENANT_CLOSURE_FIELD). */
/** A scope's own record (the registry's `subjects.scope.record`), where its closure is recorded. */
function tenantRef(tenantId: string) {
  const path = policy().scopeRecordPath(tenantId);
  if (path === null) throw new Error(`a request for scope ${tenantId}, but the registry declares no scope kind`);
  return db().doc(path);
}

/** Why a request soft-deletes: a tenant's closure, or a user's erasure. */
const softDeleteReason = (req: Pick<DeletionRequest, "subject">): string => (req.subject.type === "tenant" ? TENANT_CLOSURE_REASON : "DELETION_REQUEST");

export async function readRequest(requestId: string): Promise<DeletionRequest> {
  const snap = await requestsCol().doc(requestId).get();
  if (!snap.exists) throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
  return requestFromFirestore(snap);
}

export interface OpenRequestInput {
  /** A user (their own account, or the Auth backstop's) or a tenant (its closure, opened by staff). */
  subject: Subject;
  source: RequestSource;
  reason?: string;
  actor: Actor;
  nowMs: number;
  /** The Auth trigger's event id, recorded with the request and in evidence. */
  eventId?: string;
}

/** A user's erasure in the scopes the registry found them in (requests/subjects.ts): one request, or a group. */
export interface OpenUserErasureInput extends Omit<OpenRequestInput, "subject"> {
  uid: string;
  /** Every scope the user is erased in ([""] in an app without scopes). */
  scopes: readonly string[];
}

/** What opening returns: the request the caller names (a group's lead), every member (one for a request on its own). */
export interface OpenedRequest {
  request: DeletionRequest;
  members: DeletionRequest[];
  created: boolean;
}

/** The members of the group a request belongs to, lead first, among a subject's requests (itself when it has none). */
function membersAmong(request: DeletionRequest, mine: readonly DeletionRequest[]): DeletionRequest[] {
  if (request.groupId === undefined) return [request];
  const group = mine.filter((r) => r.groupId === request.groupId);
  return sortMembers(group);
}

/** A group's members in their order: the lead (whose id is the group's), then by scope. */
export function sortMembers(members: readonly DeletionRequest[]): DeletionRequest[] {
  const lead = (r: DeletionRequest) => (r.requestId === r.groupId ? 0 : 1);
  return [...members].sort((a, b) => lead(a) - lead(b) || (a.subject.tenantId < b.subject.tenantId ? -1 : a.subject.tenantId > b.subject.tenantId ? 1 : 0));
}

/**
 * Opens a deletion request for a subject (a user or a tenant), or returns the one that already covers it, then
 * soft-deletes the subject's data. A tenant's closure opens AWAITING_APPROVAL and hides nothing until a second
 * staff member approves it (`approveTenantClosure`). The look-up of the subject's requests is a query inside the transaction
 * that creates the new one; Firestore transactions are serializable, so two concurrent calls cannot both create.
 * - a user's own call gets any open request back (OPEN_REQUEST_STATES), a whole group when it is one; after a
 *   cancel, a new request waits out the request/cancel cooldown (REQUEST_COOLDOWN);
 * - the Auth backstop also treats a PURGED request as handled (the purge deletes the Auth account itself), and
 *   so is a closure of the user's tenant that the purge has taken (it deletes its users' accounts); it
 *   is never held back by the cooldown, and first finishes a cancel still restoring the data (CANCELLING),
 *   so that the restore cannot undo the new request's soft delete.
 * Running it again is how an interrupted soft delete is completed.
 */
export async function openDeletionRequest(input: OpenRequestInput): Promise<{ request: DeletionRequest; created: boolean }> {
  const { request, created } = await openRequests([input.subject], input);
  return { request, created };
}

/**
 * Opens a user's erasure in every scope the registry found them in: one request for one scope (or none, in an app
 * without scopes), else a request group (requests/rules/group.ts): one request per scope, created together in one
 * transaction with the group's id (its lead's request id) on each and DELETION_REQUESTED evidence per member, in
 * the lead's chain. Two concurrent calls open one group: the transaction that creates it reads the user's
 * requests, and the second finds the first's. Everything else is `openDeletionRequest`'s. TOO_MANY_SCOPES past
 * GROUP_MAX_SCOPES, before anything is read or written.
 */
export async function openUserErasure(input: OpenUserErasureInput): Promise<OpenedRequest> {
  return openRequests(groupSubjects(input.uid, input.scopes), input);
}

async function openRequests(subjects: readonly Subject[], input: Omit<OpenRequestInput, "subject">): Promise<OpenedRequest> {
  const backstop = input.source === "auth-backstop";
  const states: readonly RequestState[] = backstop ? HANDLED_REQUEST_STATES : OPEN_REQUEST_STATES;
  const first = subjects[0];
  if (!first) throw new Error("a deletion request needs a subject");
  // Each request's legal clock starts at its opening; the law is decided per scope (docs/decisions/0040-legal-clocks-and-access.md).
  const startedClocks = await clocksForNewRequests(subjects, input.nowMs);
  const clockOf = new Map(subjects.map((s, i) => [s.tenantId, startedClocks[i]]));
  for (;;) {
    const outcome = await db().runTransaction(async (tx) => {
      const mine = (await tx.get(requestsOf(first))).docs.map(requestFromFirestore);
      const existing = mine.filter((r) => states.includes(r.state)).sort((a, b) => a.requestedAtMs - b.requestedAtMs);
      if (existing.length > 0) return { kind: "existing", members: membersAmong(existing[0]!, mine) } as const;
      let open: readonly Subject[] = subjects;
      if (backstop && first.type === "user") {
        // A closure the purge has taken erases its users' data and deletes their accounts: that scope is handled.
        const free: string[] = [];
        let handledBy: DeletionRequest | undefined;
        for (const s of subjects) {
          const closures = (await tx.get(requestsOf({ type: "tenant", tenantId: s.tenantId }))).docs.map(requestFromFirestore);
          const closure = closures.find((r) => CLOSURE_HANDLES_USERS_STATES.includes(r.state));
          if (closure) handledBy ??= closure;
          else free.push(s.tenantId);
        }
        if (free.length === 0 && handledBy) return { kind: "existing", members: [handledBy] } as const;
        if (handledBy) open = groupSubjects(first.uid, free);
      }
      const cancelling = mine.filter((r) => r.state === "CANCELLING");
      if (cancelling.length > 0 && backstop) return { kind: "finish-cancel", requestIds: cancelling.map((r) => r.requestId) } as const;
      if (!backstop && input.source === "user") {
        // A group's cancel is one cancel: its members count once.
        const cancelled = new Map<string, number>();
        for (const r of mine.filter((x) => x.state === "CANCELLED" || x.state === "CANCELLING")) cancelled.set(r.groupId ?? r.requestId, r.cancelledAtMs ?? r.requestedAtMs);
        assertNoCooldown([...cancelled.values()].map((cancelledAtMs) => ({ cancelledAtMs })), settings.requestCooldownMs(), input.nowMs);
      }
      const refs = open.map(() => requestsCol().doc());
      const lead = refs[0]!;
      const groupId = open.length > 1 ? lead.id : undefined;
      const evidence = await openEvidence(tx, lead.id);
      const members = open.map((subject, i) => ({
        ...onClock(newDeletionRequest({ requestId: refs[i]!.id, subject, requestedBy: input.actor.id, source: input.source, reason: input.reason, nowMs: input.nowMs }, policy()), clockOf.get(subject.tenantId)),
        ...(groupId !== undefined ? { groupId } : {}),
      }));
      members.forEach((request, i) => {
        // A request of record lists its cells in the transaction that creates it, so nothing derived from it (its
        // state, its "fully gone by", the Auth account) can ever read it as one database's alone (requests/cells.ts).
        const cells = cellsOfNewRecord(request.subject);
        tx.create(refs[i]!, { ...requestToFirestore(request), ...(input.eventId ? { sourceEventId: input.eventId } : {}), ...(cells.length > 0 ? { cells, cellsOutstanding: true } : {}) });
        evidence.append({
          action: backstop ? "BACKSTOP_REQUEST_OPENED" : "DELETION_REQUESTED",
          actor: input.actor,
          decision: { reason: backstop ? "AUTH_ACCOUNT_DELETED" : request.subject.type === "tenant" ? TENANT_CLOSURE_REASON : "SUBJECT_REQUEST", source: input.source },
          policyVersion: request.policyVersion,
          atMs: input.nowMs,
          requestId: request.requestId,
          eventId: input.eventId ?? null,
          ...(request.graceEndsAtMs !== null ? { counts: { graceDays: Math.round((request.graceEndsAtMs - request.requestedAtMs) / 86_400_000) } } : {}),
          // The user's own words are personal data: evidence keeps only a hash of them.
          detail: {
            tenantId: request.subject.tenantId,
            subjectType: request.subject.type,
            state: request.state,
            graceEndsAt: isoOrNull(request.graceEndsAtMs),
            dueAt: isoOrNull(request.dueAtMs),
            ...(request.legalClock ? { law: request.legalClock.law } : {}),
            ...(input.reason ? { reasonHash: hashCanonical({ reason: input.reason }) } : {}),
            // A member of a request group: the group (its lead's id), its size, and whether it leaves the uid-only entries to the lead.
            ...(groupId !== undefined ? { groupId, groupSize: members.length, scopedOnly: request.subject.type === "user" && request.subject.scopedOnly === true } : {}),
          },
        });
      });
      return { kind: "created", members } as const;
    }, EVIDENCE_TX);
    if (outcome.kind === "finish-cancel") {
      for (const requestId of outcome.requestIds) await finishCancel(requestId, input.actor, input.nowMs);
      continue;
    }
    const created = outcome.kind === "created";
    if (created) {
      for (const m of outcome.members) log.info(backstop ? "deletion.backstop.opened" : "deletion.requested", { requestId: m.requestId, ...(m.groupId !== undefined ? { groupId: m.groupId } : {}) });
    }
    const members: DeletionRequest[] = [];
    for (const m of outcome.members) {
      const moved = m.state === "PENDING" ? await softDeleteSubjectData(m.requestId, input.actor, input.nowMs) : 0;
      members.push({ ...m, softDeleted: m.softDeleted + moved });
    }
    return { request: members[0]!, members, created };
  }
}

/**
 * A second staff member approves a tenant's closure (the two-person rule: `approveDecision`). One transaction
 * moves the request AWAITING_APPROVAL -> PENDING with its grace and due periods starting now, records the
 * closure on the tenant's document (TENANT_CLOSURE_FIELD, reason TENANT_CLOSURE) and writes
 * TENANT_CLOSURE_APPROVED evidence: from that commit the security rules and the product's reads hide all of the
 * tenant's data, whatever each document's own state. Then the tenant's data map is soft-deleted in batches
 * (reason TENANT_CLOSURE). Nothing is deleted. Approving again, as the same approver, resumes an interrupted
 * soft delete. Errors: REQUEST_NOT_FOUND (no such closure: a user's erasure is not one), TWO_PERSON_RULE,
 * NOT_AWAITING_APPROVAL.
 */
export async function approveTenantClosure(requestId: string, approver: Actor, nowMs: number): Promise<{ request: DeletionRequest; approved: boolean }> {
  const requestRef = requestsCol().doc(requestId);
  const outcome = await db().runTransaction(async (tx) => {
    const snap = await tx.get(requestRef);
    const req = snap.exists ? requestFromFirestore(snap) : null;
    if (!req || req.subject.type !== "tenant") throw notFound("REQUEST_NOT_FOUND", "No such tenant closure.");
    const decision = approveDecision(req, approver.id, nowMs, policy());
    if (decision.kind === "already-approved") return { request: req, approved: false };
    assertRequestMove(req.state, "PENDING");
    const tenant = await tx.get(tenantRef(req.subject.tenantId));
    const evidence = await openEvidence(tx, requestId);
    const approved: DeletionRequest = {
      ...req,
      state: "PENDING",
      graceEndsAtMs: decision.graceEndsAtMs,
      dueAtMs: decision.dueAtMs,
      approvedBy: approver.id,
      approvedAtMs: nowMs,
      timeline: [...req.timeline, { atMs: nowMs, event: "APPROVED", detail: `grace until ${new Date(decision.graceEndsAtMs).toISOString()}` }],
    };
    tx.update(requestRef, {
      state: "PENDING",
      graceEndsAt: toTimestamp(decision.graceEndsAtMs),
      dueAt: toTimestamp(decision.dueAtMs),
      approvedBy: approver.id,
      approvedAt: toTimestamp(nowMs),
      timeline: approved.timeline.map(timelineToFirestore),
    });
    // A tenant without a document has nothing to mark: the rules and the product's reads show such a tenant nothing.
    if (tenant.exists) tx.update(tenant.ref, { [TENANT_CLOSURE_FIELD]: { requestId, reason: TENANT_CLOSURE_REASON, closedAt: toTimestamp(nowMs) } });
    evidence.append({
      action: "TENANT_CLOSURE_APPROVED",
      actor: approver,
      decision: { reason: TENANT_CLOSURE_REASON, requestedBy: req.requestedBy },
      policyVersion: policy().version,
      atMs: nowMs,
      requestId,
      counts: { graceDays: Math.round((decision.graceEndsAtMs - nowMs) / 86_400_000) },
      detail: {
        tenantId: req.subject.tenantId,
        graceEndsAt: new Date(decision.graceEndsAtMs).toISOString(),
        dueAt: new Date(decision.dueAtMs).toISOString(),
        tenantDocument: tenant.exists,
      },
    });
    return { request: approved, approved: true };
  }, EVIDENCE_TX);
  if (outcome.approved) log.info("deletion.closure.approved", { requestId });
  if (outcome.request.state !== "PENDING") return outcome;
  const moved = await softDeleteSubjectData(requestId, approver, nowMs);
  return { ...outcome, request: { ...outcome.request, softDeleted: outcome.request.softDeleted + moved } };
}

/**
 * Opens again, in the database `db()` names (a restored copy), the deletion request the erasure ledger names for
 * a subject found there, so the normal purge erases it again (requests/rules/requests.ts#replayAction): created
 * under the same id with its grace over, or its grace ended now, with ERASURE_REPLAY_OPENED evidence; then the
 * subject's data is soft-deleted as for any request. A request already under way is left to the purge; a
 * closed one is reported, not touched. Idempotent: a second call finds the request open with its grace over.
 */
export async function reopenErasedSubject(input: { requestId: string; subject: Subject; actor: Actor; nowMs: number }): Promise<{ action: ReturnType<typeof replayAction>; state: RequestState }> {
  const ref = requestsCol().doc(input.requestId);
  const result = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const current = snap.exists ? requestFromFirestore(snap) : null;
    const action = replayAction(current?.state ?? null);
    if (action === "take" || action === "closed") return { action, state: current!.state };
    if (action === "end-grace" && current!.state === "PENDING" && current!.graceEndsAtMs !== null && current!.graceEndsAtMs <= input.nowMs) return { action: "take" as const, state: current!.state };
    // A closed tenant is hidden again from the replay's commit, as its approval hid it in the original.
    const tenant = input.subject.type === "tenant" ? await tx.get(tenantRef(input.subject.tenantId)) : null;
    const evidence = await openEvidence(tx, input.requestId);
    const request = current ?? replayedDeletionRequest({ requestId: input.requestId, subject: input.subject, requestedBy: input.actor.id, nowMs: input.nowMs }, policy());
    if (current) {
      const approving = current.state === "AWAITING_APPROVAL";
      if (approving) assertRequestMove(current.state, "PENDING");
      tx.update(ref, {
        graceEndsAt: toTimestamp(input.nowMs),
        // The approval is the erasure ledger's (it records a closure that was approved and carried out), not the
        // replaying operator's: naming them would read as one person both requesting and approving.
        ...(approving ? { state: "PENDING", dueAt: toTimestamp(input.nowMs), approvedBy: REPLAY_APPROVER, approvedAt: toTimestamp(input.nowMs) } : {}),
        timeline: [...current.timeline, { atMs: input.nowMs, event: "REPLAYED", detail: "erasure ledger: grace ended, erased before a restore" }].map(timelineToFirestore),
      });
    } else {
      // Opened again in a restored copy of another cell than the primary: a cell request, whose Auth account is the
      // primary's business (finalize leaves it), released at once (the ledger's entry is the authority).
      tx.create(ref, { ...requestToFirestore(request), ...(currentCell() === PRIMARY_CELL ? {} : { cellOf: PRIMARY_CELL, softDeleteDone: false }) });
    }
    // Closed again from this commit; a closure already recorded (a restore taken in its grace) keeps its own time.
    if (tenant?.exists && tenant.get(`${TENANT_CLOSURE_FIELD}.requestId`) !== input.requestId) {
      tx.update(tenant.ref, { [TENANT_CLOSURE_FIELD]: { requestId: input.requestId, reason: TENANT_CLOSURE_REASON, closedAt: toTimestamp(input.nowMs) } });
    }
    evidence.append({
      action: "ERASURE_REPLAY_OPENED",
      actor: input.actor,
      decision: { reason: "ERASURE_LEDGER", replay: action, ...(current?.state === "AWAITING_APPROVAL" ? { approvedByLedger: true } : {}) },
      policyVersion: request.policyVersion,
      atMs: input.nowMs,
      requestId: input.requestId,
      detail: { subjectType: input.subject.type, tenantId: input.subject.tenantId },
    });
    return { action, state: "PENDING" as RequestState };
  }, EVIDENCE_TX);
  if (result.action === "create" || result.action === "end-grace") log.info("erasure.replay.reopened", { requestId: input.requestId, action: result.action });
  if (result.state === "PENDING") await softDeleteSubjectData(input.requestId, input.actor, input.nowMs);
  return result;
}

function marksOf(data: Record<string, unknown> | undefined): SoftDeleteMarks {
  const pre = data?.preDeleteState;
  return {
    softDeletedAtMs: toMs(data?.softDeletedAt),
    preDeleteState: isLifecycleState(pre) ? pre : null,
    deletionRequestId: typeof data?.deletionRequestId === "string" ? data.deletionRequestId : null,
  };
}

/** A soft-delete pass's chunk and subtree page sizes (tests make them small to cross their edges), and a test seam. */
export interface PassOptions {
  chunk?: number;
  page?: number;
  /** Fault-injection seam for tests: runs before each chunk moves (0 first), as a hold placed meanwhile would. */
  beforeChunk?: (chunk: number) => Promise<void>;
}

/**
 * Moves every `delete`, `mask` and `archive` document in the subject's data map to SOFT_DELETED, in batches of
 * one transaction each (re-reading the request, so a request cancelled or taken by the purge meanwhile stops
 * the pass). Each batch carries its own evidence with the paths it moved, and the reason (TENANT_CLOSURE for
 * a tenant's closure). Returns how many moved.
 *
 * The request's timeline gets one SOFT_DELETED entry for the pass, its count brought up to date by each batch, rather
 * than one entry per batch: a tenant of millions of documents would have pushed the request past Firestore's 1 MiB
 * document limit, and every batch rewrote the whole timeline. An entry another writer adds meanwhile (an officer's
 * extension) ends it: the next batch starts a new one, which counts from there.
 *
 * Memory stays flat however large the subject: discovery is gathered a chunk of PASS_CHUNK paths at a time, which
 * moves before the next is read. Discovery reads everything a page at a time with `get()` (entry queries by
 * pageGoverned, subtrees in pages of PASS_PAGE), so no query is open while a chunk moves: a streamed query left
 * waiting through slow transactions could meet its deadline and fail the pass halfway. The active holds are read again
 * for each chunk, so a hold placed during the pass is seen by the next chunk even before its flags reach the
 * documents (a flagged document is held by its own marks in any case).
 *
 * A path two data-map entries reach may come in two chunks: the second finds it already moved by this request and
 * leaves it (softDeleteOutcome, "already"), at the price of one more read. A held one is counted in the `heldSkipped`
 * of each batch's evidence that met it, so the sum of those over a pass may count it twice.
 */
export async function softDeleteSubjectData(requestId: string, actor: Actor, nowMs: number, opts: PassOptions = {}): Promise<number> {
  const chunkSize = opts.chunk ?? PASS_CHUNK;
  const requestRef = requestsCol().doc(requestId);
  const request = requestFromFirestore(await requestRef.get());
  const entries = new Map(policy().dataMapOf(request.subject).map((e) => [e.id, e]));
  let moved = 0;
  /** What this pass's timeline entry counts so far (0: the pass has none yet). */
  let inEntry = 0;
  let chunks = 0;
  /** Moves one chunk of discovered paths; false once the request is no longer PENDING. */
  const move = async (chunk: readonly string[]): Promise<boolean> => {
    if (chunk.length === 0) return true;
    await opts.beforeChunk?.(chunks++);
    const paths = sortedUnique(chunk);
    const holds = await activeHolds();
    for (let i = 0; i < paths.length; i += REQUEST_BATCH) {
      const r = await softDeleteBatch(requestRef, paths.slice(i, i + REQUEST_BATCH), holds, actor, nowMs, inEntry);
      if (r === null) return false;
      moved += r.moved;
      if (r.moved > 0) inEntry = r.merged ? inEntry + r.moved : r.moved;
    }
    return true;
  };
  let chunk: string[] = [];
  for await (const d of discoverSubject(request.subject, DEFAULT_PAGE_SIZE, { segment: opts.page ?? PASS_PAGE, read: "pages" })) {
    const action = entries.get(d.entryId)?.action;
    if (action !== "delete" && action !== "mask" && action !== "archive") continue;
    chunk.push(d.path);
    if (chunk.length < chunkSize) continue;
    if (!(await move(chunk))) return moved;
    chunk = [];
  }
  await move(chunk);
  return moved;
}

/**
 * One transaction of a soft-delete pass: moves the batch's unheld documents and records them. `inEntry`: what this
 * pass's timeline entry counts so far, which this batch brings up to date if that entry is still the last one
 * (`merged`). Null when the request is no longer PENDING.
 */
async function softDeleteBatch(
  requestRef: DocumentReference,
  batch: readonly string[],
  holds: readonly ActiveHoldRef[],
  actor: Actor,
  nowMs: number,
  inEntry: number,
): Promise<{ moved: number; merged: boolean } | null> {
  return db().runTransaction(async (tx) => {
    const req = requestFromFirestore(await tx.get(requestRef));
    if (req.state !== "PENDING") return null;
    const snaps = await tx.getAll(...batch.map((p) => db().doc(p)));
    const evidence = await openEvidence(tx, requestRef.id);
    const movedPaths: string[] = [];
    let held = 0;
    for (const s of snaps) {
      const g = readGovernedStrict(s.data());
      if (!g) continue;
      const out = softDeleteOutcome(g, marksOf(s.data()), requestRef.id, isHeld({ path: s.ref.path, ...g }, holds), nowMs);
      if (out.kind === "held") held++;
      if (out.kind !== "move") continue;
      tx.update(s.ref, {
        ...governedToFirestore(out.fields),
        softDeletedAt: toTimestamp(nowMs),
        preDeleteState: out.marks.preDeleteState,
        deletionRequestId: requestRef.id,
      });
      movedPaths.push(s.ref.path);
    }
    if (movedPaths.length === 0) return { moved: 0, merged: false };
    const { timeline, merged } = softDeletedTimeline(req.timeline, inEntry, movedPaths.length, nowMs);
    tx.update(requestRef, { softDeleted: req.softDeleted + movedPaths.length, timeline: timeline.map(timelineToFirestore) });
    evidence.append(requestEvidence("SUBJECT_SOFT_DELETED", req, actor, nowMs, movedPaths, { softDeleted: movedPaths.length, heldSkipped: held }));
    return { moved: movedPaths.length, merged };
  }, EVIDENCE_TX);
}

function requestEvidence(
  action: string,
  req: DeletionRequest,
  actor: Actor,
  nowMs: number,
  paths: string[] | undefined,
  counts: Record<string, number>,
): EvidenceBody {
  return {
    action,
    actor,
    decision: { reason: action === "DELETION_CANCELLED" || action === "DELETION_CANCEL_REQUESTED" ? "SUBJECT_CANCELLED" : softDeleteReason(req), state: req.state },
    policyVersion: policy().version,
    atMs: nowMs,
    requestId: req.requestId,
    ...(paths ? { paths } : {}),
    counts,
  };
}

export interface CancelOptions {
  /** Why staff cancelled a tenant's closure: kept on the request, hashed in evidence. */
  reason?: string;
  /** Documents per restore transaction. */
  restoreBatchSize?: number;
  /** Fault-injection seam for tests: runs before each restore batch; throwing stops the cancel there, as a crash would. */
  beforeRestoreBatch?: (batch: number) => void;
}

/**
 * Cancels a request. The owner's cancel moves the request PENDING -> CANCELLING in one transaction that reads
 * its state and its purge lease (a cancel and the purge cannot both win: see `cancelDecision`), with evidence.
 * Then every document carrying the request id (found by a collection-group query per governed collection,
 * whatever the data map says now) returns to its state before the request. Only when nothing is left to
 * restore does the request become CANCELLED, with DELETION_CANCELLED evidence: CANCELLED always means the data
 * is back (for a tenant's closure, the closure leaves the tenant's document in that same transaction). An
 * interrupted restore leaves the request CANCELLING, which the purge never takes; calling cancel again, or the
 * next nightly run (`resumeCancellations`), finishes it. A closure still awaiting its approval is withdrawn at
 * once (AWAITING_APPROVAL -> CANCELLED): nothing was hidden. Who may cancel: `mayCancel`.
 */
export async function cancelDeletionRequest(requestId: string, caller: Canceller, actor: Actor, nowMs: number, opts: CancelOptions = {}): Promise<{ restored: number }> {
  const requestRef = requestsCol().doc(requestId);
  const groupId: unknown = (await requestRef.get()).get("groupId");
  if (typeof groupId === "string") return cancelGroup(groupId, caller, actor, nowMs, opts);
  const cancelNote = opts.reason ? { cancelReason: opts.reason } : {};
  const started = await db().runTransaction(async (tx) => {
    const snap = await tx.get(requestRef);
    if (!snap.exists) throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
    const req = requestFromFirestore(snap);
    // Leases run on the wall clock, like the purge's own (platform/lease.ts).
    const leaseLive = leaseState(snap.data(), "", Date.now()) === "taken";
    const decision = cancelDecision(req, caller, nowMs, leaseLive);
    if (decision === "resume" || decision === "already-cancelled") return decision;
    const to = decision === "withdraw" ? "CANCELLED" : "CANCELLING";
    assertRequestMove(req.state, to);
    const evidence = await openEvidence(tx, requestId);
    tx.update(requestRef, {
      state: to,
      cancelledAt: toTimestamp(nowMs),
      ...cancelNote,
      timeline: [...req.timeline, { atMs: nowMs, event: decision === "withdraw" ? "WITHDRAWN" : "CANCEL_REQUESTED" }].map(timelineToFirestore),
    });
    const body = requestEvidence(to === "CANCELLED" ? "DELETION_CANCELLED" : "DELETION_CANCEL_REQUESTED", { ...req, state: to }, actor, nowMs, undefined, { softDeleted: req.softDeleted });
    // Staff's own words stay on the request; evidence keeps a hash of them.
    evidence.append(opts.reason ? { ...body, detail: { reasonHash: hashCanonical({ reason: opts.reason }) } } : body);
    return decision === "withdraw" ? ("withdrawn" as const) : ("started" as const);
  }, EVIDENCE_TX);
  if (started === "already-cancelled") return { restored: 0 };
  if (started === "withdrawn") {
    log.info("deletion.cancelled", { requestId, restored: 0 });
    return { restored: 0 };
  }
  if (started === "resume") log.info("deletion.cancel.resumed", { requestId });
  return finishCancel(requestId, actor, nowMs, opts);
}

/**
 * Cancels a request group, whichever member's id the caller names: one transaction reads every member with its
 * purge lease and decides for each (`cancelDecision`): a refusal of any member (someone else's, grace over, one
 * already taken by the purge) refuses the whole group and changes nothing; otherwise every PENDING member becomes
 * CANCELLING together, with DELETION_CANCEL_REQUESTED evidence per member (in the group's chain), so a cancel and
 * the purge can never split a group. Then each member restores what it soft-deleted and becomes CANCELLED on its
 * own (`finishCancel`), as a request on its own does; a member left CANCELLING by a crash is finished by calling
 * again or by the nightly run.
 */
async function cancelGroup(groupId: string, caller: Canceller, actor: Actor, nowMs: number, opts: CancelOptions): Promise<{ restored: number }> {
  const cancelNote = opts.reason ? { cancelReason: opts.reason } : {};
  const toFinish = await db().runTransaction(async (tx) => {
    const snaps = (await tx.get(requestsCol().where("groupId", "==", groupId))).docs;
    if (snaps.length === 0) throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
    const decided = snaps.map((snap) => {
      const req = requestFromFirestore(snap);
      // Leases run on the wall clock, like the purge's own (platform/lease.ts).
      const leaseLive = leaseState(snap.data(), "", Date.now()) === "taken";
      return { snap, req, decision: cancelDecision(req, caller, nowMs, leaseLive) };
    });
    const moving = decided.filter((d) => d.decision === "cancel");
    const finishing = decided.filter((d) => d.decision === "cancel" || d.decision === "resume").map((d) => d.req.requestId);
    if (moving.length === 0) return finishing;
    const evidence = await openEvidence(tx, groupId);
    for (const { snap, req } of moving) {
      assertRequestMove(req.state, "CANCELLING");
      tx.update(snap.ref, {
        state: "CANCELLING",
        cancelledAt: toTimestamp(nowMs),
        ...cancelNote,
        timeline: [...req.timeline, { atMs: nowMs, event: "CANCEL_REQUESTED" }].map(timelineToFirestore),
      });
      const body = requestEvidence("DELETION_CANCEL_REQUESTED", { ...req, state: "CANCELLING" }, actor, nowMs, undefined, { softDeleted: req.softDeleted });
      evidence.append({ ...body, detail: { groupId, groupSize: snaps.length } });
    }
    return finishing;
  }, EVIDENCE_TX);
  if (toFinish.length > 0) log.info("deletion.group.cancel", { groupId, members: toFinish.length });
  let restored = 0;
  for (const requestId of toFinish) restored += (await finishCancel(requestId, actor, nowMs, opts)).restored;
  return { restored };
}

/**
 * Restores what a CANCELLING request soft-deleted, then moves it to CANCELLED. Idempotent and safe to run
 * concurrently: a document already restored no longer carries the request id, and the last transaction
 * reads the state it moves from.
 */
async function finishCancel(requestId: string, actor: Actor, nowMs: number, opts: CancelOptions = {}): Promise<{ restored: number }> {
  const requestRef = requestsCol().doc(requestId);
  const size = opts.restoreBatchSize ?? REQUEST_BATCH;
  let restored = 0;
  let batchNo = 0;
  let batch: string[] = [];
  const flush = async () => {
    opts.beforeRestoreBatch?.(++batchNo);
    restored += await restoreBatch(requestId, batch, actor, nowMs);
    batch = [];
  };
  for await (const path of markedBy(requestId)) {
    batch.push(path);
    if (batch.length >= size) await flush();
  }
  if (batch.length > 0) await flush();
  const finished = await db().runTransaction(async (tx) => {
    const snap = await tx.get(requestRef);
    const req = requestFromFirestore(snap);
    if (req.state !== "CANCELLING") return false;
    assertRequestMove(req.state, "CANCELLED");
    // A tenant's closure is lifted with the CANCELLED state: the tenant's data is readable again from this commit.
    const tenant = req.subject.type === "tenant" ? await tx.get(tenantRef(req.subject.tenantId)) : null;
    const evidence = await openEvidence(tx, requestId);
    if (tenant?.exists && (tenant.get(`${TENANT_CLOSURE_FIELD}.requestId`) as unknown) === requestId) {
      tx.update(tenant.ref, { [TENANT_CLOSURE_FIELD]: FieldValue.delete() });
    }
    tx.update(requestRef, { state: "CANCELLED", timeline: [...req.timeline, { atMs: nowMs, event: "CANCELLED" }].map(timelineToFirestore) });
    evidence.append(requestEvidence("DELETION_CANCELLED", { ...req, state: "CANCELLED" }, actor, nowMs, undefined, { softDeleted: req.softDeleted, restored }));
    return true;
  }, EVIDENCE_TX);
  if (finished) log.info("deletion.cancelled", { requestId, restored });
  return { restored };
}

/**
 * Finishes every cancel that was interrupted in the middle of its restore (requests left CANCELLING), so a
 * cancelled subject's data never stays soft-deleted with nothing to bring it back. Run by the nightly job.
 */
export async function resumeCancellations(actor: Actor, nowMs: number): Promise<string[]> {
  const snap = await requestsCol().where("state", "==", "CANCELLING").select().get();
  for (const d of snap.docs) {
    await finishCancel(d.id, actor, nowMs);
    log.info("deletion.cancel.resumed", { requestId: d.id });
  }
  return snap.docs.map((d) => d.id);
}

async function restoreBatch(requestId: string, paths: string[], actor: Actor, nowMs: number): Promise<number> {
  const requestRef = requestsCol().doc(requestId);
  return db().runTransaction(async (tx) => {
    const req = requestFromFirestore(await tx.get(requestRef));
    const snaps = await tx.getAll(...paths.map((p) => db().doc(p)));
    const evidence = await openEvidence(tx, requestId);
    const restoredPaths: string[] = [];
    let movedOn = 0;
    for (const s of snaps) {
      const g = readGovernedStrict(s.data());
      if (!g) continue;
      const out = restoreOutcome(g, marksOf(s.data()), requestId);
      if (out.kind === "skip") {
        if (out.why === "MOVED_ON") movedOn++;
        continue;
      }
      tx.update(s.ref, {
        ...governedToFirestore(out.fields),
        softDeletedAt: FieldValue.delete(),
        preDeleteState: FieldValue.delete(),
        deletionRequestId: FieldValue.delete(),
      });
      restoredPaths.push(s.ref.path);
    }
    if (restoredPaths.length === 0 && movedOn === 0) return 0;
    tx.update(requestRef, {
      timeline: [...req.timeline, { atMs: nowMs, event: "RESTORED", detail: `${restoredPaths.length} documents` }].map(timelineToFirestore),
    });
    evidence.append(requestEvidence("SOFT_DELETE_RESTORED", req, actor, nowMs, restoredPaths, { restored: restoredPaths.length, movedOn }));
    return restoredPaths.length;
  }, EVIDENCE_TX);
}

/** Every document carrying the request's id, one collection group after another, a page at a time. */
async function* markedBy(requestId: string): AsyncGenerator<string> {
  for (const collectionId of governedCollectionIds()) {
    for await (const d of pageGoverned(db().collectionGroup(collectionId).where("deletionRequestId", "==", requestId), REQUEST_BATCH)) yield d.ref.path;
  }
}

/** The collection ids that hold governed documents (the last collection of each registry pattern). */
function governedCollectionIds(): string[] {
  return sortedUnique(policy().registry.collections.map((r) => segments(r.pattern).slice(-2)[0] ?? "")).filter((c) => c !== "");
}

/**
 * The in-cell side of a request across several governed databases (requests/cells.ts follows the request of record
 * with these, each inside `inCell`): a cell request is a deletion request under the request of record's id, in
 * another cell, marked `cellOf` (its Auth account is the primary's business: finalize leaves it) and, until the
 * request of record has been taken by the primary's purge, `awaitingRecord` (no purge takes it: a cancel of the
 * record always wins). Its own evidence goes to its own cell's chain.
 */

/** The cell request's fields copied from the request of record. */
function cellRequestFields(record: DeletionRequest, state: RequestState, event: string, nowMs: number, released: boolean): Record<string, unknown> {
  return {
    // The subject's own words (`reason`) stay on the request of record alone: no second copy of them.
    ...requestToFirestore({ ...record, state, reason: undefined, timeline: [{ atMs: nowMs, event, detail: "request of record in the primary database" }], softDeleted: 0, manifestHash: undefined }),
    cellOf: PRIMARY_CELL,
    awaitingRecord: !released,
    softDeleteDone: false,
  };
}

/**
 * Opens the cell request of `record` in this cell (`state`: the record's AWAITING_APPROVAL or PENDING, or CANCELLED
 * for a tombstone: a cancelled record's cell that was never opened, so that a late opening finds it closed), with
 * CELL_REQUEST_OPENED evidence. `released`: the record has already been taken, so this cell's purge may take it at
 * once. Idempotent: a cell request already there is left as it is. Returns whether it was created.
 */
export async function openCellRequest(record: DeletionRequest, state: RequestState, released: boolean, actor: Actor, nowMs: number): Promise<boolean> {
  const ref = requestsCol().doc(record.requestId);
  const created = await db().runTransaction(async (tx) => {
    if ((await tx.get(ref)).exists) return false;
    const evidence = await openEvidence(tx, record.requestId);
    tx.create(ref, cellRequestFields(record, state, state === "CANCELLED" ? "CELL_CLOSED" : "CELL_OPENED", nowMs, released));
    evidence.append({
      action: "CELL_REQUEST_OPENED",
      actor,
      decision: { reason: state === "CANCELLED" ? "RECORD_CANCELLED" : "RECORD_OPENED", recordDatabase: PRIMARY_CELL },
      policyVersion: record.policyVersion,
      atMs: nowMs,
      requestId: record.requestId,
      detail: { subjectType: record.subject.type, tenantId: record.subject.tenantId, state, released, graceEndsAt: isoOrNull(record.graceEndsAtMs), dueAt: isoOrNull(record.dueAtMs) },
    });
    return true;
  }, EVIDENCE_TX);
  if (created) log.info("deletion.cell.opened", { requestId: record.requestId, state });
  return created;
}

/**
 * Soft-deletes this cell's part of the subject's data for a PENDING cell request, then records that it finished
 * (`softDeleteDone`), so the nightly reconciliation does not walk it again.
 */
export async function softDeleteCellRequest(requestId: string, actor: Actor, nowMs: number): Promise<number> {
  const moved = await softDeleteSubjectData(requestId, actor, nowMs);
  await requestsCol().doc(requestId).update({ softDeleteDone: true });
  return moved;
}

/**
 * The record's closure was approved (by its second person, in the primary): this cell's request follows, PENDING
 * with the record's grace and due dates and approver, with TENANT_CLOSURE_APPROVED evidence naming the record. A
 * cell request already past AWAITING_APPROVAL is left as it is.
 */
export async function approveCellRequest(record: DeletionRequest, actor: Actor, nowMs: number): Promise<boolean> {
  const ref = requestsCol().doc(record.requestId);
  return db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists || requestFromFirestore(snap).state !== "AWAITING_APPROVAL") return false;
    assertRequestMove("AWAITING_APPROVAL", "PENDING");
    const req = requestFromFirestore(snap);
    const evidence = await openEvidence(tx, record.requestId);
    tx.update(ref, {
      state: "PENDING",
      ...(record.graceEndsAtMs !== null ? { graceEndsAt: toTimestamp(record.graceEndsAtMs) } : {}),
      ...(record.dueAtMs !== null ? { dueAt: toTimestamp(record.dueAtMs) } : {}),
      ...(record.approvedBy !== undefined ? { approvedBy: record.approvedBy } : {}),
      ...(record.approvedAtMs !== undefined ? { approvedAt: toTimestamp(record.approvedAtMs) } : {}),
      timeline: [...req.timeline, { atMs: nowMs, event: "APPROVED", detail: "the request of record was approved" }].map(timelineToFirestore),
    });
    evidence.append({
      action: "TENANT_CLOSURE_APPROVED",
      actor,
      decision: { reason: TENANT_CLOSURE_REASON, requestedBy: req.requestedBy, followsRecord: PRIMARY_CELL },
      policyVersion: policy().version,
      atMs: nowMs,
      requestId: record.requestId,
      detail: { tenantId: req.subject.tenantId, approvedBy: record.approvedBy ?? null, graceEndsAt: isoOrNull(record.graceEndsAtMs), dueAt: isoOrNull(record.dueAtMs) },
    });
    return true;
  }, EVIDENCE_TX);
}

/**
 * The request of record was cancelled (the decision, its owner and grace, was made there): this cell's request
 * follows. AWAITING_APPROVAL is withdrawn; PENDING becomes CANCELLING, its soft delete is restored, then CANCELLED
 * (DELETION_CANCELLED evidence), as a cancel in one database does; CANCELLING resumes its restore. A cell request
 * cannot have been taken by its purge meanwhile: it is `awaitingRecord` until the record has been taken, which a
 * cancelled record never was.
 */
export async function cancelCellRequest(requestId: string, actor: Actor, nowMs: number): Promise<{ restored: number }> {
  const requestRef = requestsCol().doc(requestId);
  const started = await db().runTransaction(async (tx) => {
    const snap = await tx.get(requestRef);
    if (!snap.exists) return "none" as const;
    const req = requestFromFirestore(snap);
    if (req.state === "CANCELLING") return "resume" as const;
    if (req.state !== "PENDING" && req.state !== "AWAITING_APPROVAL") return "none" as const;
    const to = req.state === "AWAITING_APPROVAL" ? "CANCELLED" : "CANCELLING";
    assertRequestMove(req.state, to);
    const evidence = await openEvidence(tx, requestId);
    tx.update(requestRef, {
      state: to,
      cancelledAt: toTimestamp(nowMs),
      timeline: [...req.timeline, { atMs: nowMs, event: to === "CANCELLED" ? "WITHDRAWN" : "CANCEL_REQUESTED", detail: "the request of record was cancelled" }].map(timelineToFirestore),
    });
    const body = requestEvidence(to === "CANCELLED" ? "DELETION_CANCELLED" : "DELETION_CANCEL_REQUESTED", { ...req, state: to }, actor, nowMs, undefined, { softDeleted: req.softDeleted });
    evidence.append({ ...body, decision: { ...body.decision, followsRecord: PRIMARY_CELL } });
    return to === "CANCELLED" ? ("withdrawn" as const) : ("started" as const);
  }, EVIDENCE_TX);
  if (started === "none" || started === "withdrawn") return { restored: 0 };
  return finishCancel(requestId, actor, nowMs);
}

/**
 * The request of record has been taken by the primary's purge: this cell's purge may take its request now
 * (`awaitingRecord` cleared, CELL_REQUEST_RELEASED evidence naming the record's state: the authority for this cell's
 * erasure). Idempotent.
 */
export async function releaseCellRequest(requestId: string, recordState: RequestState, actor: Actor, nowMs: number): Promise<boolean> {
  const ref = requestsCol().doc(requestId);
  const released = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists || snap.get("awaitingRecord") !== true) return false;
    const req = requestFromFirestore(snap);
    const evidence = await openEvidence(tx, requestId);
    tx.update(ref, {
      awaitingRecord: false,
      timeline: [...req.timeline, { atMs: nowMs, event: "RELEASED", detail: `the request of record is ${recordState}` }].map(timelineToFirestore),
    });
    evidence.append({
      action: "CELL_REQUEST_RELEASED",
      actor,
      decision: { reason: "RECORD_TAKEN", recordDatabase: PRIMARY_CELL, recordState },
      policyVersion: policy().version,
      atMs: nowMs,
      requestId,
    });
    return true;
  }, EVIDENCE_TX);
  if (released) log.info("deletion.cell.released", { requestId });
  return released;
}
