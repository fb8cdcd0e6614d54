import type { DocumentSnapshot } from "firebase-admin/firestore";
import { decideExecute, type ExecOutcome } from "../rules/decide";
import { archiveRef, holdArchiveInTx, verifyArchiveSnapshot } from "./archive";
import { db } from "../../platform/firestore";
import { log } from "../../platform/logs";
import { emitMetric } from "../../platform/metrics";
import { descendantsRemainBatch } from "./probe";
import { fire, type StepEnv } from "./env";
import { inStep, type StepDecision } from "./step";
import { batchFrom, batchRef, claimsActiveInTx, factsOf, readFactsInTx, settledPaths, type UnitCheckpoint } from "../store";
import { policy } from "../../platform/registry";

/**
 * Execute step for a delete batch: ONE transaction decides and deletes (docs/HOLD-FENCE.md).
 *
 * Through the step helper (`inStep`) it reads the unit's fence (lease and checkpoint: a runner that lost its
 * lease, or a step another attempt already did, commits nothing), the active holds of the hold fence's
 * generation and the batch record; then the batch's documents (retention fields only; whole documents where
 * an archive must be verified against its source).
 * Each document is decided again (held, still this unit's decision, predicate, archive, no descendant left)
 * and the ones still allowed are deleted in the same commit as the batch's outcome, the checkpoint's advance
 * and the PURGE_BATCH evidence. Because the transaction read the hold fence and every document it deletes,
 * Firestore serialises it against any hold placement: a hold either committed first (and this transaction
 * sees it) or commits after the documents are gone and their deletion is on the record. No delete happens
 * outside this transaction, so a crash leaves either all of a batch's effects or none of them.
 */
export async function deleteStep(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<StepDecision | null> {
  // A batch's items never change, only its outcome: the paths to probe and read are known before the transaction.
  const before = batchFrom(await batchRef(cp.unitKey, cp.round, batchIndex).get());
  const unsettled = before.items.map((i) => i.path).filter((p) => !settledPaths(before.outcome).has(p));
  await fire(env, { point: "beforeExecute", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: unsettled });
  // A parent goes only when nothing is left under it: one kindless probe per batch, right before the decision.
  const probes = await descendantsRemainBatch(unsettled);
  await env.limiter.acquire(unsettled.length);
  const pol = policy();
  const done = await inStep(cp, { step, batchIndex, inPoint: "inExecute", afterPoint: "afterExecute" }, env, async ({ tx, batch, holds }) => {
    // Whole documents only where an archive must be verified against its source.
    const read = unsettled.some((p) => batch.archives[p] !== undefined) ? await tx.getAll(...unsettled.map((p) => db().doc(p))) : await readFactsInTx(tx, unsettled);
    const settled = settledPaths(batch.outcome);
    const snaps = read.filter((s) => !settled.has(s.ref.path));
    const facts = snaps.map(factsOf);
    const claimActive = await claimsActiveInTx(tx, facts, cp.unitKey);
    const archiveSnaps = new Map<string, DocumentSnapshot>();
    const archivePaths = facts.map((f) => f.path).filter((p) => batch.archives[p] !== undefined);
    if (archivePaths.length > 0) {
      const archivesRead = await tx.getAll(...archivePaths.map((p) => archiveRef(batch.archives[p]!)));
      archivePaths.forEach((p, k) => archiveSnaps.set(p, archivesRead[k]!));
    }
    const ctx = { holds: holds.holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
    const outcomes: ExecOutcome[] = facts.map((f, k) => {
      const archive = archiveSnaps.get(f.path);
      // The archive is verified again now, against the source as it is in this transaction.
      const archiveVerified = archive !== undefined && f.exists && verifyArchiveSnapshot(snaps[k]!, archive) === null;
      return decideExecute(f, cp, ctx, { archiveVerified, descendantsRemain: probes.has(f.path), claimActive });
    });
    const o = batch.outcome;
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
    const evidence: StepDecision["evidence"] = [];
    if (held.length > 0) evidence.push({ action: "PURGE_HOLD_STOPPED", decision: { reason: "LEGAL_HOLD" }, paths: held, counts: { held: held.length, batch: batchIndex } });
    if (gone.length > 0) evidence.push({ action: "PURGE_OBSERVED_GONE", decision: { reason: "ALREADY_DELETED" }, paths: gone, counts: { gone: gone.length, batch: batchIndex } });
    if (deleted.length > 0) {
      evidence.push({ action: "PURGE_BATCH", decision: { reason: "AUTHORIZED_BY_POLICY" }, paths: deleted, counts: { deleted: deleted.length, batch: batchIndex, stage: batch.stage } });
    }
    return {
      outcome: o,
      complete: true,
      counts: { deleted: deleted.length, held: held.length, gone: gone.length, claimed: of("claimed").length, deferred: of("deferred").length, blocked: of("blocked").length },
      evidence,
      paths: deleted,
    };
  });
  if (!done) return null;
  if (done.counts.held! > 0) log.warn("purge.hold_stopped", { unitKey: cp.unitKey, batch: batchIndex, held: done.counts.held });
  countDeletions(done.paths, env);
  log.info("purge.batch.done", { unitKey: cp.unitKey, batch: batchIndex, deleted: done.paths.length });
  return done;
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
