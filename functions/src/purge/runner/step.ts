import { FieldValue, type Transaction } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import type { EvidenceBody } from "../../evidence/rules";
import type { HoldSnapshot } from "../../holds/index";
import { db } from "../../platform/firestore";
import { fenceLease, leaseValue } from "../../platform/lease";
import { stepAt, stepCount } from "../rules/batches";
import { batchFrom, batchRef, checkpointFrom, checkpointRef, leaseRefOf, type BatchDoc, type BatchOutcome, type UnitCheckpoint } from "../store";
import { fire, purgeEvidence, type PurgeHookPoint, type StepEnv } from "./env";

/**
 * The one step helper. Every purge step that is a batch's transaction (mark, delete, mask) runs through
 * `inStep`, which owns what they all share, in this order:
 * 1. the fence: the unit's lease is still this runner's (else LeaseLostError) and the checkpoint is at this
 *    round and step (else null: another attempt already did it, and this one writes nothing);
 * 2. the reads every step needs, issued together: the batch record, the active holds as of the hold fence's
 *    generation (holds/fence.ts), and the evidence log's head;
 * 3. the step's own body, which reads its documents, decides, and writes to them;
 * 4. the writes every step makes: the batch's outcome, the checkpoint's advance with the body's counts (and
 *    the lease's renewal), and the body's evidence entries, all in the same commit;
 * 5. the hooks a test may act on: `inPoint` before the commit, `afterPoint` after it.
 * A step is therefore its decision only: what to write to its documents, and what to record.
 */

/** What a step's body sees. */
export interface StepScope {
  tx: Transaction;
  /** The checkpoint as the fence read it. */
  cp: UnitCheckpoint;
  /** The batch record as read in this transaction. */
  batch: BatchDoc;
  /** The active holds of the hold fence's current generation. */
  holds: HoldSnapshot;
}

/** What a step's body decided: the helper records it. */
export interface StepDecision {
  /** The batch's outcome after the step (the body updates the one it was given), and whether the batch is done. */
  outcome: BatchOutcome;
  complete: boolean;
  /** Counters added to the checkpoint (`counts.<name>`). */
  counts: Record<string, number>;
  /** Evidence entries of the step (the helper adds actor, time, policy version, request and unit). */
  evidence: (Pick<EvidenceBody, "action" | "decision"> & Partial<Pick<EvidenceBody, "paths" | "counts" | "detail">>)[];
  /** The paths the hooks are told about. */
  paths: string[];
}

export interface StepSpec {
  step: number;
  batchIndex: number;
  /** Fired inside the transaction, after the body and before the commit. */
  inPoint?: PurgeHookPoint;
  /** Fired after the commit. */
  afterPoint?: PurgeHookPoint;
}

/** Runs one step's transaction. Returns the body's decision, or null when the step was not this runner's to do. */
export async function inStep(cp: UnitCheckpoint, spec: StepSpec, env: StepEnv, body: (scope: StepScope) => Promise<StepDecision>): Promise<StepDecision | null> {
  const bRef = batchRef(cp.unitKey, cp.round, spec.batchIndex);
  const hook = { unitKey: cp.unitKey, round: cp.round, step: spec.step, batch: spec.batchIndex };
  const decision = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, spec.step);
    if (!now) return null;
    const [batchSnap, holds, evidence] = await Promise.all([tx.get(bRef), env.holdView.inTx(tx), openEvidence(tx, cp.unitKey)]);
    const d = await body({ tx, cp: now, batch: batchFrom(batchSnap), holds });
    tx.update(bRef, { outcome: d.outcome, ...(d.complete ? { complete: true } : {}) });
    const counts = Object.fromEntries(Object.entries(d.counts).filter(([, n]) => n !== 0).map(([k, n]) => [`counts.${k}`, FieldValue.increment(n)]));
    writeCheckpoint(tx, cp, env, { nextStep: spec.step + 1, ...counts });
    for (const e of d.evidence) evidence.append(purgeEvidence(env, cp, { ...e, detail: { fenceGeneration: holds.generation, ...(e.detail ?? {}) } }));
    if (spec.inPoint) await fire(env, { point: spec.inPoint, ...hook, paths: d.paths });
    return d;
  }, EVIDENCE_TX);
  if (decision && spec.afterPoint) await fire(env, { point: spec.afterPoint, ...hook, paths: decision.paths });
  return decision;
}

