import { FieldValue, type DocumentSnapshot } from "firebase-admin/firestore";
import { hashCanonical } from "../domain/canonical";
import {
  cancelDecision,
  HANDLED_REQUEST_STATES,
  newDeletionRequest,
  OPEN_REQUEST_STATES,
  parseRequestState,
  restoreOutcome,
  softDeleteOutcome,
  type DeletionRequest,
  type RequestSource,
  type RequestState,
  type SoftDeleteMarks,
  type TimelineEntry,
} from "../domain/deletion-request";
import { coveringHold } from "../domain/destroy-predicate";
import { notFound } from "../domain/errors";
import type { Actor, EvidenceBody } from "../domain/evidence";
import { isLifecycleState } from "../domain/lifecycle";
import { segments, sortedUnique } from "../domain/paths";
import { discoverSubject, pageQuery } from "./discovery";
import { openEvidence } from "./evidence-store";
import { COLLECTIONS, db } from "./firestore";
import { governedToFirestore, readGovernedStrict, toMs, toTimestamp } from "./governed-doc";
import { activeHolds, TX_OPTIONS } from "./holds";
import { log } from "./logs";
import { policy } from "./registry";

/** Documents changed per transaction by a soft delete or a restore. */
const REQUEST_BATCH = 200;

const requestsCol = () => db().collection(COLLECTIONS.deletionRequests);

export function requestToFirestore(r: DeletionRequest): Record<string, unknown> {
  return {
    requestId: r.requestId,
    subjectType: r.subjectType,
    uid: r.uid,
    tenantId: r.tenantId,
    state: r.state,
    source: r.source,
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    requestedAt: toTimestamp(r.requestedAtMs),
    graceEndsAt: toTimestamp(r.graceEndsAtMs),
    dueAt: toTimestamp(r.dueAtMs),
    policyVersion: r.policyVersion,
    timeline: r.timeline.map(timelineToFirestore),
    softDeleted: r.softDeleted,
    ...(r.manifestHash !== undefined ? { manifestHash: r.manifestHash } : {}),
  };
}

const timelineToFirestore = (t: TimelineEntry) => ({ at: toTimestamp(t.atMs), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}) });

export function requestFromFirestore(snap: DocumentSnapshot): DeletionRequest {
  const d = snap.data() ?? {};
  const timeline = Array.isArray(d.timeline) ? (d.timeline as Record<string, unknown>[]) : [];
  return {
    requestId: snap.id,
    subjectType: "user",
    uid: String(d.uid ?? ""),
    tenantId: String(d.tenantId ?? ""),
    state: parseRequestState(d.state),
    source: (d.source as RequestSource) ?? "user",
    ...(typeof d.reason === "string" ? { reason: d.reason } : {}),
    requestedAtMs: toMs(d.requestedAt) ?? 0,
    graceEndsAtMs: toMs(d.graceEndsAt) ?? 0,
    dueAtMs: toMs(d.dueAt) ?? 0,
    policyVersion: String(d.policyVersion ?? ""),
    timeline: timeline.map((t) => ({
      atMs: toMs(t.at) ?? 0,
      event: String(t.event),
      ...(typeof t.detail === "string" ? { detail: t.detail } : {}),
    })),
    softDeleted: typeof d.softDeleted === "number" ? d.softDeleted : 0,
    ...(typeof d.manifestHash === "string" ? { manifestHash: d.manifestHash } : {}),
  };
}

export async function readRequest(requestId: string): Promise<DeletionRequest> {
  const snap = await requestsCol().doc(requestId).get();
  if (!snap.exists) throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
  return requestFromFirestore(snap);
}

export interface OpenRequestInput {
  uid: string;
  tenantId: string;
  source: RequestSource;
  reason?: string;
  actor: Actor;
  nowMs: number;
  /** The Auth trigger's event id, recorded with the request and in evidence. */
  eventId?: string;
}

/**
 * Opens a deletion request for a user, or returns the one that already covers them, then soft-deletes the
 * subject's data. The look-up of existing requests is a query inside the transaction that creates the new
 * one; Firestore transactions are serializable, so two concurrent calls cannot both create.
 * - a user's own call reuses any open request (PENDING, PROCESSING);
 * - the Auth backstop also treats PURGED and BLOCKED as handled: the purge deletes the Auth account itself.
 * Running it again is how an interrupted soft delete is completed.
 */
