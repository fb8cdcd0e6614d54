import { isHeld, type ActiveHoldRef, type HoldMarks } from "../kernel/held";
import type { Actor, EvidenceBody } from "../evidence/rules";
import { patternMatchesSegments, segments } from "../kernel/paths";
import type { CollectionRule } from "../kernel/policy-schema";
import { DAY_MS, type PolicyIndex } from "../kernel/policy";

/**
 * Why a TTL-managed document disappeared, as far as the deleted document itself can tell:
 * - SWEEPER: it carried a TTL value that had passed when the delete happened (Firestore TTL, or a stand-in).
 * - WORKFLOW: the purge deleted it after marking it PURGE_ELIGIBLE; the purge records its own evidence.
 * - HELD_TTL_INCIDENT: it was held and still carried a TTL value. Holds clear TTL, so the sweeper should
 *   never have been able to reach it: an incident.
 * - HELD_DELETE_INCIDENT: it was held, carried no TTL value, and was deleted anyway: also an incident.
 * - UNEXPLAINED: none of the above (deleted before its expiry, outside the workflow).
 */
export type TtlDeleteClass = "SWEEPER" | "WORKFLOW" | "HELD_TTL_INCIDENT" | "HELD_DELETE_INCIDENT" | "UNEXPLAINED";

/** The retention fields of a deleted document that the classification needs. */
export interface DeletedDocFacts extends HoldMarks {
  expireAtMs: number | null;
}

/**
 * Classifies a delete. Holds are checked first (holds/rules.ts#isHeld: its marks, or an active record on it
 * or an ancestor): a held document is an incident whatever else it says, so a hold placed mid-purge
 * (PURGE_ELIGIBLE and held) is never passed off as a workflow delete.
 */
export function classifyTtlDelete(doc: DeletedDocFacts, eventTimeMs: number, holds: readonly ActiveHoldRef[] = []): TtlDeleteClass {
  if (isHeld(doc, holds)) return doc.expireAtMs !== null ? "HELD_TTL_INCIDENT" : "HELD_DELETE_INCIDENT";
  if (doc.lifecycleState === "PURGE_ELIGIBLE") return "WORKFLOW";
  if (doc.expireAtMs !== null && doc.expireAtMs <= eventTimeMs) return "SWEEPER";
  return "UNEXPLAINED";
}

export type TtlEvidenceAction = "TTL_DELETE" | "TTL_DELETE_HELD_INCIDENT" | "HELD_DELETE_INCIDENT" | "UNEXPLAINED_DELETE";

/**
 * What the trigger does for each class.
 * - A workflow delete has no effect at all (no marker, no evidence): the purge wrote the decision and the
 *   delete's evidence in the same transaction as the delete, and it removes children before parents.
 *   Writing again would only add contention on the evidence chain head during large purges.
 * - Held deletes never touch the children: a hold on the parent covers its subtree, and removing them
 *   would turn one incident into two. They stay for a person to review; the audit reports them.
 * - Everything else removes the children, which would otherwise be orphans (TTL never cascades).
 */
export function ttlDeletePlan(cls: TtlDeleteClass): {
  action: TtlEvidenceAction | null;
  removeChildren: boolean;
  severity: "info" | "warn" | "error";
} {
  switch (cls) {
    case "SWEEPER":
      return { action: "TTL_DELETE", removeChildren: true, severity: "info" };
    case "WORKFLOW":
      return { action: null, removeChildren: false, severity: "info" };
    case "HELD_TTL_INCIDENT":
      return { action: "TTL_DELETE_HELD_INCIDENT", removeChildren: false, severity: "error" };
    case "HELD_DELETE_INCIDENT":
      return { action: "HELD_DELETE_INCIDENT", removeChildren: false, severity: "error" };
    case "UNEXPLAINED":
      return { action: "UNEXPLAINED_DELETE", removeChildren: true, severity: "warn" };
  }
}

/** When an idempotency marker may be swept: it must outlive every redelivery of its event. */
export function markerExpireAtMs(nowMs: number, policy: PolicyIndex): number {
  return nowMs + policy.registry.processedEventTtlDays * DAY_MS;
}