/**
 * The fence every purge transaction starts with: the lease is still ours (else LeaseLostError), and the
 * checkpoint still says this round is RUNNING at this step (else null). Reads only; `writeCheckpoint` does
 * the matching write. Finalize, which is not a batch's step, uses the two directly.
 */
export async function fenceStep(tx: Transaction, cp: UnitCheckpoint, env: StepEnv, step: number | "any"): Promise<UnitCheckpoint | null> {
  const leaseRef = leaseRefOf(cp);
  const cpRef = checkpointRef(cp.unitKey);
  const leaseSnap = await fenceLease(tx, leaseRef, env.holder);
  const cpSnap = leaseRef.path === cpRef.path ? leaseSnap : await tx.get(cpRef);
  const now = checkpointFrom(cpSnap.data());
  if (!now || now.round !== cp.round || now.phase !== "RUNNING") return null;
  if (step !== "any" && now.nextStep !== step) return null;
  return now;
}

/**
 * Updates the checkpoint and renews the lease in the caller's transaction. For a sweep the lease lives on
 * the checkpoint itself, so both go in one write.
 */
export function writeCheckpoint(tx: Transaction, cp: UnitCheckpoint, env: StepEnv, update: Record<string, unknown>, leaseUpdate: Record<string, unknown> = {}): void {
  const leaseRef = leaseRefOf(cp);
  const cpRef = checkpointRef(cp.unitKey);
  const lease = { lease: leaseValue(env.holder) };
  if (leaseRef.path === cpRef.path) {
    tx.update(cpRef, { ...update, ...lease, ...leaseUpdate });
  } else {
    tx.update(cpRef, update);
    tx.update(leaseRef, { ...lease, ...leaseUpdate });
  }
}

export type StepsResult = "DONE" | "BLOCKED" | "RUNNING" | "STALE";

/** The steps, by kind: each is its decision, run through `inStep` (finalize runs its own transactions). */
export interface Steps {
  mark: (cp: UnitCheckpoint, step: number, batch: number, env: StepEnv) => Promise<StepDecision | null>;
  delete: (cp: UnitCheckpoint, step: number, batch: number, env: StepEnv) => Promise<StepDecision | null>;
  mask: (cp: UnitCheckpoint, step: number, batch: number, env: StepEnv) => Promise<StepDecision | null>;
  finalize: (cp: UnitCheckpoint, step: number, env: StepEnv) => Promise<"DONE" | "BLOCKED" | null>;
}

/**
 * Runs a unit's steps from its checkpoint up to `end` (exclusive), one at a time. The checkpoint is read
 * once; each step's transaction fences it again and advances it by one, so a step that returns null (the
 * fence found another runner's progress) ends this runner's work on the unit.
 */
export async function runSteps(unitKey: string, round: number, end: number, env: StepEnv, steps: Steps): Promise<StepsResult> {
  const cp = checkpointFrom((await checkpointRef(unitKey).get()).data());
  // Finished or superseded by someone else: this invocation did not do it.
  if (!cp || cp.round !== round || cp.phase !== "RUNNING") return "STALE";
  for (let step = cp.nextStep; ; step++) {
    if (step >= Math.min(end, stepCount(cp.batchCount))) return "RUNNING";
    if (env.holder.clock() > env.deadlineMs) return "RUNNING";
    const s = stepAt(step, cp.batchCount);
    if (s.kind === "finalize") return (await steps.finalize(cp, step, env)) ?? "STALE";
    const run = s.kind === "mark" ? steps.mark : s.batch < cp.deleteBatches ? steps.delete : steps.mask;
    if ((await run(cp, step, s.batch, env)) === null) return "STALE";
  }
}
