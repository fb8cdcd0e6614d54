import { getAuth } from "firebase-admin/auth";
import { notFound } from "../kernel/errors";
import type { Subject } from "../plan/rules";
import { adminApp, COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";

/**
 * Which tenant a user's data lives in, for planning by uid. In order: the Auth account's `tenantId` claim,
 * the user directory (an external copy that outlives the Auth account), then the user's latest deletion
 * request (which outlives both). No tenant: SUBJECT_NOT_FOUND.
 */
export async function resolveUserSubject(uid: string): Promise<Subject> {
  const fromClaims = await getAuth(adminApp())
    .getUser(uid)
    .then((u) => (typeof u.customClaims?.tenantId === "string" ? u.customClaims.tenantId : null))
    .catch((err: unknown) => {
      if ((err as { code?: string }).code === "auth/user-not-found") return null;
      throw err;
    });
  if (fromClaims) return { type: "user", uid, tenantId: fromClaims };
  const directory = await db().collection("userDirectory").doc(uid).get();
  const fromDirectory: unknown = directory.get("tenantId");
  if (typeof fromDirectory === "string" && fromDirectory) return { type: "user", uid, tenantId: fromDirectory };
  // A user has few requests; sorting them here needs no composite index.
  const requests = await db().collection(COLLECTIONS.deletionRequests).where("uid", "==", uid).select("tenantId", "requestedAt").get();
  const latest = [...requests.docs].sort((a, b) => (toMs(b.get("requestedAt")) ?? 0) - (toMs(a.get("requestedAt")) ?? 0))[0];
  const fromRequest: unknown = latest?.get("tenantId");
  if (typeof fromRequest === "string" && fromRequest) return { type: "user", uid, tenantId: fromRequest };
  throw notFound("SUBJECT_NOT_FOUND", "No tenant is known for this user.");
}

/** A tenant subject exists while its document, or anything under it, does. */
export async function resolveTenantSubject(tenantId: string): Promise<Subject> {
  const ref = db().collection("tenants").doc(tenantId);
  const snap = await ref.get();
  if (!snap.exists && (await ref.listCollections()).length === 0) throw notFound("SUBJECT_NOT_FOUND", "No such tenant.");
  return { type: "tenant", tenantId };
}

/**
 * The tenant of a user whose Auth account was just deleted: the `tenantId` claim the deleted account carried,
 * else the user directory. Null: the account had no tenant data (staff).
 */
export async function tenantOfDeletedUser(uid: string, claims: Record<string, unknown> | undefined): Promise<string | null> {
  if (typeof claims?.tenantId === "string" && claims.tenantId) return claims.tenantId;
  const directory = await db().collection("userDirectory").doc(uid).get();
  const fromDirectory: unknown = directory.get("tenantId");
  return typeof fromDirectory === "string" && fromDirectory ? fromDirectory : null;
}
