import { isHeld, type ActiveHoldRef, type HoldMarks } from "../kernel/held";
import type { Actor, EvidenceBody } from "../evidence/rules";
import { patternMatchesSegments, segments } from "../kernel/paths";
import type { CollectionRule } from "../kernel/policy-schema";
import { DAY_MS, type PolicyIndex } from "../kernel/policy";

/**
 * Why a TTL-managed document disappeared:
 * - WORKFLOW: a committed purge batch explains the delete ({@link purgeBatchExplains}): its signed PURGE_BATCH
 *   entry names the path, and the batch committed after the deleted version was written. The purge recorded
 *   its own evidence in the commit that deleted it.
 * - SWEEPER: it carried a TTL value that had passed when the delete happened (Firestore TTL, or a stand-in).
 * - HELD_TTL_INCIDENT: it was held and still carried a TTL value. Holds clear TTL, so the sweeper should
 *   never have been able to reach it: an incident.
 * - HELD_DELETE_INCIDENT: it was held, carried no TTL value, and was deleted anyway: also an incident.
 * - UNEXPLAINED: none of the above (deleted before its expiry, outside the workflow). A PURGE_ELIGIBLE mark
 *   alone explains nothing: a marked document whose batch deferred, stopped or never ran it, deleted by a
 *   script, is unexplained.
 */
export type TtlDeleteClass = "SWEEPER" | "WORKFLOW" | "HELD_TTL_INCIDENT" | "HELD_DELETE_INCIDENT" | "UNEXPLAINED";

/** The retention fields of a deleted document that the classification needs. */
export interface DeletedDocFacts extends HoldMarks {
  expireAtMs: number | null;
}

/**
 * Classifies a delete. A delete a committed purge batch explains is the workflow's, held or not: the batch
 * read the hold fence in the commit that deleted, so it committed before any hold covering the path was
 * placed (or after its release), even when the trigger runs after a placement. Otherwise holds come first
 * (holds/rules.ts#isHeld: its marks, or an active record on it or an ancestor): a held document is an
 * incident whatever else it says. Then an expired TTL value is the sweeper's; anything else is unexplained.
 */
export function classifyTtlDelete(doc: DeletedDocFacts, eventTimeMs: number, holds: readonly ActiveHoldRef[] = [], explainedByPurge = false): TtlDeleteClass {
  if (explainedByPurge) return "WORKFLOW";
  if (isHeld(doc, holds)) return doc.expireAtMs !== null ? "HELD_TTL_INCIDENT" : "HELD_DELETE_INCIDENT";
  if (doc.expireAtMs !== null && doc.expireAtMs <= eventTimeMs) return "SWEEPER";
  return "UNEXPLAINED";
}

/**
 * The purge's mark on a deleted document (`purgeDecision`, written with PURGE_ELIGIBLE by the batch's mark
 * transaction): the unit and the batch record that decided it. The batch id is what makes the explanation a
 * lookup by key, not a scan: its PURGE_BATCH entry carries it (`detail.batch`).
 */
export interface PurgeMark {
  unitKey: string;
  batch: string;
}

export function purgeMarkOf(data: Record<string, unknown> | undefined): PurgeMark | null {
  const d = data?.purgeDecision as { unitKey?: unknown; batch?: unknown } | undefined;
  if (typeof d?.unitKey !== "string" || typeof d.batch !== "string" || d.unitKey === "" || d.batch === "") return null;
  return { unitKey: d.unitKey, batch: d.batch };
}

/** A document version as the purge writes it: an update time as `seconds.nanoseconds` (nanoseconds 9 digits). */
export function versionString(t: { seconds: number; nanoseconds: number }): string {
  return `${t.seconds}.${String(t.nanoseconds).padStart(9, "0")}`;
}

function versionParts(v: string): [number, number] | null {
  const m = /^(\d+)\.(\d{9})$/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** Whether version `a` was written strictly before version `b` (false when either is malformed). */
export function versionBefore(a: string, b: string): boolean {
  const x = versionParts(a);
  const y = versionParts(b);
  return x !== null && y !== null && (x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]));
}

/** A PURGE_BATCH entry found under the mark's batch id, as the trigger read it. */
export interface PurgeBatchWitness {
  action: string;
  paths: readonly string[];
  detail: Readonly<Record<string, unknown>>;
  /** Its hash matches its content and its MAC matches under a key the trigger holds. */
  signed: boolean;
  /** Its commit: the entry is created, never updated, in the commit of the batch's deletes. */
  committedVersion: string;
}

/** The deleted document as its event tells it. */
export interface DeletedVersion {
  path: string;
  /** The deleted version (its last update time); null when the event did not carry it. */
  version: string | null;
  mark: PurgeMark;
}

/**
 * Whether a committed purge batch explains this delete. The batch's deletes, its record's `complete` flag and
 * its PURGE_BATCH entry are one commit (purge/runner/step.ts#inBatch), and the trigger fires after the delete
 * committed, so the entry is there to read whenever the delete was the batch's; an entry that is not there
 * (the batch has not run, or ran and found the document gone) explains nothing, and it never appears later
 * for this delete. It explains the delete only when:
 * - it is a signed PURGE_BATCH entry of the unit and batch the mark names, and it names the path (a batch
 *   that deferred, stopped on a hold or blocked the document does not name it);
 * - the deleted version was written before the batch committed: a copy of a marked document re-created after
 *   the purge deleted it, then deleted again, is not the purge's;
 * - when the batch decided the path again (`detail.redecided`, `path@version`), it decided this version: it
 *   deleted a document that had changed since the mark, and a delete of the marked version before that is not
 *   the purge's.
 * Without the deleted version, nothing ties the delete to the batch's commit, and it is not explained.
 */
