import type { UnitRound } from "./unit";
import { evaluateDestroy, type DestroyReason } from "../../kernel/destroy-predicate";
import { heldBy, type ActiveHoldRef } from "../../kernel/held";
import { assertTransition, isLifecycleState, type LifecycleState } from "../../kernel/lifecycle";
import type { PolicyIndex } from "../../kernel/policy";

/**
 * The purge's per-document decisions, pure. The same questions are asked with more or less commitment:
 * evaluation (planning: the decision a batch record keeps), marking (only for documents whose collection
 * has a delete trigger), and execution (the last check, in the transaction that deletes, for a document
 * that must be read there).
 */

/** The unit (and round) a decision is made for (rules/unit.ts). */
export type PurgeUnitRef = UnitRound;

/** A mark's claim: the unit, round and policy version whose decision made the document PURGE_ELIGIBLE. */
export interface PurgeClaim {
  unitKey: string;
  round: number;
  policyVersion: string;
  /** The batch record whose mark transaction wrote the decision (absent on decisions written before marks named it). */
  batch?: string;
}

/** Whether `claim` is the decision of `unit`'s current round under the current policy version. */
export function isCurrentDecision(claim: PurgeClaim | null, unit: PurgeUnitRef, policyVersion: string): boolean {
  return claim !== null && claim.unitKey === unit.unitKey && claim.round === unit.round && claim.policyVersion === policyVersion;
}

/** What the purge reads of a document to decide about it (never business content). */
export interface PurgeDocFacts {
  path: string;
  exists: boolean;
  retentionClass: string | null;
  /** As stored; may be outside the state machine on a corrupted document. */
  lifecycleState: string | null;
  legalHold: boolean;
  holdIds: readonly string[];
  expireAtMs: number | null;
  retainUntilMs: number | null;
  claim: PurgeClaim | null;
}

export interface DecideContext {
  holds: readonly ActiveHoldRef[];
  /** True for paths of a deletion request whose grace period is over. */
  workflowEligible: boolean;
  policy: PolicyIndex;
  nowMs: number;
}

/**
 * Why the purge leaves a path: a refusal of the destroy predicate, a state it cannot route to
 * PURGE_ELIGIBLE, or (sweeps only) an open deletion request owns it.
 */
export type BlockReason = Exclude<DestroyReason, "AUTHORIZED_BY_POLICY" | "LEGAL_HOLD"> | "INVALID_STATE" | "OPEN_DELETION_REQUEST";

export type Evaluation =
  | { path: string; verdict: "delete"; retentionClass: string; needsArchive: boolean }
  | { path: string; verdict: "gone" }
  | { path: string; verdict: "held"; holdId: string | null; reasonCode: string }
  | { path: string; verdict: "blocked"; reason: BlockReason };

/** The hold that stops a document, if any (holds/rules.ts#heldBy, the one definition of "held"). */
export const holdOf = (doc: PurgeDocFacts, holds: readonly ActiveHoldRef[]) => heldBy(doc, holds);

/**
 * The lifecycle moves from `from` to PURGE_ELIGIBLE, each one checked against the state machine. Data that
 * needs an archive passes through ARCHIVED (its archive is verified by then); ACTIVE data (expired, or
 * found by the sweep) passes through SOFT_DELETED. Throws INVALID_LIFECYCLE_* for LEGAL_HOLD and PURGED.
 */
export function stepsToPurgeEligible(from: LifecycleState, archiveRequired: boolean): LifecycleState[] {
  const route: LifecycleState[] = [];
  let at: LifecycleState = from;
  const go = (to: LifecycleState) => {
    assertTransition(at, to);
    route.push(to);
    at = to;
  };
  if (at === "PURGE_ELIGIBLE") return route;
  if (at === "ACTIVE") go("SOFT_DELETED");
  if (at === "SOFT_DELETED" && archiveRequired) go("ARCHIVED");
  go("PURGE_ELIGIBLE");
  return route;
}

/**
 * Evaluation, before anything is written: holds first, then the destroy predicate. `archiveVerified`
 * "pending" means the archive step has not run yet: the document is judged as if its archive were
 * verified, and `needsArchive` says that the archive step must verify one before it may be marked.
 * `archivedByDataMap`: the data map keeps this document as an archive copy (its `archive` action), so it needs
 * a verified archive whatever its class says, and the workflow may then delete it.
 */
