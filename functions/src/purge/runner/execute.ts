import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { FieldValue, type DocumentSnapshot } from "firebase-admin/firestore";
import { decideExecute, type ExecOutcome } from "../rules/decide";
import { verifyArchiveSnapshot } from "./archive-plain";
import { archiveRef, holdArchiveInTx } from "./archive";
import { db } from "../../platform/firestore";
import { log } from "../../platform/logs";
import { emitMetric } from "../../platform/metrics";
import { fenceStep, writeCheckpoint } from "./fence";
import { descendantsRemainBatch } from "./probe";
import { fire, purgeEvidence, type StepEnv } from "./env";
import { batchFrom, batchRef, claimsActiveInTx, factsOf, readFactsInTx, settledPaths, type UnitCheckpoint } from "../store";
import { policy } from "../../platform/registry";

/**
 * Execute step for a delete batch: ONE transaction decides and deletes (docs/HOLD-FENCE.md).
 *
 * It reads, in this order of commitment:
 * - the fence of the unit: the lease (still ours) and the checkpoint (this round, this step), so a runner
 *   that lost its lease, or a step another attempt already did, commits nothing;
 * - the hold fence's generation and the active holds of that generation (cached per generation);
 * - the batch record and the batch's documents (retention fields only; whole documents where an archive
 *   must be verified against its source).
 * Each document is decided again (held, still this unit's decision, predicate, archive, no descendant left)
 * and the ones still allowed are deleted in the same commit as the batch's outcome, the checkpoint's advance
 * and the PURGE_BATCH evidence. Because the transaction read the hold fence and every document it deletes,
 * Firestore serialises it against any hold placement: a hold either committed first (and this transaction
 * sees it) or commits after the documents are gone and their deletion is on the record. No delete happens
 * outside this transaction, so a crash leaves either all of a batch's effects or none of them.
 */
