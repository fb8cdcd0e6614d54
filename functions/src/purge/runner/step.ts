import { FieldValue, type DocumentReference, type DocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import pLimit from "p-limit";
import { EVIDENCE_TX, evidenceHeadRef, openEvidenceFrom } from "../../evidence/index";
import type { EvidenceBody } from "../../evidence/rules";
import { fenceGenerationOf, holdFenceRef, type HoldSnapshot } from "../../holds/index";
import { db } from "../../platform/firestore";
import { DataKeys } from "../../shred/index";
import { checkLease, fenceLease, leaseValue } from "../../platform/lease";
import { stepsOf, type PurgeStep } from "../rules/batches";
import { recordProblem } from "../rules/manifest";
import { batchEvidenceKey } from "../rules/unit";
import { batchFrom, batchRef, checkpointFrom, checkpointRef, leaseRefOf, type BatchDoc, type BatchOutcome, type UnitCheckpoint } from "../store";
import { fire, purgeEvidence, type PurgeHookPoint, type StepEnv } from "./env";

/**
 * The one batch helper. Every purge transaction on a batch (mark, delete, mask) runs through `inBatch`,
 * which owns what they all share, in this order:
 * 1. one `getAll` of the lease, the checkpoint, the batch record, the hold fence and the head of the batch's
 *    evidence chain (one round trip);
 * 2. the fence: the unit's lease is still this runner's (else LeaseLostError) and the checkpoint is at this
 *    round and step (else null: another attempt already finished the step, and this one writes nothing); the
 *    record belongs to the plan and hashes to its hash; the active holds as of the fence's generation
 *    (holds/fence.ts: queried only when it moved); a batch already complete is left as it is;
 * 3. the body, which reads what it must, decides, and writes to its documents;
 * 4. the batch's outcome and the body's evidence entries, in the same commit;
 * 5. the hooks a test may act on: `inPoint` before the commit, `afterPoint` after it.
 * A batch transaction writes only its own record and its evidence: the batches of a step run several at a
 * time without contending on any shared document. The step's end (`runGroup`) advances the checkpoint and
 * renews the lease once for all of them.
 */

/** What a batch body sees. */
export interface BatchScope {
  tx: Transaction;
  /** The checkpoint as the fence read it. */
  cp: UnitCheckpoint;
  /** The batch record as read in this transaction. */
  batch: BatchDoc;
  /** The active holds of the hold fence's current generation. */
  holds: HoldSnapshot;
}

/** What a batch body decided: the helper records it. */
export interface BatchDecisionResult {
  /** The batch's outcome after the body (the body updates the one it was given), and whether the batch is done. */
  outcome: BatchOutcome;
  complete: boolean;
  /** The batch's trigger-collection items are marked. */
  marked?: boolean;
  /** Evidence entries (the helper adds actor, time, policy version, request and unit). */
  evidence: (Pick<EvidenceBody, "action" | "decision"> & Partial<Pick<EvidenceBody, "paths" | "counts" | "detail">>)[];
  /** The paths the hooks are told about. */
  paths: string[];
}

/** Which batch, in which step, and the hooks around its transaction. */
export interface BatchSpec {
  step: number;
  ref: DocumentReference;
  /** The batch's position in the round's execution order (what hooks and evidence call "batch"). */
  ordinal: number;
  inPoint?: PurgeHookPoint;
  afterPoint?: PurgeHookPoint;
}

/**
 * Runs one batch's transaction. Returns the body's decision; the recorded outcome (as `complete`) when the
 * batch was already done; or null when the step is not this runner's any more.
 */
export async function inBatch(cp: UnitCheckpoint, spec: BatchSpec, env: StepEnv, body: (scope: BatchScope) => Promise<BatchDecisionResult>): Promise<BatchDecisionResult | null> {
  const hook = { unitKey: cp.unitKey, round: cp.round, step: spec.step, batch: spec.ordinal };
  // A batch transaction the emulator closed under contention runs again (platform/firestore.ts#db).
  const evidenceKey = batchEvidenceKey(cp.unitKey, spec.ref.id);
  const decision = await db().runTransaction(async (tx) => {
    // One round trip for every read the fence and the record need: the lease, the checkpoint (the same document
    // for a sweep), the batch record, the hold fence and the head of the batch's evidence chain.
    const refs = [leaseRefOf(cp), checkpointRef(cp.unitKey), spec.ref, holdFenceRef(), evidenceHeadRef(evidenceKey)];
    const byPath = new Map((await tx.getAll(...new Map(refs.map((r) => [r.path, r])).values())).map((s) => [s.ref.path, s]));
    const [leaseSnap, cpSnap, batchSnap, fenceSnap, headSnap] = refs.map((r) => byPath.get(r.path)!) as [DocumentSnapshot, DocumentSnapshot, DocumentSnapshot, DocumentSnapshot, DocumentSnapshot];
    checkLease(leaseSnap, env.holder);
    const now = checkpointAt(cpSnap, cp, spec.step);
    if (!now) return null;
    const holds = await env.holdView.atGeneration(tx, fenceGenerationOf(fenceSnap));
    const batch = batchFrom(batchSnap);
    const problem = recordProblem(batch, cp.unitKey, now.planId);
    if (problem) throw new Error(`PURGE_RECORD_MISMATCH: ${spec.ref.path}: ${problem}`);
    if (batch.complete) return { outcome: batch.outcome, complete: true, evidence: [], paths: [], already: true };
    const evidence = openEvidenceFrom(tx, evidenceKey, headSnap);
    const d = await body({ tx, cp: now, batch, holds });
    tx.update(spec.ref, { outcome: d.outcome, ...(d.complete ? { complete: true } : {}), ...(d.marked ? { marked: true } : {}) });
    const detail = { fenceGeneration: holds.generation, batch: spec.ref.id, batchHash: batch.hash };
    for (const e of d.evidence) evidence.append(purgeEvidence(env, cp, { ...e, detail: { ...detail, ...(e.detail ?? {}) } }));
    if (spec.inPoint) await fire(env, { point: spec.inPoint, ...hook, paths: d.paths });
    return { ...d, already: false };
  }, EVIDENCE_TX);
  if (decision && !decision.already && spec.afterPoint) await fire(env, { point: spec.afterPoint, ...hook, paths: decision.paths });
  return decision;
}

/**
 * The fence every purge transaction starts with: the lease is still ours (else LeaseLostError), and the
 * checkpoint still says this round is RUNNING at this step (else null). Reads only; `writeCheckpoint` does
 * the matching write.
 */
export async function fenceStep(tx: Transaction, cp: UnitCheckpoint, env: StepEnv, step: number | "any"): Promise<UnitCheckpoint | null> {
  const leaseRef = leaseRefOf(cp);
  const cpRef = checkpointRef(cp.unitKey);
  const leaseSnap = await fenceLease(tx, leaseRef, env.holder);
  const cpSnap = leaseRef.path === cpRef.path ? leaseSnap : await tx.get(cpRef);
  return checkpointAt(cpSnap, cp, step);
}

/** The checkpoint as read, when it still says this round is RUNNING at this step (else null). */
function checkpointAt(cpSnap: DocumentSnapshot, cp: UnitCheckpoint, step: number | "any"): UnitCheckpoint | null {
  const now = checkpointFrom(cpSnap.data());
  if (!now || now.round !== cp.round || now.planId !== cp.planId || now.phase !== "RUNNING") return null;
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

/** A batch executor: the batch's outcome once done (now or before), or null when the step is not this runner's. */
export type BatchRun = (cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv) => Promise<BatchOutcome | null>;

/** The steps, by kind: delete, mask and object batches, and the finalize step. */
export interface Steps {
  delete: BatchRun;
  mask: BatchRun;
  objects: BatchRun;
  finalize: (cp: UnitCheckpoint, step: number, env: StepEnv) => Promise<"DONE" | "BLOCKED" | null>;
}

/** The outcome counters a step adds to the checkpoint (`counts.<name>`). */
export function outcomeCounts(outcomes: readonly BatchOutcome[]): Record<string, number> {
  const c: Record<string, number> = { deleted: 0, redecided: 0, gone: 0, held: 0, deferred: 0, blocked: 0, masked: 0, changed: 0 };
  for (const o of outcomes) {
    c.deleted! += o.deleted.length;
    c.redecided! += o.redecided.length;
    c.gone! += o.gone.length;
    c.held! += o.held.length;
    c.deferred! += o.deferred.length;
    c.blocked! += o.blocked.length;
    c.masked! += o.masked.length;
    c.changed! += o.changed.length;
  }
  return c;
}

/** The execution-order position of a stage's first batch. */
function firstOrdinal(cp: UnitCheckpoint, stage: string): number {
  let n = 0;
  for (const s of cp.layout) {
    if (s.key === stage) return n;
    n += s.batches;
  }
  throw new Error(`stage ${stage} is not in the layout of ${cp.unitKey}`);
}

/**
 * One step: a group of batches of one stage, up to `env.parallelBatches` at a time. Once every batch is
 * done, one fenced transaction advances the checkpoint, adds the group's outcome counts (from the batches'
 * records, so a rerun after a crash counts each batch once) and renews the lease. Null: the step was not
 * this runner's any more.
 */
async function runGroup(cp: UnitCheckpoint, step: number, s: Extract<PurgeStep, { kind: "group" }>, env: StepEnv, steps: Steps): Promise<boolean> {
  const run = steps[s.batchKind];
  const first = firstOrdinal(cp, s.stage);
  const limit = pLimit(env.parallelBatches);
  // One cache of data keys for the step's batches: each archive copy's key is opened once per step, not per batch.
  const stepEnv: StepEnv = { ...env, dataKeys: new DataKeys() };
  const settled = await Promise.allSettled(
    Array.from({ length: s.count }, (_, k) => limit(() => run(cp, { step, ref: batchRef(cp.unitKey, cp.planId, s.stage, s.first + k), ordinal: first + s.first + k }, stepEnv))),
  );
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  const outcomes = settled.map((r) => (r as PromiseFulfilledResult<BatchOutcome | null>).value);
  if (outcomes.some((o) => o === null)) return false;
  const counts = Object.fromEntries(
    Object.entries(outcomeCounts(outcomes as BatchOutcome[]))
      .filter(([, n]) => n !== 0)
      .map(([k, n]) => [`counts.${k}`, FieldValue.increment(n)]),
  );
  return db().runTransaction(async (tx) => {
    if (!(await fenceStep(tx, cp, env, step))) return false;
    writeCheckpoint(tx, cp, env, { nextStep: step + 1, ...counts });
    return true;
  });
}

/**
 * Runs a unit's steps from its checkpoint up to `end` (exclusive). The checkpoint is read once; each step
 * fences it again and advances it by one, so a step that finds another runner's progress ends this
 * runner's work on the unit.
 */
export async function runSteps(unitKey: string, round: number, end: number, env: StepEnv, steps: Steps): Promise<StepsResult> {
  const cp = checkpointFrom((await checkpointRef(unitKey).get()).data());
  // Finished or superseded by someone else: this invocation did not do it.
  if (!cp || cp.round !== round || cp.phase !== "RUNNING") return "STALE";
  const all = stepsOf(cp.layout, cp.groupSize);
  for (let step = cp.nextStep; ; step++) {
    if (step >= Math.min(end, all.length)) return "RUNNING";
    if (env.holder.clock() > env.deadlineMs) return "RUNNING";
    const s = all[step]!;
    if (s.kind === "finalize") return (await steps.finalize(cp, step, env)) ?? "STALE";
    if (!(await runGroup(cp, step, s, env, steps))) return "STALE";
  }
}
