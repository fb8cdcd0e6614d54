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
