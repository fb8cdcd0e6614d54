import { DomainError } from "../../functions/src/kernel/errors";
import { db } from "../../functions/src/platform/firestore";
import { toMs } from "../../functions/src/platform/governed-doc";
import { isVisibleSnapshot, openTenants, tenantOf } from "../../functions/src/ttl/index";

/**
 * AtlasMart's sessions, read the way product code reads: through the product read helpers
 * (ttl/product-reads.ts), which hide expired data and a closed tenant's data. An example of product code, not
 * part of the engine.
 */

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
