import { EVIDENCE_TX, openEvidence, readEntry, recordEvidence, verifierKeys } from "../../evidence/index";
import { getAuth } from "firebase-admin/auth";
import { FieldValue, type DocumentReference, type Transaction } from "firebase-admin/firestore";
import { hashCanonical } from "../../kernel/canonical";
import { notFound, preconditionFailed } from "../../kernel/errors";
import {
  admitUnits,
  brakeDecisionEvidence,
  evaluateBrake,
  unitBrakeKey,
  verifyDecisionBinding,
  type BrakeDecision,
  type BrakeDecisionClaim,
  type BrakeResult,
  type BrakeVerdict,
} from "../rules/brake";
import { adminApp, COLLECTIONS, db } from "../../platform/firestore";
import { toMs, toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { type StepEnv } from "./env";
import type { UnitPlan } from "./plan";
import { requestRef } from "../store";
import { policy } from "../../platform/registry";
import { classSizes, reserveInRun, type RunBudget } from "./run-budget";

/**
 * `retentionJobs/brake-{runKey}`: one deletion set the brake holds back, as a console lists it. State:
 * WAITING (tripped, no usable decision), APPROVED (a retention-admin approved it through approvePurgeRun; not
 * yet used, and only until it expires), DENIED (held back until another decision), USED (an approved run took
 * it; if the same set trips again it waits again). It names its units, their manifest hashes, what they would
 * delete per class and why the brake tripped. The decision on it counts only when the evidence chain proves it.
 */
export const brakeRecordRef = (runKey: string): DocumentReference => db().collection(COLLECTIONS.retentionJobs).doc(`brake-${runKey}`);

export type BrakeRecordState = "WAITING" | "APPROVED" | "DENIED" | "USED";

/** The decision a brake record names, as a claim the purge checks against the evidence chain. */
function claimOf(runKey: string, data: Record<string, unknown> | undefined): BrakeDecisionClaim | null {
  const d = data?.decision as Record<string, unknown> | null | undefined;
  if (!d || (d.decision !== "APPROVE" && d.decision !== "DENY") || typeof d.by !== "string" || typeof d.evidenceSeq !== "number" || typeof d.evidenceHash !== "string") {
    return null;
  }
  const evidenceShard = typeof d.evidenceShard === "string" ? d.evidenceShard : null;
  return { runKey, decision: d.decision, approver: d.by, expiresAtMs: toMs(d.expiresAt), evidenceShard, evidenceSeq: d.evidenceSeq, evidenceHash: d.evidenceHash };
}

/**
 * Reads the evidence entry a decision names (and the one before it, for the link) inside the transaction, and
 * checks the binding ({@link verifyDecisionBinding}).
 */
async function proveDecision(tx: Transaction, claim: BrakeDecisionClaim): Promise<string | null> {
  if (claim.evidenceShard === null) return "NO_EVIDENCE";
  const [entry, prev] = await Promise.all([readEntry(claim.evidenceShard, claim.evidenceSeq, tx), claim.evidenceSeq > 1 ? readEntry(claim.evidenceShard, claim.evidenceSeq - 1, tx) : null]);
  return verifyDecisionBinding(claim, entry, prev ? { seq: prev.seq, hash: prev.hash } : null, verifierKeys());
}

/** Whether a uid holds the retention-admin role now (custom claims, read from Auth). */
async function approverStanding(uid: string): Promise<"OK" | "APPROVER_UNKNOWN" | "APPROVER_NOT_RETENTION_ADMIN"> {
  try {
    const user = await getAuth(adminApp()).getUser(uid);
    const roles = (user.customClaims?.roles as unknown[] | undefined) ?? [];
    return roles.includes("retention-admin") ? "OK" : "APPROVER_NOT_RETENTION_ADMIN";
  } catch (err) {
    if ((err as { code?: string }).code === "auth/user-not-found") return "APPROVER_UNKNOWN";
    throw err;
  }
}

const total = (counts: Readonly<Record<string, number>>) => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * A unit that trips the brake on its own: its record says WAITING (or stays DENIED) and PURGE_BRAKE_TRIPPED
 * is recorded, unless a usable approval stands, in which case the record becomes USED and PURGE_BRAKE_APPROVED
 * is recorded. Usable: APPROVE, proven by the evidence chain, not expired (wall clock), by someone who still
 * holds the retention-admin role. One transaction for the record and its evidence.
 */
async function settleWaiting(plan: UnitPlan, runKey: string, result: BrakeResult, env: StepEnv): Promise<{ approved: boolean; state: BrakeRecordState; why: string }> {
  const ref = brakeRecordRef(runKey);
  const pol = policy();
  // Auth cannot be read in a transaction: the approver's standing is read first, for the approver named now.
  const before = claimOf(runKey, (await ref.get()).data());
  const standing = before?.decision === "APPROVE" ? await approverStanding(before.approver) : null;
  const wallMs = env.holder.clock();
  const outcome = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const data = snap.data();
    const state = data?.state as BrakeRecordState | undefined;
    const claim = claimOf(runKey, data);
    let why = "NONE";
    if (state === "APPROVED") {
      const problem = claim ? await proveDecision(tx, claim) : "NO_EVIDENCE";
      if (problem) why = problem;
      else if (claim!.decision !== "APPROVE") why = "WRONG_DECISION";
      else if (claim!.approver !== before?.approver || standing === null) why = "APPROVAL_CHANGED";
      else if (standing !== "OK") why = standing;
      else if (claim!.expiresAtMs === null || claim!.expiresAtMs <= wallMs) why = "APPROVAL_EXPIRED";
      else why = "APPROVED";
    } else if (state === "DENIED") {
      why = "DENIED";
    }
    const evidence = await openEvidence(tx, plan.unitKey);
    const base = {
      actor: env.actor,
      policyVersion: pol.version,
      atMs: env.nowMs,
      asOfMs: env.asOfMs,
      correlationId: env.correlationId,
      requestId: plan.requestId,
      manifestHash: plan.manifestHash,
      counts: { wouldDelete: result.total, units: 1 },
    };
    const violations = result.violations.map((v) => ({ ...v }));
    if (why === "APPROVED") {
      tx.update(ref, { state: "USED", usedAt: toTimestamp(wallMs), usedBy: env.holder.owner, usedByCorrelationId: env.correlationId });
      evidence.append({
        ...base,
        action: "PURGE_BRAKE_APPROVED",
        decision: { reason: "RETENTION_ADMIN_APPROVED", violations },
        detail: { runKey, unitKey: plan.unitKey, approvedBy: claim!.approver, approvalShard: claim!.evidenceShard, approvalSeq: claim!.evidenceSeq, expiresAtMs: claim!.expiresAtMs },
      });
      return { approved: true, state: "USED" as const, why, approver: claim!.approver };
    }
    const next: BrakeRecordState = state === "DENIED" ? "DENIED" : "WAITING";
    tx.set(
      ref,
      {
        runKey,
        state: next,
        units: [plan.unitKey],
        kind: plan.kind,
        requestId: plan.requestId,
        collection: plan.collection,
        manifestHashes: [{ unitKey: plan.unitKey, manifestHash: plan.manifestHash }],
        countsByClass: plan.deleteByClass,
        wouldDelete: result.total,
        violations,
        policyVersion: pol.version,
        lastTrippedAt: toTimestamp(wallMs),
        lastApprovalProblem: why,
        trips: FieldValue.increment(1),
        ...(snap.exists ? {} : { firstTrippedAt: toTimestamp(wallMs) }),
        // A set that was used and trips again is a new deletion round: it needs a new decision.
        ...(state === "USED" ? { decision: null, usedAt: FieldValue.delete(), usedBy: FieldValue.delete(), usedByCorrelationId: FieldValue.delete() } : {}),
        ...(snap.exists ? {} : { decision: null }),
      },
      { merge: true },
    );
    evidence.append({
      ...base,
      action: "PURGE_BRAKE_TRIPPED",
      decision: { reason: "MASS_DELETION_BRAKE", violations },
      detail: { runKey, unitKey: plan.unitKey, approval: why },
    });
    return { approved: false, state: next, why, approver: null };
  }, EVIDENCE_TX);
  if (outcome.approved) log.warn("purge.brake.approved", { runKey, unitKey: plan.unitKey, total: result.total });
  else {
    log.error("purge.brake.tripped", {
      runKey,
      unitKey: plan.unitKey,
      total: result.total,
      approval: outcome.why,
      violations: result.violations.map((v) => (v.retentionClass ? `${v.kind}:${v.retentionClass}` : v.kind)),
    });
  }
  return { approved: outcome.approved, state: outcome.state, why: outcome.why };
}

