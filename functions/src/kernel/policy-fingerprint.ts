import { hashCanonical } from "./canonical";
import type { Registry } from "./policy-schema";

/**
 * What decides the retention fields a document carries, per collection pattern: the collection's rule and its
 * class, without the class's prose (description, recovery note). Where two registry versions give a pattern the
 * same fingerprint, its documents get the same retention under both, so a document stamped with the older
 * version needs no re-evaluation (the audit's STALE_POLICY_VERSION). The data map is not part of it: erasure is
 * planned afresh under the current version whenever it runs.
 */
export function retentionFingerprints(registry: Registry): Record<string, string> {
  const classes = new Map(registry.classes.map(({ description: _d, recovery: _r, ...rest }) => [rest.id, rest]));
  return Object.fromEntries(registry.collections.map((rule) => [rule.pattern, hashCanonical({ rule, retentionClass: classes.get(rule.retentionClass) ?? null })]));
}
