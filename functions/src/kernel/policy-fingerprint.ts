import { hashCanonical } from "./canonical";
import type { CollectionRule, Registry } from "./policy-schema";

/**
 * A collection rule's key among the fingerprints: its pattern, prefixed by its database's logical name when it lives
 * in another governed database than the primary (the same pattern may be governed in two databases).
 */
export const fingerprintKey = (rule: Pick<CollectionRule, "pattern" | "database">): string => (rule.database ? `${rule.database}:${rule.pattern}` : rule.pattern);

/**
 * What decides the retention fields a document carries, per collection pattern: the collection's rule and its
 * class, without the class's prose (description, recovery note). Where two registry versions give a pattern the
 * same fingerprint, its documents get the same retention under both, so a document stamped with the older
 * version needs no re-evaluation (the audit's STALE_POLICY_VERSION). The data map is not part of it: erasure is
 * planned afresh under the current version whenever it runs.
 */
export function retentionFingerprints(registry: Registry): Record<string, string> {
  const classes = new Map(registry.classes.map(({ description: _d, recovery: _r, ...rest }) => [rest.id, rest]));
  return Object.fromEntries(registry.collections.map((rule) => [fingerprintKey(rule), hashCanonical({ rule, retentionClass: classes.get(rule.retentionClass) ?? null })]));
}
