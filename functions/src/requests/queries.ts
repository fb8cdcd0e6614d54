import { daysLeft } from "./rules/legal-clock";
import { FieldPath, Timestamp, type DocumentSnapshot, type Query } from "firebase-admin/firestore";
import { DomainError, notFound } from "../kernel/errors";
import { policy } from "../platform/registry";
import type { Subject } from "../plan/rules";
import type { SubjectRef } from "./plan-view";
import { subjectView } from "./rules/subject-view";
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor } from "../kernel/paging";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { ERASURE_OWED_STATES, parseRequestState, type DeletionRequest, type RequestState } from "./rules/requests";
import { goneByStatus } from "./rules/gone-by";
import { GONE_BY_UNKNOWN, type GoneByUnknown } from "../kernel/request-states";
import { requestFromFirestore, subjectOfRequest } from "./service";
import { cellsOfRecord, recordView } from "./cells";

const requestsCol = () => db().collection(COLLECTIONS.deletionRequests);
const iso = (ms: number | null) => (ms === null ? "" : new Date(ms).toISOString());
/** A date a request may not have yet (a tenant's closure has no grace or due date before its approval). */
const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * A request by id, or a user's most recent request about themself (by the time it was made) for a user who lost
 * its id: one query on (uid, requestedAt desc). REQUEST_NOT_FOUND when there is none.
 */
export async function findRequest(by: { requestId: string } | { latestOf: string }): Promise<{ request: DeletionRequest; snap: DocumentSnapshot }> {
  let snap: DocumentSnapshot | undefined;
  if ("requestId" in by) {
    snap = await requestsCol().doc(by.requestId).get();
  } else {
    snap = (await requestsCol().where("uid", "==", by.latestOf).orderBy("requestedAt", "desc").limit(1).get()).docs[0];
  }
  if (!snap?.exists) throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
  return { request: requestFromFirestore(snap), snap };
}

/**
 * What staff see of a request besides its timeline: whose it is (its subject, a user or a tenant, and who opened
 * it), and why it is blocked or retained.
 */
export function staffFacts(snap: DocumentSnapshot) {
  const held = snap.get("retainedUnderHold") as { count?: unknown; holds?: unknown } | undefined;
  const holds = Array.isArray(held?.holds) ? (held.holds as { holdId?: unknown; reasonCode?: unknown }[]) : [];
  const stored = subjectOfRequest(snap.data() ?? {});
  // The documented shape: a group member's `scopedOnly` is the engine's, not the contract's.
  const subject: Subject = stored.type === "user" ? { type: "user", uid: stored.uid, tenantId: stored.tenantId } : stored;
  const requestedBy = snap.get("requestedBy") as unknown;
  return {
    subject,
    // A request from before `requestedBy` was stored was a user's own (or the backstop's for them).
    requestedBy: typeof requestedBy === "string" ? requestedBy : subject.type === "user" ? subject.uid : "",
    source: String(snap.get("source") ?? "user"),
    blockedReason: typeof snap.get("blockedReason") === "string" ? (snap.get("blockedReason") as string) : null,
    retainedUnderHold: held
      ? {
          count: typeof held.count === "number" ? held.count : 0,
          holds: holds.map((h) => ({ holdId: typeof h.holdId === "string" ? h.holdId : null, reasonCode: typeof h.reasonCode === "string" ? h.reasonCode : "" })),
        }
      : null,
  };
}

/**
 * A request's "fully gone by" date as a status reports it (requests/rules/gone-by.ts): the date (ISO) or why there is
 * none, and when ERASURE_COMPLETE was recorded.
 */