/** A TTL delete trigger: one per TTL-managed collection that is not itself a child under the nested-data rule. */
export interface TtlTriggerTarget {
  /** Stable function-name suffix: the collection ids joined, e.g. `sessions`, `tenants_carts`. */
  name: string;
  pattern: string;
  /** Child collection ids the registry places under this parent (the nested-data rule). */
  childCollections: string[];
}

/**
 * The delete triggers the registry asks for. Inherited classes (children such as tokens) get none: their
 * parent's trigger removes them, because TTL would never reach them in time on its own.
 */
export function ttlTriggerTargets(policy: PolicyIndex): TtlTriggerTarget[] {
  return policy
    .ttlCollections()
    .filter((r) => !r.parentPattern && !policy.classById(r.retentionClass)?.inheritsParentExpiry)
    .map((r) => ({ name: triggerNameFor(r), pattern: r.pattern, childCollections: childCollectionIds(policy, r.pattern) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const targetsByVersion = new Map<string, TtlTriggerTarget[]>();

/**
 * Whether a delete trigger watches `path`: the purge marks such a document PURGE_ELIGIBLE before deleting
 * it, so the trigger classifies the delete as WORKFLOW and leaves the evidence to the purge.
 */
export function hasDeleteTrigger(policy: PolicyIndex, path: string): boolean {
  let targets = targetsByVersion.get(policy.version);
  if (!targets) {
    targets = ttlTriggerTargets(policy);
    targetsByVersion.set(policy.version, targets);
  }
  const s = segments(path);
  return targets.some((t) => patternMatchesSegments(t.pattern, s));
}

function triggerNameFor(rule: CollectionRule): string {
  return segments(rule.pattern)
    .filter((_, i) => i % 2 === 0)
    .join("_");
}

function childCollectionIds(policy: PolicyIndex, parentPattern: string): string[] {
  return [...new Set(policy.childRulesOf(parentPattern).map((r) => segments(r.pattern).at(-2)!))].sort();
}

export interface TtlEvidenceInput {
  action: TtlEvidenceAction;
  cls: TtlDeleteClass;
  actor: Actor;
  eventId: string;
  path: string;
  retentionClass: string | null;
  policyVersion: string;
  /** The version recorded on the deleted document, when it differs from the enforcing one. */
  docPolicyVersion: string | null;
  expireAtMs: number | null;
  eventTimeMs: number;
  nowMs: number;
  childrenRemoved: number;
  childrenKept: number;
  parentRecreated: boolean;
  /** The hold that makes a held delete an incident. */
  holdId: string | null;
  /**
   * The hold fence generation the deleting transaction read: the ledger's order of this delete against hold
   * placements and releases in other chains (evidence/rules.ts#deletedWhileHeld).
   */
  fenceGeneration?: number;
}

/**
 * The evidence entry of one processed delete: paths, counts, class, versions and the event id; never the
 * deleted content. `deletionLagMs` (event time minus expiry) feeds the cleanup-lag metric.
 */
export function ttlEvidenceBody(i: TtlEvidenceInput): EvidenceBody {
  return {
    action: i.action,
    actor: i.actor,
    decision: { reason: i.cls, retentionClass: i.retentionClass },
    policyVersion: i.policyVersion,
    atMs: i.nowMs,
    eventId: i.eventId,
    holdId: i.holdId,
    paths: [i.path],
    counts: { childrenRemoved: i.childrenRemoved, childrenKept: i.childrenKept },
    detail: {
      expireAtMs: i.expireAtMs,
      eventTimeMs: i.eventTimeMs,
      deletionLagMs: i.expireAtMs === null ? null : i.eventTimeMs - i.expireAtMs,
      docPolicyVersion: i.docPolicyVersion,
      parentRecreated: i.parentRecreated,
      ...(i.fenceGeneration !== undefined ? { fenceGeneration: i.fenceGeneration } : {}),
    },
  };
}