export async function openDeletionRequest(input: OpenRequestInput): Promise<{ request: DeletionRequest; created: boolean }> {
  const states: readonly RequestState[] = input.source === "auth-backstop" ? HANDLED_REQUEST_STATES : OPEN_REQUEST_STATES;
  const ref = requestsCol().doc();
  const outcome = await db().runTransaction(async (tx) => {
    const existing = await tx.get(requestsCol().where("uid", "==", input.uid).where("state", "in", [...states]));
    if (!existing.empty) {
      const oldest = existing.docs.map(requestFromFirestore).sort((a, b) => a.requestedAtMs - b.requestedAtMs)[0]!;
      return { request: oldest, created: false };
    }
    const evidence = await openEvidence(tx);
    const request = newDeletionRequest(
      { requestId: ref.id, uid: input.uid, tenantId: input.tenantId, source: input.source, reason: input.reason, nowMs: input.nowMs },
      policy(),
    );
    tx.create(ref, { ...requestToFirestore(request), ...(input.eventId ? { sourceEventId: input.eventId } : {}) });
    evidence.append({
      action: input.source === "auth-backstop" ? "BACKSTOP_REQUEST_OPENED" : "DELETION_REQUESTED",
      actor: input.actor,
      decision: { reason: input.source === "auth-backstop" ? "AUTH_ACCOUNT_DELETED" : "SUBJECT_REQUEST", source: input.source },
      policyVersion: request.policyVersion,
      atMs: input.nowMs,
      requestId: request.requestId,
      eventId: input.eventId ?? null,
      counts: { graceDays: Math.round((request.graceEndsAtMs - request.requestedAtMs) / 86_400_000) },
      // The user's own words are personal data: evidence keeps only a hash of them.
      detail: {
        tenantId: request.tenantId,
        graceEndsAt: new Date(request.graceEndsAtMs).toISOString(),
        dueAt: new Date(request.dueAtMs).toISOString(),
        ...(input.reason ? { reasonHash: hashCanonical({ reason: input.reason }) } : {}),
      },
    });
    return { request, created: true };
  }, TX_OPTIONS);
  if (outcome.created) {
    log.info(input.source === "auth-backstop" ? "deletion.backstop.opened" : "deletion.requested", { requestId: outcome.request.requestId });
  }
  if (outcome.request.state === "PENDING") {
    const moved = await softDeleteSubjectData(outcome.request.requestId, input.actor, input.nowMs);
    return { request: { ...outcome.request, softDeleted: outcome.request.softDeleted + moved }, created: outcome.created };
  }
  return outcome;
}

function marksOf(data: Record<string, unknown> | undefined): SoftDeleteMarks {
  const pre = data?.preDeleteState;
  return {
    softDeletedAtMs: toMs(data?.softDeletedAt),
    preDeleteState: isLifecycleState(pre) ? pre : null,
    deletionRequestId: typeof data?.deletionRequestId === "string" ? data.deletionRequestId : null,
  };
}

/**
 * Moves every `delete` and `mask` document in the subject's data map to SOFT_DELETED, in batches of one
 * transaction each (re-reading the request, so a request cancelled or taken by the purge meanwhile stops
 * the pass). Each batch carries its own evidence with the paths it moved. Returns how many moved.
 */