export function goneByFacts(snap: DocumentSnapshot): { fullyGoneBy: string | null; fullyGoneByUnknown: GoneByUnknown | null; erasureCompleteAt: string | null } {
  const unknown = snap.get("fullyGoneByUnknown") as unknown;
  const status = goneByStatus(parseRequestState(snap.get("state")), {
    fullyGoneByMs: toMs(snap.get("fullyGoneBy")),
    unknown: (GONE_BY_UNKNOWN as readonly unknown[]).includes(unknown) ? (unknown as GoneByUnknown) : null,
    erasureCompleteAtMs: toMs(snap.get("erasureCompleteAt")),
  });
  return { fullyGoneBy: isoOrNull(status.fullyGoneByMs), fullyGoneByUnknown: status.unknown, erasureCompleteAt: isoOrNull(status.erasureCompleteAtMs) };
}

export interface ListRequestsQuery {
  state?: RequestState;
  overdueOnly?: boolean;
  /** One subject's requests, newest first (not combined with `state` or `overdueOnly`). */
  subject?: SubjectRef;
  pageSize?: number;
  cursor?: string;
  nowMs: number;
}

/** The fields a list item needs: never the subject's own words (`reason`) or the timeline. */
const LIST_FIELDS = ["subjectType", "uid", "tenantId", "scopedOnly", "groupId", "requestedBy", "state", "source", "requestedAt", "graceEndsAt", "dueAt", "softDeleted", "blockedReason", "retainedUnderHold.count", "cells", "legalClock.law", "legalClock.extension"];

/**
 * One subject's requests, newest first: a user's (by uid, in one scope when named: indexes (uid, requestedAt desc)
 * and (uid, tenantId, requestedAt desc)), or a scope's, its closures and its users' requests in it (index
 * (tenantId, requestedAt desc)). NO_SCOPE_KIND for a scope in an app without a scope kind.
 */
function subjectQuery(ref: SubjectRef): Query {
  const named = ref.type === "scope" ? ref.id : ref.scope;
  if (named !== undefined && !policy().scope) throw new DomainError("failed-precondition", "NO_SCOPE_KIND", "This app's registry declares no scope kind: its users belong to none.");
  const col = requestsCol();
  if (ref.type === "scope") return col.where("tenantId", "==", ref.id);
  return ref.scope !== undefined ? col.where("uid", "==", ref.uid).where("tenantId", "==", ref.scope) : col.where("uid", "==", ref.uid);
}

/**
 * Deletion requests, most urgent first (due date, then id), a page at a time. Filters: one state, or only the
 * overdue ones (erasure owed, due date passed), or both. Indexes: (state, dueAt) for either filter, the
 * automatic dueAt index for none. A tenant's closure awaiting its second approval has no due date yet (its
 * grace starts at the approval), so a due-date order cannot reach it: the AWAITING_APPROVAL list is oldest
 * request first instead (index (state, requestedAt)).
 */
