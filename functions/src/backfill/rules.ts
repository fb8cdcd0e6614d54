import { isHeld, type ActiveHoldRef } from "../kernel/held";
import { segments } from "../kernel/paths";
import type { CollectionRule } from "../kernel/policy-schema";
import type { PolicyIndex } from "../kernel/policy";
import { computeExpireAt } from "../kernel/retention";

/** The retention facts of one stored document that the backfill decides on. */
export interface BackfillDocFacts {
  path: string;
  legalHold: boolean;
  lifecycleState: string | null;
  expireAtMs: number | null;
  /** The retention anchor (the rule's anchor field, else the document's storage create time); null if neither. */
  anchorMs: number | null;
}

export type BackfillFix =
  | { kind: "SET_EXPIRE_AT"; expireAtMs: number }
  | { kind: "INHERIT_EXPIRE_AT"; expireAtMs: number }
  | { kind: "DELETE_ORPHAN" }
  | { kind: "NONE"; reason: "HAS_EXPIRE_AT" | "HELD" | "NOT_TTL" | "NO_ANCHOR" | "PARENT_HAS_NO_EXPIRY" | "ORPHAN_HELD" };


/**
 * The expiry a TTL document should carry, by policy: its own TTL value when it has one, else what the
 * backfill would set. Null when it carries none and gets none (held, not TTL, no anchor, or a child whose
 * parent has none).
 */
export function effectiveExpireAt(doc: BackfillDocFacts, policy: PolicyIndex, holds: readonly ActiveHoldRef[]): number | null {
  if (isHeld(doc, holds)) return null;
  if (doc.expireAtMs !== null) return doc.expireAtMs;
  const cls = policy.classForPath(doc.path);
  if (!cls || cls.mechanism !== "ttl" || cls.inheritsParentExpiry || doc.anchorMs === null) return null;
  return computeExpireAt(cls, doc.anchorMs);
}

/**
 * What the expiry backfill does to one document. Pure, and idempotent by construction: a document that was
 * fixed plans NONE on the next pass.
 * - A held document never gets a TTL value (holds win; TTL cannot be stopped once it fires).
 * - A TTL document without `expireAt` gets one computed from its class and anchor.
 * - A child under the nested-data rule copies its parent's expiry; a parent that still lacks one is planned
 *   as it will be fixed, so a child needs no second pass and a dry run reports what a real run does.
 * - A child whose parent is gone is an orphan and is deleted, unless it is held.
 * An existing TTL value is never changed: retention is not moved by a backfill.
 *
 * @param parent For children under the nested-data rule: the parent's facts, or null when it no longer exists.
 */
export function planBackfillFix(
  doc: BackfillDocFacts,
  parent: BackfillDocFacts | null | undefined,
  policy: PolicyIndex,
  holds: readonly ActiveHoldRef[],
): BackfillFix {
  const cls = policy.classForPath(doc.path);
  if (!cls || cls.mechanism !== "ttl") return { kind: "NONE", reason: "NOT_TTL" };
  if (cls.inheritsParentExpiry && parent === null) {
    return isHeld(doc, holds) ? { kind: "NONE", reason: "ORPHAN_HELD" } : { kind: "DELETE_ORPHAN" };
  }
  if (isHeld(doc, holds)) return { kind: "NONE", reason: "HELD" };
  if (doc.expireAtMs !== null) return { kind: "NONE", reason: "HAS_EXPIRE_AT" };
  if (cls.inheritsParentExpiry) {
    const parentExpiry = parent ? effectiveExpireAt(parent, policy, holds) : null;
    return parentExpiry === null ? { kind: "NONE", reason: "PARENT_HAS_NO_EXPIRY" } : { kind: "INHERIT_EXPIRE_AT", expireAtMs: parentExpiry };
  }
  const expireAtMs = doc.anchorMs === null ? null : computeExpireAt(cls, doc.anchorMs);
  return expireAtMs === null ? { kind: "NONE", reason: "NO_ANCHOR" } : { kind: "SET_EXPIRE_AT", expireAtMs };
}

/** One scan phase of the backfill: a TTL collection, in the order the pass visits them. */
export interface BackfillPhase {
  pattern: string;
  /** The last collection id of the pattern (a collection-group id for nested patterns). */
  collectionId: string;
  topLevel: boolean;
  inherits: boolean;
  anchorField: string;
}

/**
 * The pass order: TTL collections that own their expiry first, then children under the nested-data rule.
 * Parents first means a child never waits for a later pass; the order is fixed by the registry, so a pass
 * interrupted anywhere and resumed visits documents in exactly the order an uninterrupted pass does.
 */
export function backfillPhases(policy: PolicyIndex): BackfillPhase[] {
  const phase = (r: CollectionRule, inherits: boolean): BackfillPhase => {
    const s = segments(r.pattern);
    return { pattern: r.pattern, collectionId: s[s.length - 2]!, topLevel: s.length === 2, inherits, anchorField: r.anchorField };
  };
  const rules = policy.ttlCollections().map((r) => phase(r, policy.classById(r.retentionClass)?.inheritsParentExpiry ?? false));
  const byPattern = (a: BackfillPhase, b: BackfillPhase) => (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0);
  return [...rules.filter((p) => !p.inherits).sort(byPattern), ...rules.filter((p) => p.inherits).sort(byPattern)];
}