export function purgeBatchExplains(deleted: DeletedVersion, entry: PurgeBatchWitness): boolean {
  if (!entry.signed || entry.action !== "PURGE_BATCH") return false;
  if (entry.detail.batch !== deleted.mark.batch || entry.detail.unitKey !== deleted.mark.unitKey) return false;
  if (!entry.paths.includes(deleted.path) || deleted.version === null) return false;
  if (!versionBefore(deleted.version, entry.committedVersion)) return false;
  const redecided = typeof entry.detail.redecided === "string" ? entry.detail.redecided.split("\n") : [];
  const decided = redecided.find((line) => line.startsWith(`${deleted.path}@`));
  return decided === undefined || decided === `${deleted.path}@${deleted.version}`;
}

export type TtlEvidenceAction = "TTL_DELETE" | "TTL_DELETE_HELD_INCIDENT" | "HELD_DELETE_INCIDENT" | "UNEXPLAINED_DELETE";

/** The entry of a page of children removed before the last page of a delete with many children. */
export const TTL_CHILDREN_ACTION = "TTL_CHILDREN_DELETED";

/**
 * What the trigger does for each class.
 * - A workflow delete (one a committed purge batch explains) has no effect at all (no marker, no evidence):
 *   the batch's PURGE_BATCH entry committed with the delete, and the purge removes children before parents.
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
  /** Stable function-name suffix: the collection ids joined, e.g. `logins`, `workspaces_carts`. */
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
 * Whether a delete trigger watches `path`: the purge marks such a document PURGE_ELIGIBLE with its batch
 * before deleting it, so the trigger finds the batch's PURGE_BATCH entry by the batch id (one query, no scan),
 * classifies the delete as WORKFLOW and leaves the evidence to the purge.
 */
export function hasDeleteTrigger(policy: PolicyIndex, path: string): boolean {
  // One cell's view of a registry version has its own collections (kernel/policy.ts#forCell).
  const key = `${policy.version}\u0000${policy.cell ?? ""}`;
  let targets = targetsByVersion.get(key);
  if (!targets) {
    targets = ttlTriggerTargets(policy);
    targetsByVersion.set(key, targets);
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
  /** Totals over every page of the delete. */
  childrenRemoved: number;
  childrenKept: number;
  /** The children removed in this entry's transaction (at most a page): each is named after the deleted document. */
  childPaths: readonly string[];
  /** Entries of earlier pages (TTL_CHILDREN_DELETED) that name the other children removed. */
  childPages: number;
  parentRecreated: boolean;
  /** The hold that makes a held delete an incident. */
  holdId: string | null;
  /** The purge's mark on the deleted document when no committed batch explains the delete. */
  mark: PurgeMark | null;
  /**
   * The hold fence generation the deleting transaction read: the ledger's order of this delete against hold
   * placements and releases in other chains (evidence/rules.ts#deletedWhileHeld).
   */
  fenceGeneration?: number;
}

/**
 * The evidence entry of one processed delete: paths, counts, class, versions and the event id; never the
 * deleted content. `paths` names the deleted document first, then each child this transaction removed
 * (`counts.childrenNamed` of them); children removed by earlier pages are named by their own entries
 * (`counts.childPages`, {@link ttlChildrenEvidenceBody}). `deletionLagMs` (event time minus expiry) feeds the
 * cleanup-lag metric. A marked document no batch explains names the batch that marked it (`markedBy`).
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
    paths: [i.path, ...i.childPaths],
    counts: { childrenRemoved: i.childrenRemoved, childrenKept: i.childrenKept, childrenNamed: i.childPaths.length, childPages: i.childPages },
    detail: {
      expireAtMs: i.expireAtMs,
      eventTimeMs: i.eventTimeMs,
      deletionLagMs: i.expireAtMs === null ? null : i.eventTimeMs - i.expireAtMs,
      docPolicyVersion: i.docPolicyVersion,
      parentRecreated: i.parentRecreated,
      ...(i.mark ? { markedBy: `${i.mark.unitKey}/${i.mark.batch}` } : {}),
      ...(i.fenceGeneration !== undefined ? { fenceGeneration: i.fenceGeneration } : {}),
    },
  };
}

export interface TtlChildrenEvidenceInput {
  cls: TtlDeleteClass;
  actor: Actor;
  eventId: string;
  /** The deleted parent. */
  parentPath: string;
  retentionClass: string | null;
  policyVersion: string;
  nowMs: number;
  /** The children this page removed, in the order they were walked. */
  childPaths: readonly string[];
  /** Children of this page kept under a hold. */
  kept: number;
  /** The page's place among the delete's entries of children, from 0. */
  page: number;
  fenceGeneration: number;
}

/**
 * The entry of one page of children removed before the delete's last page, in the transaction that removes
 * them: every child the trigger removes is named in the evidence committed with its delete, and an entry
 * stays bounded (a page of paths) however many children a parent had.
 */
export function ttlChildrenEvidenceBody(i: TtlChildrenEvidenceInput): EvidenceBody {
  return {
    action: TTL_CHILDREN_ACTION,
    actor: i.actor,
    decision: { reason: i.cls, retentionClass: i.retentionClass },
    policyVersion: i.policyVersion,
    atMs: i.nowMs,
    eventId: i.eventId,
    paths: [...i.childPaths],
    counts: { childrenRemoved: i.childPaths.length, childrenKept: i.kept, page: i.page },
    detail: { parentPath: i.parentPath, fenceGeneration: i.fenceGeneration },
  };
}