export async function listRequests(q: ListRequestsQuery) {
  const size = q.pageSize ?? DEFAULT_PAGE_SIZE;
  const subject = q.subject === undefined ? null : q.subject.type === "scope" ? `scope:${q.subject.id}` : `user:${q.subject.uid}:${q.subject.scope ?? "*"}`;
  const list = subject !== null ? `requests:subject:${subject}` : `requests:${q.state ?? "*"}:${q.overdueOnly === true ? "overdue" : "all"}`;
  let query: Query = requestsCol();
  if (q.subject !== undefined) {
    if (q.state !== undefined || q.overdueOnly !== undefined) throw new DomainError("invalid-argument", "INVALID_ARGUMENT", "A subject's requests are listed without a state or overdue filter.");
    query = subjectQuery(q.subject);
  } else if (q.overdueOnly === true) {
    const owed = q.state ? ERASURE_OWED_STATES.filter((s) => s === q.state) : ERASURE_OWED_STATES;
    if (owed.length === 0) return { items: [], nextCursor: null };
    query = (owed.length === 1 ? query.where("state", "==", owed[0]) : query.where("state", "in", owed)).where("dueAt", "<", Timestamp.fromMillis(q.nowMs));
  } else if (q.state) {
    query = query.where("state", "==", q.state);
  }
  const orderField = (q.state === "AWAITING_APPROVAL" && q.overdueOnly !== true) || q.subject !== undefined ? "requestedAt" : "dueAt";
  // A subject's requests newest first; the lists by state most urgent (or oldest) first.
  const direction = q.subject !== undefined ? "desc" : "asc";
  query = query.orderBy(orderField, direction).orderBy(FieldPath.documentId(), direction);
  if (q.cursor !== undefined) {
    const [atMs, id] = decodeCursor(list, q.cursor, 2);
    query = query.startAfter(Timestamp.fromMillis(Number(atMs)), String(id));
  }
  const snap = await query.select(...LIST_FIELDS).limit(size + 1).get();
  const docs = snap.docs.slice(0, size);
  // A request across several governed databases reports the state derived from its databases' (one point read in
  // each other database per such item); the filter and the order are the request of record's own.
  const views = new Map(await Promise.all(docs.filter((d) => cellsOfRecord(d.data()).length > 0).map(async (d) => [d.id, await recordView(d.id, d.data())] as const)));
  const items = docs.map((d) => {
    const view = views.get(d.id) ?? null;
    const state = view?.state ?? parseRequestState(d.get("state"));
    const dueAtMs = toMs(d.get("dueAt"));
    const facts = staffFacts(d);
    return {
      requestId: d.id,
      state,
      subject: facts.subject,
      requestedBy: facts.requestedBy,
      source: facts.source,
      requestedAt: iso(toMs(d.get("requestedAt"))),
      graceEndsAt: isoOrNull(toMs(d.get("graceEndsAt"))),
      dueAt: isoOrNull(dueAtMs),
      overdue: ERASURE_OWED_STATES.includes(state) && dueAtMs !== null && dueAtMs < q.nowMs,
      law: typeof d.get("legalClock.law") === "string" ? (d.get("legalClock.law") as string) : null,
      // What the console sorts by (the list's own order, by due date, is the same): days left while erasure is owed.
      daysLeft: ERASURE_OWED_STATES.includes(state) && dueAtMs !== null ? daysLeft(dueAtMs, q.nowMs) : null,
      extended: (d.get("legalClock.extension") ?? null) !== null,
      softDeleted: typeof d.get("softDeleted") === "number" ? (d.get("softDeleted") as number) : 0,
      blockedReason: facts.blockedReason,
      retainedUnderHold: facts.retainedUnderHold?.count ?? null,
      ...(view ? { cells: view.cells.map((c) => ({ database: c.cell, state: c.state })) } : {}),
      subjectRef: subjectView(facts.subject),
      group: typeof d.get("groupId") === "string" ? { groupId: d.get("groupId") as string, lead: d.get("groupId") === d.id } : null,
    };
  });
  const last = docs[docs.length - 1];
  const nextCursor = snap.docs.length > size && last ? encodeCursor(list, [toMs(last.get(orderField)) ?? 0, last.id]) : null;
  return { items, nextCursor };
}

/** Firestore's `in` takes at most 30 values. */
const IN_LIMIT = 30;

/**
 * The stored states of the requests about each id: a user's own requests by uid (`kind: "user"`), or the closures of
 * scopes by scope id (`kind: "scope"`). Read 30 ids per query, on the `(uid)` and `(subjectType, tenantId)` equalities
 * that every request carries. An id without a request is absent. States are as stored, for the caller's rule to judge
 * (requests/rules/requests.ts#isOpenRequest, #CLOSURE_HANDLES_USERS_STATES).
 */
export async function storedRequestStates(kind: "user" | "scope", ids: readonly string[]): Promise<Map<string, unknown[]>> {
  const unique = [...new Set(ids)];
  const field = kind === "user" ? "uid" : "tenantId";
  const states = new Map<string, unknown[]>();
  for (let i = 0; i < unique.length; i += IN_LIMIT) {
    const query = kind === "user" ? requestsCol() : requestsCol().where("subjectType", "==", "tenant");
    const snap = await query.where(field, "in", unique.slice(i, i + IN_LIMIT)).select(field, "state").get();
    for (const d of snap.docs) {
      const id = String(d.get(field));
      states.set(id, [...(states.get(id) ?? []), d.get("state")]);
    }
  }
  return states;
}