/** A fresh unit for the brake, and when its erasure is due. */
export interface BrakeInput {
  plan: UnitPlan;
  dueMs: number;
}

/** Units without a due date (policy sweeps) go after every erasure that has one. */
export const NO_DUE_DATE = Number.MAX_SAFE_INTEGER;

/** When each fresh unit is due: a request's `dueAt`; sweeps have none. One batched read. */
export async function dueDates(plans: readonly UnitPlan[]): Promise<BrakeInput[]> {
  const requests = plans.filter((p) => p.requestId !== null);
  const snaps = requests.length > 0 ? await db().getAll(...requests.map((p) => requestRef(p.requestId!))) : [];
  const due = new Map(snaps.map((s) => [s.id, toMs(s.get("dueAt")) ?? NO_DUE_DATE]));
  return plans.map((plan) => ({ plan, dueMs: plan.requestId !== null ? (due.get(plan.requestId) ?? NO_DUE_DATE) : NO_DUE_DATE }));
}

export interface HeldBack {
  unitKey: string;
  outcome: "BRAKE_REFUSED" | "BRAKE_DEFERRED";
  reason: string;
  runKey?: string;
}

export interface BrakeOutcome {
  /** The units that run now, in admission order (oldest due first). */
  admitted: string[];
  heldBack: HeldBack[];
  /** For the run summary. */
  summary: {
    status: "OK" | "APPROVED" | "DEFERRED" | "TRIPPED";
    wouldDelete: number;
    waiting: { runKey: string; unitKey: string; state: BrakeRecordState; approval: string; wouldDelete: number; violations: BrakeResult["violations"] }[];
    approved: { runKey: string; unitKey: string }[];
    deferred: string[];
  };
}

