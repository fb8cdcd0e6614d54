import type { DocumentSnapshot, Query, QueryDocumentSnapshot } from "firebase-admin/firestore";
import { DomainError } from "../kernel/errors";
import { isBusinessVisible, isTenantOpen, TENANT_CLOSURE_FIELD } from "../kernel/visibility";
import { db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";

/**
 * The one read helper every server read path of the product uses. Soft delete is a query contract and
 * expiry is a business fact: a read returns only ACTIVE data whose `expireAt` has not passed, whether or not
 * the TTL sweeper has removed the document yet, and only of a tenant that is open (its document exists and
 * carries no closure: kernel/visibility.ts#isTenantOpen). Control-plane code (purge, audit, backfill, triggers)
 * reads raw on purpose; product code never does.
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

/** The tenants among `tenantIds` that are open (one read of each tenant's document). */
export async function openTenants(tenantIds: Iterable<string>): Promise<Set<string>> {
  const ids = [...new Set(tenantIds)].filter((t) => t !== "");
  if (ids.length === 0) return new Set();
  const snaps = await db().getAll(...ids.map((t) => db().collection("tenants").doc(t)));
  return new Set(snaps.filter((s) => isTenantOpen({ exists: s.exists, closure: s.get(TENANT_CLOSURE_FIELD) as unknown })).map((s) => s.id));
}

const tenantOf = (snap: DocumentSnapshot): string => {
  const t: unknown = snap.get("tenantId");
  return typeof t === "string" ? t : "";
};

/** Runs a product query: ACTIVE only, then expired documents and those of closed tenants removed. */
export async function readVisible(query: Query, nowMs: number): Promise<QueryDocumentSnapshot[]> {
  const snap = await visibleQuery(query).get();
  const live = snap.docs.filter((d) => isVisibleSnapshot(d, nowMs));
  const open = await openTenants(live.map(tenantOf));
  return live.filter((d) => open.has(tenantOf(d)));
}

/** Reads one document for the product: null when it is missing, not ACTIVE, past its expiry, or its tenant's closed. */
export async function getVisible(path: string, nowMs: number): Promise<DocumentSnapshot | null> {
  const snap = await db().doc(path).get();
  if (!isVisibleSnapshot(snap, nowMs)) return null;
  return (await openTenants([tenantOf(snap)])).has(tenantOf(snap)) ? snap : null;
}

export interface ValidSession {
  sessionId: string;
  uid: string;
  tenantId: string;
  expireAtMs: number | null;
}

export type SessionRejection = "SESSION_NOT_FOUND" | "SESSION_NOT_ACTIVE" | "SESSION_EXPIRED" | "TENANT_CLOSED";

/**
 * Checks a session for the product. A session past its business expiry is rejected at once, even though
 * its document still exists while it waits for the TTL sweeper (session-30d: expiry is a business fact).
 */
export async function checkSession(sessionId: string, nowMs: number): Promise<{ ok: true; session: ValidSession } | { ok: false; reason: SessionRejection }> {
  const snap = await db().collection("sessions").doc(sessionId).get();
  if (!snap.exists) return { ok: false, reason: "SESSION_NOT_FOUND" };
  if (snap.get("lifecycleState") !== "ACTIVE") return { ok: false, reason: "SESSION_NOT_ACTIVE" };
  if (!isVisibleSnapshot(snap, nowMs)) return { ok: false, reason: "SESSION_EXPIRED" };
  if (!(await openTenants([tenantOf(snap)])).has(tenantOf(snap))) return { ok: false, reason: "TENANT_CLOSED" };
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
  const message = r.reason === "SESSION_EXPIRED" ? "The session has expired." : r.reason === "TENANT_CLOSED" ? "The session's tenant is closed." : "The session is not active.";
  throw new DomainError("failed-precondition", r.reason, message);
}
