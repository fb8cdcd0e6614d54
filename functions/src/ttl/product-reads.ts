import type { DocumentSnapshot, Query, QueryDocumentSnapshot } from "firebase-admin/firestore";
import { DomainError } from "../kernel/errors";
import { isBusinessVisible } from "../kernel/visibility";
import { db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";

/**
 * The one read helper every server read path of the product uses. Soft delete is a query contract and
 * expiry is a business fact: a read returns only ACTIVE data whose `expireAt` has not passed, whether or not
 * the TTL sweeper has removed the document yet. Control-plane code (purge, audit, backfill, triggers) reads
 * raw on purpose; product code never does.
 */

/** Narrows a query to ACTIVE documents. Expiry cannot be a query filter (documents without a TTL value would drop out), so results still go through `isVisibleSnapshot`. */
export function visibleQuery(query: Query): Query {
  return query.where("lifecycleState", "==", "ACTIVE");
}

/** The business-visibility rule (kernel/visibility.ts) applied to a stored document at `nowMs`. */
export function isVisibleSnapshot(snap: DocumentSnapshot, nowMs: number): boolean {
  if (!snap.exists) return false;
  const state: unknown = snap.get("lifecycleState");
  return isBusinessVisible({ lifecycleState: typeof state === "string" ? state : null, expireAtMs: toMs(snap.get("expireAt")) }, nowMs);
}

/** Runs a product query: ACTIVE only, then expired documents removed. */
export async function readVisible(query: Query, nowMs: number): Promise<QueryDocumentSnapshot[]> {
  const snap = await visibleQuery(query).get();
  return snap.docs.filter((d) => isVisibleSnapshot(d, nowMs));
}

/** Reads one document for the product: null when it is missing, not ACTIVE, or past its expiry. */
export async function getVisible(path: string, nowMs: number): Promise<DocumentSnapshot | null> {
  const snap = await db().doc(path).get();
  return isVisibleSnapshot(snap, nowMs) ? snap : null;
}

export interface ValidSession {
  sessionId: string;
  uid: string;
  tenantId: string;
  expireAtMs: number | null;
}

export type SessionRejection = "SESSION_NOT_FOUND" | "SESSION_NOT_ACTIVE" | "SESSION_EXPIRED";

/**
 * Checks a session for the product. A session past its business expiry is rejected at once, even though
 * its document still exists while it waits for the TTL sweeper (session-30d: expiry is a business fact).
 */
export async function checkSession(sessionId: string, nowMs: number): Promise<{ ok: true; session: ValidSession } | { ok: false; reason: SessionRejection }> {
  const snap = await db().collection("sessions").doc(sessionId).get();
  if (!snap.exists) return { ok: false, reason: "SESSION_NOT_FOUND" };
  if (snap.get("lifecycleState") !== "ACTIVE") return { ok: false, reason: "SESSION_NOT_ACTIVE" };
  if (!isVisibleSnapshot(snap, nowMs)) return { ok: false, reason: "SESSION_EXPIRED" };
  const uid: unknown = snap.get("uid");
  const tenantId: unknown = snap.get("tenantId");
  return {
    ok: true,
    session: {
      sessionId,
      uid: typeof uid === "string" ? uid : "",
      tenantId: typeof tenantId === "string" ? tenantId : "",
      expireAtMs: toMs(snap.get("expireAt")),
    },
  };
}

/** The session when it is valid for the product at `nowMs`, else null. */
export async function getSessionIfValid(sessionId: string, nowMs: number): Promise<ValidSession | null> {
  const r = await checkSession(sessionId, nowMs);
  return r.ok ? r.session : null;
}

/** As getSessionIfValid, for callers that must refuse: a stable reason code in a failed-precondition/not-found error. */
export async function requireValidSession(sessionId: string, nowMs: number): Promise<ValidSession> {
  const r = await checkSession(sessionId, nowMs);
  if (r.ok) return r.session;
  if (r.reason === "SESSION_NOT_FOUND") throw new DomainError("not-found", r.reason, "No such session.");
  throw new DomainError("failed-precondition", r.reason, r.reason === "SESSION_EXPIRED" ? "The session has expired." : "The session is not active.");
}