export async function deleteStep(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<void> {
  const bRef = batchRef(cp.unitKey, cp.round, batchIndex);
  const batch = batchFrom(await bRef.get());
  const unsettled = batch.items.map((i) => i.path).filter((p) => !settledPaths(batch.outcome).has(p));
  const at = { unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex };
  await fire(env, { point: "beforeExecute", ...at, paths: unsettled });
  // A parent goes only when nothing is left under it: one kindless probe per batch, right before the decision.
  const probes = await descendantsRemainBatch(unsettled);
  await env.limiter.acquire(unsettled.length);
  const pol = policy();
  const done = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return null;
    // Whole documents only where an archive must be verified against its source. A batch's items never
    // change, only its outcome, so the unsettled paths read before the transaction are the ones to read.
    const [freshSnap, read, view, evidence] = await Promise.all([
      tx.get(bRef),
      unsettled.some((p) => batch.archives[p] !== undefined)
        ? tx.getAll(...unsettled.map((p) => db().doc(p)))
        : readFactsInTx(tx, unsettled),
      env.holdView.inTx(tx),
      openEvidence(tx),
    ]);
    const fresh = batchFrom(freshSnap);
    const settled = settledPaths(fresh.outcome);
    const snaps = read.filter((s) => !settled.has(s.ref.path));
    const facts = snaps.map(factsOf);
    const claimActive = await claimsActiveInTx(tx, facts, cp.unitKey);
    const archiveSnaps = new Map<string, DocumentSnapshot>();
    const archivePaths = facts.map((f) => f.path).filter((p) => fresh.archives[p] !== undefined);
    if (archivePaths.length > 0) {
      const archivesRead = await tx.getAll(...archivePaths.map((p) => archiveRef(fresh.archives[p]!)));
      archivePaths.forEach((p, k) => archiveSnaps.set(p, archivesRead[k]!));
    }
    const ctx = { holds: view.holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
    const outcomes: ExecOutcome[] = facts.map((f, k) => {
      const archive = archiveSnaps.get(f.path);
      // The archive is verified again now, against the source as it is in this transaction.
      const archiveVerified = archive !== undefined && f.exists && verifyArchiveSnapshot(snaps[k]!, archive) === null;
      return decideExecute(f, cp, ctx, { archiveVerified, descendantsRemain: probes.has(f.path), claimActive });
    });
    const o = fresh.outcome;
    const deleted: string[] = [];
    for (const out of outcomes) {
      switch (out.outcome) {
        case "delete":
          tx.delete(db().doc(out.path));
          deleted.push(out.path);
          break;
        case "gone":
          o.gone.push(out.path);
          break;
        case "held": {
          o.held.push({ path: out.path, holdId: out.holdId, reasonCode: out.reasonCode });
          const archive = archiveSnaps.get(out.path);
          if (archive) holdArchiveInTx(tx, archive, out.holdId);
          break;
        }
        case "claimed":
          o.claimed.push(out.path);
          break;
        case "deferred":
          o.deferred.push(out.path);
          break;
        case "blocked":
          o.blocked.push({ path: out.path, reason: out.reason });
          break;
      }
    }
    o.deleted.push(...deleted);
    const of = (name: ExecOutcome["outcome"]) => outcomes.filter((x) => x.outcome === name).map((x) => x.path);
    const held = of("held");
    const gone = of("gone");
    tx.update(bRef, { outcome: o, complete: true });
    writeCheckpoint(tx, cp, env, {
      nextStep: step + 1,
      "counts.deleted": FieldValue.increment(deleted.length),
      "counts.held": FieldValue.increment(held.length),
      "counts.gone": FieldValue.increment(gone.length),
      "counts.claimed": FieldValue.increment(of("claimed").length),
      "counts.deferred": FieldValue.increment(of("deferred").length),
      "counts.blocked": FieldValue.increment(of("blocked").length),
    });
    const fence = { fenceGeneration: view.generation };
    if (held.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, { action: "PURGE_HOLD_STOPPED", decision: { reason: "LEGAL_HOLD" }, paths: held, counts: { held: held.length, batch: batchIndex }, detail: fence }),
      );
    }
    if (gone.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, { action: "PURGE_OBSERVED_GONE", decision: { reason: "ALREADY_DELETED" }, paths: gone, counts: { gone: gone.length, batch: batchIndex }, detail: fence }),
      );
    }
    if (deleted.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, {
          action: "PURGE_BATCH",
          decision: { reason: "AUTHORIZED_BY_POLICY" },
          paths: deleted,
          counts: { deleted: deleted.length, batch: batchIndex, stage: fresh.stage },
          detail: fence,
        }),
      );
    }
    // Everything is decided and queued; the commit is next. A test may act here (a hold racing the commit).
    await fire(env, { point: "inExecute", ...at, paths: deleted });
    return { deleted, held: held.length };
  }, EVIDENCE_TX);
  if (!done) return;
  if (done.held > 0) log.warn("purge.hold_stopped", { unitKey: cp.unitKey, batch: batchIndex, held: done.held });
  countDeletions(done.deleted, env);
  log.info("purge.batch.done", { unitKey: cp.unitKey, batch: batchIndex, deleted: done.deleted.length });
  await fire(env, { point: "afterExecute", ...at, paths: done.deleted });
}

/**
 * The retention.purge_deletions series, per class, after the commit. A run "as of" another time (emulators
 * only) emits nothing: its numbers describe a fictional now.
 */
function countDeletions(deleted: readonly string[], env: StepEnv): void {
  if (env.asOfMs !== null || deleted.length === 0) return;
  const pol = policy();
  const byClass = new Map<string, number>();
  for (const p of deleted) {
    const cls = pol.classForPath(p)?.id ?? "(unknown)";
    byClass.set(cls, (byClass.get(cls) ?? 0) + 1);
  }
  for (const [cls, n] of byClass) emitMetric("retention.purge_deletions", n, { class: cls });
}
