import { segments } from "../../kernel/paths";
import type { PolicyIndex } from "../../kernel/policy";

/** A top-level collection the policy sweep scans, and the field whose passing makes a document due. */
export interface SweepTarget {
  collection: string;
  field: "expireAt" | "retainUntil";
}

/**
 * The second source of purge work, kept deliberately simple: governed data whose own policy has run out,
 * without any deletion request. For each top-level collection whose class has a duration:
 * - TTL classes are due when `expireAt` has passed (the sweeper may be up to a day late; expiry is a
 *   business fact, so the purge removes what it finds);
 * - workflow and archive-workflow classes are due when `retainUntil` has passed (audit records go only
 *   with a verified archive, which the destroy predicate demands).
 * The sweep also takes documents a retention-admin already made PURGE_ELIGIBLE. Nested collections are
 * purged with their top-level parent (children first); inherited classes carry their parent's expiry.
 */
export function sweepTargets(policy: PolicyIndex): SweepTarget[] {
  const out: SweepTarget[] = [];
  for (const rule of policy.registry.collections) {
    const s = segments(rule.pattern);
    if (s.length !== 2) continue;
    const cls = policy.classById(rule.retentionClass);
    if (!cls || cls.durationDays === null || cls.inheritsParentExpiry) continue;
    out.push({ collection: s[0]!, field: cls.mechanism === "ttl" ? "expireAt" : "retainUntil" });
  }
  return out.sort((a, b) => (a.collection < b.collection ? -1 : a.collection > b.collection ? 1 : 0));
}