function summaryStatus(s: Omit<BrakeOutcome["summary"], "status">): BrakeOutcome["summary"]["status"] {
  if (s.waiting.length > 0) return "TRIPPED";
  if (s.deferred.length > 0) return "DEFERRED";
  return s.approved.length > 0 ? "APPROVED" : "OK";
}

/** The brake's verdicts over a run's fresh units (no writes): what a dry run reports. A run with a budget judges by its sizes and limits. */
export async function judgeBrake(inputs: readonly BrakeInput[], budget: RunBudget | null = null): Promise<BrakeVerdict[]> {
  const classes = [...new Set(inputs.flatMap((i) => Object.entries(i.plan.deleteByClass).flatMap(([c, n]) => (n > 0 ? [c] : []))))];
  const sizes = budget ? budget.classSizes : await classSizes(classes);
  return admitUnits(
    inputs.map((i) => ({ unitKey: i.plan.unitKey, manifestHash: i.plan.manifestHash, deleteByClass: i.plan.deleteByClass, dueMs: i.dueMs })),
    sizes,
    budget ? budget.limits : policy().registry.purge,
  );
}

/** PURGE_BRAKE_DEFERRED: units within the limits on their own that the run's limits leave for a later run. */
async function recordDeferred(chainKey: string, units: readonly string[], wouldDelete: number, env: StepEnv): Promise<void> {
  await recordEvidence(chainKey, {
    action: "PURGE_BRAKE_DEFERRED",
    actor: env.actor,
    decision: { reason: "BRAKE_RUN_LIMIT" },
    policyVersion: policy().version,
    atMs: env.nowMs,
    asOfMs: env.asOfMs,
    correlationId: env.correlationId,
    counts: { units: units.length, wouldDelete },
    detail: { units: units.slice(0, 20).join(","), unitsHash: hashCanonical({ deferred: units }) },
  });
  log.warn("purge.brake.deferred", { units: units.length, wouldDelete });
}

