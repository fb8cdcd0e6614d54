/**
 * The business-visibility predicate, the one rule every product read path applies: only ACTIVE data whose
 * expiry has not passed is visible. Expiry is a business fact: a document whose `expireAt` has passed is
 * invisible at once, whether or not the TTL sweeper has removed it yet. The security rules state the same
 * rule for clients (`firestore.rules`, `isVisible`).
 */
export function isBusinessVisible(
  doc: { lifecycleState?: string | null; expireAtMs?: number | null },
  nowMs: number,
): boolean {
  if (doc.lifecycleState !== "ACTIVE") return false;
  return doc.expireAtMs === null || doc.expireAtMs === undefined || doc.expireAtMs > nowMs;
}

/**
 * The field on a scope's record (the registry's `subjects.scope.record`, e.g. a tenant's document) that records its closure, written when a second
 * staff member approves it: `{ requestId, reason: "TENANT_CLOSURE", closedAt }`. Server-only (a protected field).
 */
export const TENANT_CLOSURE_FIELD = "closure";

/** The soft-delete reason of a tenant's closure: on its evidence, its request and its tenant's document. */
export const TENANT_CLOSURE_REASON = "TENANT_CLOSURE";

/**
 * Whether a tenant's data may be shown at all: its document exists and carries no closure. From the moment a
 * closure is approved every document of the tenant is hidden, whatever its own state: a document a hold kept
 * ACTIVE, or one a hold's release brings back, stays out of every product read. A tenant with no document
 * (never created, or purged) shows nothing either. The security rules state the same rule (`tenantOpen`).
 */
export function isTenantOpen(tenant: { exists: boolean; closure?: unknown }): boolean {
  return tenant.exists && (tenant.closure === undefined || tenant.closure === null);
}