export function evaluateForPurge(doc: PurgeDocFacts, ctx: DecideContext, archiveVerified: boolean | "pending", currentDecision = false, archivedByDataMap = false): Evaluation {
  if (!doc.exists) return { path: doc.path, verdict: "gone" };
  const hold = holdOf(doc, ctx.holds);
  if (hold) return { path: doc.path, verdict: "held", ...hold };
  if (!isLifecycleState(doc.lifecycleState)) return { path: doc.path, verdict: "blocked", reason: "INVALID_STATE" };
  const decision = evaluateDestroy(
    {
      path: doc.path,
      doc: { ...doc, lifecycleState: doc.lifecycleState },
      activeHolds: ctx.holds,
      archiveVerified: archiveVerified === "pending" ? true : archiveVerified,
      workflowEligible: ctx.workflowEligible,
      currentDecision,
      workflowArchives: archivedByDataMap,
    },
    ctx.policy,
    ctx.nowMs,
  );
  if (decision.reason === "LEGAL_HOLD") return { path: doc.path, verdict: "held", holdId: null, reasonCode: "LEGAL_HOLD" };
  if (decision.reason !== "AUTHORIZED_BY_POLICY") return { path: doc.path, verdict: "blocked", reason: decision.reason };
  const cls = ctx.policy.classById(doc.retentionClass);
  const needsArchive = cls?.archive.required === true || archivedByDataMap;
  try {
    stepsToPurgeEligible(doc.lifecycleState, needsArchive);
  } catch {
    return { path: doc.path, verdict: "blocked", reason: "INVALID_STATE" };
  }
  return { path: doc.path, verdict: "delete", retentionClass: doc.retentionClass ?? "", needsArchive: needsArchive && archiveVerified === "pending" };
}

export type MarkAction = { kind: "mark"; from: LifecycleState; route: LifecycleState[] } | { kind: "already" } | { kind: "skip"; why: "GONE" | "HELD" | "NOT_ALLOWED" };

/**
 * Marking, for a document whose collection has a delete trigger: the decision is also written on the
 * document (PURGE_ELIGIBLE, `purgeDecision`) before its delete, so the trigger classifies the delete as the
 * purge's own and leaves the evidence to it.
 */
export function decideMark(doc: PurgeDocFacts, unit: PurgeUnitRef, ctx: DecideContext, archiveVerified: boolean, archivedByDataMap = false, batch?: string): MarkAction {
  const ev = evaluateForPurge(doc, ctx, archiveVerified, false, archivedByDataMap);
  if (ev.verdict === "gone") return { kind: "skip", why: "GONE" };
  if (ev.verdict === "held") return { kind: "skip", why: "HELD" };
  if (ev.verdict === "blocked") return { kind: "skip", why: "NOT_ALLOWED" };
  // The mark names the batch the trigger looks up (ttl/rules.ts#purgeBatchExplains): a document this round
  // marked in another batch (a parent its planned batch deferred, taken up again by a late batch) is marked
  // again, so the mark names the batch that deletes it.
  const sameBatch = batch === undefined || doc.claim?.batch === batch;
  if (isCurrentDecision(doc.claim, unit, ctx.policy.version) && doc.lifecycleState === "PURGE_ELIGIBLE" && sameBatch) return { kind: "already" };
  const from = doc.lifecycleState as LifecycleState;
  return { kind: "mark", from, route: stepsToPurgeEligible(from, ctx.policy.classById(doc.retentionClass)?.archive.required === true || archivedByDataMap) };
}

export type ExecOutcome =
  | { path: string; outcome: "delete"; redecided: boolean }
  | { path: string; outcome: "gone" }
  | { path: string; outcome: "held"; holdId: string | null; reasonCode: string }
  | { path: string; outcome: "deferred" }
  | { path: string; outcome: "blocked"; reason: BlockReason };

/**
 * Execution, for a document read in the transaction that deletes it: holds first (records read in that
 * transaction), then the predicate (an archive verified again now, where the class or the data map
 * (`archivedByDataMap`) needs one), then no descendant may remain: a parent
 * goes only once everything under it is gone. `recorded` says the document is the version its batch
 * record decided on (or carries this round's own mark); one that changed since is judged afresh, and a
 * delete then is a new decision (`redecided`), recorded in the same commit as the delete itself.
 */
export function decideExecute(
  doc: PurgeDocFacts,
  unit: PurgeUnitRef,
  ctx: DecideContext,
  opts: {
    recorded: boolean;
    archiveVerified: boolean;
    descendantsRemain: boolean;
    archivedByDataMap?: boolean;
    /**
     * A trigger-collection document (`mark`): the batch that is to delete it. Its delete trigger explains the
     * delete only through the mark's batch (ttl/rules.ts#purgeBatchExplains), so a document that no longer
     * carries this batch's mark (written afresh since the mark) is deferred, never deleted unmarked.
     */
    markedBy?: string;
  },
): ExecOutcome {
  const path = doc.path;
  if (!doc.exists) return { path, outcome: "gone" };
  const hold = holdOf(doc, ctx.holds);
  if (hold) return { path, outcome: "held", ...hold };
  const marked = isCurrentDecision(doc.claim, unit, ctx.policy.version) && doc.lifecycleState === "PURGE_ELIGIBLE";
  const ev = evaluateForPurge(doc, ctx, opts.archiveVerified, marked, opts.archivedByDataMap === true);
  if (ev.verdict === "held") return { path, outcome: "held", holdId: ev.holdId, reasonCode: ev.reasonCode };
  if (ev.verdict === "blocked") return { path, outcome: "blocked", reason: ev.reason };
  if (ev.verdict === "gone") return { path, outcome: "gone" };
  if (opts.descendantsRemain) return { path, outcome: "deferred" };
  if (opts.markedBy !== undefined && !(marked && doc.claim?.batch === opts.markedBy)) return { path, outcome: "deferred" };
  return { path, outcome: "delete", redecided: !opts.recorded && !marked };
}