/**
 * The mass-deletion brake over a run's fresh units, before anything is archived, marked or deleted
 * (`admitUnits`): a unit that trips it on its own waits for an approval under its own key (or runs, when an
 * approval of exactly its deletion set stands), the others run oldest due first until the run's limits would
 * trip, and the rest are deferred to the next run (PURGE_BRAKE_DEFERRED). Unrelated erasures keep their dates.
 * With a run budget (a scheduled run whose deletion requests run as purgeRequest tasks), the units admitted here
 * also debit the budget those tasks debit, so the run's limits hold over both; one that no longer fits, and
 * every unit after it, is deferred.
 */
export async function applyBrake(inputs: readonly BrakeInput[], env: StepEnv, budget: RunBudget | null = null): Promise<BrakeOutcome> {
  const verdicts = await judgeBrake(inputs, budget);
  const plans = new Map(inputs.map((i) => [i.plan.unitKey, i.plan]));
  const admitted: string[] = [];
  const heldBack: HeldBack[] = [];
  const waiting: BrakeOutcome["summary"]["waiting"] = [];
  const approved: BrakeOutcome["summary"]["approved"] = [];
  const deferred: string[] = [];
  let spent = false;
  const defer = (unitKey: string) => {
    deferred.push(unitKey);
    heldBack.push({ unitKey, outcome: "BRAKE_DEFERRED", reason: "BRAKE_RUN_LIMIT" });
  };
  for (const v of verdicts) {
    const plan = plans.get(v.unitKey)!;
    if (v.verdict === "ADMIT") {
      if (budget && (spent || !(await reserveInRun(budget, v.unitKey, plan.deleteByClass, env.nowMs)))) {
        spent = true;
        defer(v.unitKey);
      } else admitted.push(v.unitKey);
    } else if (v.verdict === "WAIT") {
      const s = await settleWaiting(plan, v.runKey, v.result, env);
      if (s.approved) {
        admitted.push(v.unitKey);
        approved.push({ runKey: v.runKey, unitKey: v.unitKey });
      } else {
        heldBack.push({ unitKey: v.unitKey, outcome: "BRAKE_REFUSED", reason: s.state === "DENIED" ? "BRAKE_DENIED" : "MASS_DELETION_BRAKE", runKey: v.runKey });
        waiting.push({ runKey: v.runKey, unitKey: v.unitKey, state: s.state, approval: s.why, wouldDelete: v.result.total, violations: v.result.violations });
      }
    } else {
      defer(v.unitKey);
    }
  }
  if (deferred.length > 0) {
    await recordDeferred(env.correlationId ?? "purge-brake-deferred", deferred, deferred.reduce((n, k) => n + total(plans.get(k)!.deleteByClass), 0), env);
  }
  const wouldDelete = admitted.reduce((n, k) => n + total(plans.get(k)!.deleteByClass), 0);
  const summary = { wouldDelete, waiting, approved, deferred };
  return { admitted, heldBack, summary: { status: summaryStatus(summary), ...summary } };
}

/** What the brake decided about one unit of a fanned-out run. */
export type UnitAdmission =
  | { verdict: "ADMIT" }
  /** It tripped the brake on its own, and an approval of exactly its deletion set was used. */
  | { verdict: "APPROVED"; runKey: string }
  | { verdict: "WAIT"; runKey: string; reason: "MASS_DELETION_BRAKE" | "BRAKE_DENIED" }
  | { verdict: "DEFER"; reason: "BRAKE_RUN_LIMIT" };

/**
 * The brake for one unit of a fanned-out run (a purgeRequest task), with the same two rules as `admitUnits`:
 * a unit that trips the brake on its own (against the class sizes the run measured when it opened) waits for a
 * retention-admin's approval of its own deletion set, exactly as in a run (PURGE_BRAKE_TRIPPED, the brake record);
 * any other unit debits the run's budget, which holds the run's limits for all of its tasks together, and is
 * deferred to the next run (PURGE_BRAKE_DEFERRED, in its own chain) when the budget cannot hold it.
 */