export async function softDeleteSubjectData(requestId: string, actor: Actor, nowMs: number): Promise<number> {
  const requestRef = requestsCol().doc(requestId);
  const request = requestFromFirestore(await requestRef.get());
  const entries = new Map(policy().dataMap("user").map((e) => [e.id, e]));
  const candidates: string[] = [];
  for await (const d of discoverSubject({ type: "user", uid: request.uid, tenantId: request.tenantId })) {
    const action = entries.get(d.entryId)?.action;
    if (action === "delete" || action === "mask") candidates.push(d.path);
  }
  const holds = await activeHolds();
  const paths = sortedUnique(candidates);
  let moved = 0;
  for (let i = 0; i < paths.length; i += REQUEST_BATCH) {
    const batch = paths.slice(i, i + REQUEST_BATCH);
    const n = await db().runTransaction(async (tx) => {
      const req = requestFromFirestore(await tx.get(requestRef));
      if (req.state !== "PENDING") return -1;
      const snaps = await tx.getAll(...batch.map((p) => db().doc(p)));
      const evidence = await openEvidence(tx);
      const movedPaths: string[] = [];
      let held = 0;
      for (const s of snaps) {
        const g = readGovernedStrict(s.data());
        if (!g) continue;
        const out = softDeleteOutcome(g, marksOf(s.data()), requestId, coveringHold(s.ref.path, holds) !== undefined, nowMs);
        if (out.kind === "held") held++;
        if (out.kind !== "move") continue;
        tx.update(s.ref, {
          ...governedToFirestore(out.fields),
          softDeletedAt: toTimestamp(nowMs),
          preDeleteState: out.marks.preDeleteState,
          deletionRequestId: requestId,
        });
        movedPaths.push(s.ref.path);
      }
      if (movedPaths.length === 0) return 0;
      tx.update(requestRef, {
        softDeleted: req.softDeleted + movedPaths.length,
        timeline: [...req.timeline, { atMs: nowMs, event: "SOFT_DELETED", detail: `${movedPaths.length} documents` }].map(timelineToFirestore),
      });
      evidence.append(requestEvidence("SUBJECT_SOFT_DELETED", req, actor, nowMs, movedPaths, { softDeleted: movedPaths.length, heldSkipped: held }));
      return movedPaths.length;
    }, TX_OPTIONS);
    if (n < 0) break;
    moved += n;
  }
  return moved;
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
    decision: { reason: action === "DELETION_CANCELLED" ? "SUBJECT_CANCELLED" : "DELETION_REQUEST", state: req.state },
    policyVersion: policy().version,
    atMs: nowMs,
    requestId: req.requestId,
    ...(paths ? { paths } : {}),
    counts,
  };
}

/**
 * Cancels a request and restores what it soft-deleted. The state change comes first, with its evidence, so
 * that the purge can no longer take the request; then every document carrying the request id (found by a
 * collection-group query per governed collection, whatever the data map says now) returns to its state
 * before the request. A retried cancel of a CANCELLED request finishes an interrupted restore.
 */
export async function cancelDeletionRequest(requestId: string, callerUid: string, actor: Actor, nowMs: number): Promise<{ restored: number }> {
  const requestRef = requestsCol().doc(requestId);
  const cancelled = await db().runTransaction(async (tx) => {
    const snap = await tx.get(requestRef);
    if (!snap.exists) throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
    const req = requestFromFirestore(snap);
    if (cancelDecision(req, callerUid, nowMs) === "already-cancelled") return false;
    const evidence = await openEvidence(tx);
    tx.update(requestRef, { state: "CANCELLED", timeline: [...req.timeline, { atMs: nowMs, event: "CANCELLED" }].map(timelineToFirestore) });
    evidence.append(requestEvidence("DELETION_CANCELLED", { ...req, state: "CANCELLED" }, actor, nowMs, undefined, { softDeleted: req.softDeleted }));
    return true;
  }, TX_OPTIONS);
  if (cancelled) log.info("deletion.cancelled", { requestId });

  let restored = 0;
  let batch: string[] = [];
  for await (const path of markedBy(requestId)) {
    batch.push(path);
    if (batch.length >= REQUEST_BATCH) {
      restored += await restoreBatch(requestId, batch, actor, nowMs);
      batch = [];
    }
  }
  if (batch.length > 0) restored += await restoreBatch(requestId, batch, actor, nowMs);
  return { restored };
}

async function restoreBatch(requestId: string, paths: string[], actor: Actor, nowMs: number): Promise<number> {
  const requestRef = requestsCol().doc(requestId);
  return db().runTransaction(async (tx) => {
    const req = requestFromFirestore(await tx.get(requestRef));
    const snaps = await tx.getAll(...paths.map((p) => db().doc(p)));
    const evidence = await openEvidence(tx);
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
  }, TX_OPTIONS);
}

/** Every document carrying the request's id, one collection group after another, a page at a time. */
async function* markedBy(requestId: string): AsyncGenerator<string> {
  for (const collectionId of governedCollectionIds()) {
    for await (const d of pageQuery(db().collectionGroup(collectionId).where("deletionRequestId", "==", requestId), REQUEST_BATCH)) yield d.ref.path;
  }
}

/** The collection ids that hold governed documents (the last collection of each registry pattern). */
function governedCollectionIds(): string[] {
  return sortedUnique(policy().registry.collections.map((r) => segments(r.pattern).slice(-2)[0] ?? "")).filter((c) => c !== "");
}
