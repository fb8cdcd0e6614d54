import type { DocumentSnapshot, Query, QueryDocumentSnapshot } from "firebase-admin/firestore";
import { isBusinessVisible, isTenantOpen, TENANT_CLOSURE_FIELD } from "../kernel/visibility";
import { db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { policy } from "../platform/registry";

/**
 * The one read helper every server read path of the product uses. Soft delete is a query contract and
 * expiry is a business fact: a read returns only ACTIVE data whose `expireAt` has not passed, whether or not
 * the TTL sweeper has removed the document yet, and only of a tenant that is open (its record exists and
 * carries no closure: kernel/visibility.ts#isTenantOpen), where the app has a scope kind (the registry's
 * `subjects.scope`; in an app without one, no data is behind a closure). Control-plane code (purge, audit, backfill, triggers)
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

/** The tenants among `tenantIds` that are open (one read of each tenant's record). */
export async function openTenants(tenantIds: Iterable<string>): Promise<Set<string>> {
  const pol = policy();
  const ids = [...new Set(tenantIds)].filter((t) => t !== "");
  if (ids.length === 0) return new Set();
  const snaps = await db().getAll(...ids.map((t) => db().doc(pol.scopeRecordPath(t) ?? "")));
  return new Set(ids.filter((_, k) => isTenantOpen({ exists: snaps[k]!.exists, closure: snaps[k]!.get(TENANT_CLOSURE_FIELD) as unknown })));
}

/** The documents among `snaps` whose scope is open; all of them where the app has no scope kind. */
async function inOpenScopes<T extends DocumentSnapshot>(snaps: T[]): Promise<T[]> {
  if (!policy().scope) return snaps;
  const open = await openTenants(snaps.map(tenantOf));
  return snaps.filter((d) => open.has(tenantOf(d)));
}

export const tenantOf = (snap: DocumentSnapshot): string => {
  const t: unknown = snap.get("tenantId");
  return typeof t === "string" ? t : "";
};

/** Runs a product query: ACTIVE only, then expired documents and those of closed tenants removed. */
export async function readVisible(query: Query, nowMs: number): Promise<QueryDocumentSnapshot[]> {
  const snap = await visibleQuery(query).get();
  return inOpenScopes(snap.docs.filter((d) => isVisibleSnapshot(d, nowMs)));
}

/** Reads one document for the product: null when it is missing, not ACTIVE, past its expiry, or its tenant's closed. */
export async function getVisible(path: string, nowMs: number): Promise<DocumentSnapshot | null> {
  const snap = await db().doc(path).get();
  if (!isVisibleSnapshot(snap, nowMs)) return null;
  return (await inOpenScopes([snap])).length > 0 ? snap : null;
}
