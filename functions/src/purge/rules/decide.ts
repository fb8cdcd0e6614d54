import type { UnitRound } from "./unit";
import { evaluateDestroy, type DestroyReason } from "../../kernel/destroy-predicate";
import { heldBy, type ActiveHoldRef } from "../../kernel/held";
import { assertTransition, isLifecycleState, type LifecycleState } from "../../kernel/lifecycle";
import { ancestorDocuments } from "../../kernel/paths";
import type { PolicyIndex } from "../../kernel/policy";

/**
 * The purge's per-document decisions, pure. Three moments ask the same questions with more or less
 * commitment: evaluation (before the brake and the archive), marking (the decision written on the
 * document), and execution (the last check, in the same step that deletes).
 */

/** The unit (and round) a decision is made for (rules/unit.ts). */
export type PurgeUnitRef = UnitRound;

/** A document's claim: the unit, round and policy version whose decision made it PURGE_ELIGIBLE. */
export interface PurgeClaim {
  unitKey: string;
  round: number;
  policyVersion: string;
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
 * PURGE_ELIGIBLE, no decision of this unit on it, or (sweeps only) an open deletion request owns it.
 */
export type BlockReason = Exclude<DestroyReason, "AUTHORIZED_BY_POLICY" | "LEGAL_HOLD"> | "INVALID_STATE" | "NOT_DECIDED" | "OPEN_DELETION_REQUEST";

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
 */
export function evaluateForPurge(doc: PurgeDocFacts, ctx: DecideContext, archiveVerified: boolean | "pending", currentDecision = false): Evaluation {
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
    },
    ctx.policy,
    ctx.nowMs,
  );
  if (decision.reason === "LEGAL_HOLD") return { path: doc.path, verdict: "held", holdId: null, reasonCode: "LEGAL_HOLD" };
  if (decision.reason !== "AUTHORIZED_BY_POLICY") return { path: doc.path, verdict: "blocked", reason: decision.reason };
  const cls = ctx.policy.classById(doc.retentionClass);
  const needsArchive = cls?.archive.required === true;
  try {
    stepsToPurgeEligible(doc.lifecycleState, needsArchive);
  } catch {
    return { path: doc.path, verdict: "blocked", reason: "INVALID_STATE" };
  }
  return { path: doc.path, verdict: "delete", retentionClass: doc.retentionClass ?? "", needsArchive: needsArchive && archiveVerified === "pending" };
}

export type MarkAction =
  | { kind: "mark"; from: LifecycleState; route: LifecycleState[] }
  | { kind: "already" }
  | { kind: "skip"; why: "GONE" | "HELD" | "NOT_ALLOWED" | "CLAIMED" };

/**
 * Marking: the decision is written on the document (PURGE_ELIGIBLE, `purgeDecision`) before any delete.
 * A document another unit has claimed, while that unit's round is still running, is left to it, so two
 * units (a request and a sweep, or two runners) never both delete and record the same path.
 */
export function decideMark(
  doc: PurgeDocFacts,
  unit: PurgeUnitRef,
  ctx: DecideContext,
  archiveVerified: boolean,
  claimActive: (claim: PurgeClaim) => boolean,
): MarkAction {
  const ev = evaluateForPurge(doc, ctx, archiveVerified);
  if (ev.verdict === "gone") return { kind: "skip", why: "GONE" };
  if (ev.verdict === "held") return { kind: "skip", why: "HELD" };
  if (ev.verdict === "blocked") return { kind: "skip", why: "NOT_ALLOWED" };
  if (isCurrentDecision(doc.claim, unit, ctx.policy.version) && doc.lifecycleState === "PURGE_ELIGIBLE") return { kind: "already" };
  if (doc.claim && doc.claim.unitKey !== unit.unitKey && claimActive(doc.claim)) return { kind: "skip", why: "CLAIMED" };
  const from = doc.lifecycleState as LifecycleState;
  return { kind: "mark", from, route: stepsToPurgeEligible(from, ctx.policy.classById(doc.retentionClass)?.archive.required === true) };
}

export type ExecOutcome =
  | { path: string; outcome: "delete" }
  | { path: string; outcome: "gone" }
  | { path: string; outcome: "held"; holdId: string | null; reasonCode: string }
  | { path: string; outcome: "claimed"; by: string }
  | { path: string; outcome: "deferred" }
  | { path: string; outcome: "blocked"; reason: BlockReason };

/**
 * Execution, in the same step that deletes: holds are checked again (records read in this step), the
 * document must carry this unit's own decision, the predicate must still allow it (an archive re-verified
 * now), and no descendant may remain: a parent goes only once everything under it is confirmed gone.
 */
export function decideExecute(
  doc: PurgeDocFacts,
  unit: PurgeUnitRef,
  ctx: DecideContext,
  opts: { archiveVerified: boolean; descendantsRemain: boolean; claimActive: (claim: PurgeClaim) => boolean },
): ExecOutcome {
  const path = doc.path;
  if (!doc.exists) return { path, outcome: "gone" };
  const hold = holdOf(doc, ctx.holds);
  if (hold) return { path, outcome: "held", ...hold };
  if (!isCurrentDecision(doc.claim, unit, ctx.policy.version)) {
    if (doc.claim && doc.claim.unitKey !== unit.unitKey && opts.claimActive(doc.claim)) return { path, outcome: "claimed", by: doc.claim.unitKey };
    return { path, outcome: "blocked", reason: "NOT_DECIDED" };
  }
  if (doc.lifecycleState !== "PURGE_ELIGIBLE") return { path, outcome: "blocked", reason: "INVALID_STATE" };
  const ev = evaluateForPurge(doc, ctx, opts.archiveVerified, true);
  if (ev.verdict === "held") return { path, outcome: "held", holdId: ev.holdId, reasonCode: ev.reasonCode };
  if (ev.verdict === "blocked") return { path, outcome: "blocked", reason: ev.reason };
  if (ev.verdict === "gone") return { path, outcome: "gone" };
  if (opts.descendantsRemain) return { path, outcome: "deferred" };
  return { path, outcome: "delete" };
}

/**
 * For a sweep: ancestors of anything kept (held, blocked) are kept too, so that a purge never orphans a
 * kept child. Returns the delete list without them and the ancestors that were moved out.
 */
export function keepAncestorsOf(deletePaths: readonly string[], keptPaths: Iterable<string>): { delete: string[]; keptAncestors: string[] } {
  const ancestors = new Set<string>();
  for (const k of keptPaths) for (const a of ancestorDocuments(k)) ancestors.add(a);
  const keep = deletePaths.filter((p) => ancestors.has(p));
  return { delete: deletePaths.filter((p) => !ancestors.has(p)), keptAncestors: keep };
}