export async function admitInRun(plan: UnitPlan, budget: RunBudget, env: StepEnv): Promise<UnitAdmission> {
  const alone = evaluateBrake(plan.deleteByClass, budget.classSizes, budget.limits);
  if (alone.tripped) {
    const runKey = unitBrakeKey(plan);
    const s = await settleWaiting(plan, runKey, alone, env);
    if (s.approved) return { verdict: "APPROVED", runKey };
    return { verdict: "WAIT", runKey, reason: s.state === "DENIED" ? "BRAKE_DENIED" : "MASS_DELETION_BRAKE" };
  }
  if (await reserveInRun(budget, plan.unitKey, plan.deleteByClass, env.nowMs)) return { verdict: "ADMIT" };
  await recordDeferred(plan.unitKey, [plan.unitKey], total(plan.deleteByClass), env);
  return { verdict: "DEFER", reason: "BRAKE_RUN_LIMIT" };
}

export interface DecideInput {
  runKey: string;
  decision: BrakeDecision;
  note: string;
  approver: string;
  nowMs: number;
  /** How long an approval stays usable. */
  ttlMs: number;
}

/**
 * A retention-admin's decision on a waiting deletion set (approvePurgeRun): recorded in the evidence chain
 * with the real caller, the run key, the decision and its expiry, and on the brake record with a pointer to
 * that entry, in one transaction. An APPROVE lets exactly that set run once, until it expires; a DENY keeps it
 * held back (and revokes an approval not yet used). Refused: an unknown run key (not-found), a set already
 * used (BRAKE_RUN_USED), an approval while an unexpired one stands (ALREADY_APPROVED).
 */
export async function decideBrakeRun(input: DecideInput): Promise<{ runKey: string; state: BrakeRecordState; expiresAtMs: number | null; evidenceShard: string; evidenceSeq: number }> {
  const ref = brakeRecordRef(input.runKey);
  const pol = policy();
  const result = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists) throw notFound("BRAKE_RUN_NOT_FOUND", "No deletion set waits under this run key.");
    const data = snap.data()!;
    const state = data.state as BrakeRecordState;
    if (state === "USED") throw preconditionFailed("BRAKE_RUN_USED", "This deletion set has already run under an approval.");
    const current = claimOf(input.runKey, data);
    const standsUntil = state === "APPROVED" && current?.decision === "APPROVE" ? current.expiresAtMs : null;
    // Only a proven approval stands in the way of a new one: a forged one must not block the real decision.
    const stands = input.decision === "APPROVE" && standsUntil !== null && standsUntil > input.nowMs && (await proveDecision(tx, current!)) === null;
    if (stands && standsUntil !== null) {
      throw preconditionFailed("ALREADY_APPROVED", "An approval of this deletion set stands until it expires.", { expiresAt: new Date(standsUntil).toISOString() });
    }
    const evidence = await openEvidence(tx, input.runKey);
    const expiresAtMs = input.decision === "APPROVE" ? input.nowMs + input.ttlMs : null;
    const noteHash = hashCanonical({ note: input.note });
    const entry = evidence.append(
      brakeDecisionEvidence({
        runKey: input.runKey,
        decision: input.decision,
        approver: input.approver,
        expiresAtMs,
        noteHash,
        units: Array.isArray(data.units) ? data.units.length : 0,
        wouldDelete: typeof data.wouldDelete === "number" ? data.wouldDelete : 0,
        policyVersion: pol.version,
        atMs: input.nowMs,
      }),
    );
    const next: BrakeRecordState = input.decision === "APPROVE" ? "APPROVED" : "DENIED";
    tx.update(ref, {
      state: next,
      decision: {
        decision: input.decision,
        by: input.approver,
        at: toTimestamp(input.nowMs),
        expiresAt: expiresAtMs === null ? null : toTimestamp(expiresAtMs),
        // The approver's words stay on the record; the evidence keeps their hash.
        note: input.note,
        noteHash,
        evidenceShard: evidence.shard,
        evidenceSeq: entry.seq,
        evidenceHash: entry.hash,
      },
    });
    return { runKey: input.runKey, state: next, expiresAtMs, evidenceShard: evidence.shard, evidenceSeq: entry.seq };
  }, EVIDENCE_TX);
  log.warn("purge.brake.decided", { runKey: input.runKey, decision: input.decision });
  return result;
}
