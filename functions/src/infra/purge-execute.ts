import { FieldValue, GrpcStatus, type BulkWriter, type DocumentReference, type DocumentSnapshot, type Timestamp, type Transaction } from "firebase-admin/firestore";
import { decideExecute, holdOf, type ExecOutcome } from "../domain/purge-decide";
import { verifyArchiveSnapshot } from "./archive-plain";
import { archiveRef, holdArchiveInTx } from "./archive-store";
import { openEvidence } from "./evidence-store";
import { db } from "./firestore";
import { TX_OPTIONS } from "./holds";
import { log } from "./logs";
import { emitMetric } from "./metrics";
import { fenceStep, writeCheckpoint } from "./purge-fence";
import { descendantsRemainBatch } from "./purge-probe";
import { fire, purgeEvidence, type StepEnv } from "./purge-env";
import { activeHoldsInTx, batchFrom, batchRef, claimsActiveInTx, factsOf, readFactsInTx, settledPaths, type UnitCheckpoint } from "./purge-store";
import { policy } from "./registry";

type BulkWriterError = Parameters<Parameters<BulkWriter["onWriteError"]>[0]>[0];

/** The invocation's delete writer (StepEnv.writer), created on first use. */
function deleteWriter(env: StepEnv): BulkWriter {
  if (env.writer.current) return env.writer.current;
  const { startOpsPerSecond, maxOpsPerSecond } = env.throttle;
  const writer = db().bulkWriter({ throttling: { initialOpsPerSecond: Math.min(startOpsPerSecond, maxOpsPerSecond), maxOpsPerSecond } });
  writer.onWriteError((err) => {
    const retryable = err.code === GrpcStatus.ABORTED || err.code === GrpcStatus.UNAVAILABLE || err.code === GrpcStatus.RESOURCE_EXHAUSTED || err.code === GrpcStatus.DEADLINE_EXCEEDED;
    return retryable && err.failedAttempts < 10;
  });
  env.writer.current = writer;
  return writer;
}

/** Closes the invocation's delete writer, if a batch opened one (every delete was already flushed). */
export async function closeDeleteWriter(env: StepEnv): Promise<void> {
  const writer = env.writer.current;
  env.writer.current = null;
  if (writer) await writer.close();
}

/** A batch whose documents keep changing under it is not retried forever within one step. */
const MAX_ATTEMPTS = 5;
/**
 * Deletes with the invocation's BulkWriter (throttled, see StepEnv.throttle), each delete conditioned on
 * the document being unchanged since the decision was read (`lastUpdateTime`): a hold (or any write)
 * landing after the decision makes that delete fail instead of destroying held data. Such documents are
 * decided again; every other failure (after BulkWriter's own retries) throws, so the step is retried.
 * Returns the paths whose delete succeeded: with the precondition, success proves the document existed,
 * unchanged since the decision, and that this delete removed it.
 */
async function bulkDelete(paths: readonly string[], updateTimes: readonly Timestamp[], env: StepEnv): Promise<Set<string>> {
  const writer = deleteWriter(env);
  const failures: BulkWriterError[] = [];
  const done = new Set<string>();
  const ops = paths.map((p, k) =>
    writer.delete(db().doc(p), { lastUpdateTime: updateTimes[k]! }).then(
      () => {
        done.add(p);
      },
      (err: BulkWriterError) => {
        failures.push(err);
      },
    ),
  );
  await writer.flush();
  await Promise.all(ops);
  // A precondition failure means "changed since the decision": the document is still there and is decided
  // again below. NOT_FOUND means it is already gone. Anything else is a real failure.
  const real = failures.filter((f) => f.code !== GrpcStatus.FAILED_PRECONDITION && f.code !== GrpcStatus.NOT_FOUND);
  if (real.length > 0) {
    throw new Error(`PURGE_DELETE_FAILED: ${real.length} of ${paths.length} deletes failed (codes ${[...new Set(real.map((f) => f.code))].join(",")})`);
  }
  return done;
}

type Decided = { kind: "stale" } | { kind: "settled" } | { kind: "pending"; paths: string[]; updateTimes: Timestamp[] };

/**
 * Decision transaction: holds re-read, the batch's documents re-read, each one decided again. The paths to
 * delete go into the checkpoint (`pending`) before they are deleted, so a crash between the delete and its
 * record is recovered by looking at what is gone. Holds that stopped a document are recorded here.
 */
async function decide(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<Decided> {
  const bRef = batchRef(cp.unitKey, cp.round, batchIndex);
  const batch = batchFrom(await bRef.get());
  const unsettled = batch.items.map((i) => i.path).filter((p) => !settledPaths(batch.outcome).has(p));
  const probes = await descendantsRemainBatch(unsettled);
  const pol = policy();
  return db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return { kind: "stale" } as const;
    if (now.pending && now.pending.step === step) return resumePending(tx, cp, now.pending, bRef, batchIndex, env);
    // Independent reads go out together (the fence above has opened the transaction). A batch's items
    // never change, only its outcome, so the unsettled paths read before the transaction are the ones to read.
    const [freshSnap, read, holds, evidence] = await Promise.all([
      tx.get(bRef),
      // Whole documents only where an archive must be verified against its source.
      unsettled.some((p) => batch.archives[p] !== undefined)
        ? tx.getAll(...unsettled.map((p) => db().doc(p)))
        : readFactsInTx(tx, unsettled),
      activeHoldsInTx(tx),
      openEvidence(tx),
    ]);
    const fresh = batchFrom(freshSnap);
    const settled = settledPaths(fresh.outcome);
    const snaps = read.filter((s) => !settled.has(s.ref.path));
    const todo = snaps.map((s) => s.ref.path);
    const facts = snaps.map(factsOf);
    const claimActive = await claimsActiveInTx(tx, facts, cp.unitKey);
    const archivePaths = todo.filter((p) => fresh.archives[p] !== undefined);
    const archiveSnaps = new Map<string, DocumentSnapshot>();
    if (archivePaths.length > 0) {
      const archivesRead = await tx.getAll(...archivePaths.map((p) => archiveRef(fresh.archives[p]!)));
      archivePaths.forEach((p, k) => archiveSnaps.set(p, archivesRead[k]!));
    }
    const ctx = { holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
    const outcomes: ExecOutcome[] = facts.map((f, k) => {
      const archive = archiveSnaps.get(f.path);
      // The archive is verified again now, against the source as it is in this transaction.
      const archiveVerified = archive !== undefined && f.exists && verifyArchiveSnapshot(snaps[k]!, archive) === null;
      return decideExecute(f, cp, ctx, { archiveVerified, descendantsRemain: probes.has(f.path), claimActive });
    });
    const toDelete: string[] = [];
    const updateTimes: Timestamp[] = [];
    const o = fresh.outcome;
    outcomes.forEach((out, k) => {
      switch (out.outcome) {
        case "delete":
          toDelete.push(out.path);
          updateTimes.push(snaps[k]!.updateTime!);
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
    });
    const held = outcomes.filter((x) => x.outcome === "held").map((x) => x.path);
    const gone = outcomes.filter((x) => x.outcome === "gone").map((x) => x.path);
    tx.update(bRef, { outcome: o, ...(toDelete.length === 0 ? { complete: true } : {}) });
    const counts = (name: ExecOutcome["outcome"]) => outcomes.filter((x) => x.outcome === name).length;
    writeCheckpoint(tx, cp, env, {
      ...(toDelete.length > 0 ? { pending: { step, paths: toDelete, updateTimes } } : { pending: null, nextStep: step + 1 }),
      "counts.held": FieldValue.increment(held.length),
      "counts.gone": FieldValue.increment(gone.length),
      "counts.claimed": FieldValue.increment(counts("claimed")),
      "counts.deferred": FieldValue.increment(counts("deferred")),
      "counts.blocked": FieldValue.increment(counts("blocked")),
    });
    if (held.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, {
          action: "PURGE_HOLD_STOPPED",
          decision: { reason: "LEGAL_HOLD" },
          paths: held,
          counts: { held: held.length, batch: batchIndex },
        }),
      );
    }
    if (gone.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, {
          action: "PURGE_OBSERVED_GONE",
          decision: { reason: "ALREADY_DELETED" },
          paths: gone,
          counts: { gone: gone.length, batch: batchIndex },
        }),
      );
    }
    if (held.length > 0) log.warn("purge.hold_stopped", { unitKey: cp.unitKey, batch: batchIndex, held: held.length });
    return toDelete.length > 0 ? ({ kind: "pending", paths: toDelete, updateTimes } as const) : ({ kind: "settled" } as const);
  }, TX_OPTIONS);
}

/**
 * A pending delete found on resume (the run stopped between deciding and recording). The crash may have
 * lasted a while: holds are read again, and a document that still exists and is now held leaves the
 * pending list, recorded as stopped. The rest is deleted (what is already gone is recorded as deleted).
 */
async function resumePending(
  tx: Transaction,
  cp: UnitCheckpoint,
  pending: NonNullable<UnitCheckpoint["pending"]>,
  bRef: DocumentReference,
  batchIndex: number,
  env: StepEnv,
): Promise<Decided> {
  const snaps = await readFactsInTx(tx, pending.paths);
  const holds = await activeHoldsInTx(tx);
  const fresh = batchFrom(await tx.get(bRef));
  const stopped = snaps.map((s) => ({ s, hold: s.exists ? holdOf(factsOf(s), holds) : null })).filter((x) => x.hold !== null);
  if (stopped.length === 0) return { kind: "pending", paths: pending.paths, updateTimes: pending.updateTimes };
  const evidence = await openEvidence(tx);
  const stoppedPaths = new Set(stopped.map((x) => x.s.ref.path));
  for (const x of stopped) fresh.outcome.held.push({ path: x.s.ref.path, holdId: x.hold!.holdId, reasonCode: x.hold!.reasonCode });
  const keep = pending.paths.map((p, k) => ({ p, t: pending.updateTimes[k]! })).filter((x) => !stoppedPaths.has(x.p));
  const next = { step: pending.step, paths: keep.map((x) => x.p), updateTimes: keep.map((x) => x.t) };
  tx.update(bRef, { outcome: fresh.outcome });
  writeCheckpoint(tx, cp, env, { pending: next, "counts.held": FieldValue.increment(stopped.length) });
  evidence.append(
    purgeEvidence(env, cp, {
      action: "PURGE_HOLD_STOPPED",
      decision: { reason: "LEGAL_HOLD" },
      paths: [...stoppedPaths],
      counts: { held: stopped.length, batch: batchIndex },
    }),
  );
  log.warn("purge.hold_stopped", { unitKey: cp.unitKey, batch: batchIndex, held: stopped.length });
  return { kind: "pending", paths: next.paths, updateTimes: next.updateTimes };
}

/**
 * Record transaction: what the pending delete removed, recorded once in PURGE_BATCH evidence with the
 * checkpoint advance. A delete this process saw succeed (`confirmed`) needs no second look; any other
 * pending path (its delete was refused, or a crashed run deleted it before recording) is read back: gone
 * now = deleted by this step. Documents still there (they changed under the delete) return to the
 * decision step.
 */
async function record(
  cp: UnitCheckpoint,
  step: number,
  batchIndex: number,
  confirmed: ReadonlySet<string>,
  env: StepEnv,
): Promise<{ remaining: number; deleted: string[] } | null> {
  const bRef = batchRef(cp.unitKey, cp.round, batchIndex);
  return db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now || !now.pending || now.pending.step !== step) return null;
    const unknown = now.pending.paths.filter((p) => !confirmed.has(p));
    const [snaps, freshSnap, evidence] = await Promise.all([
      readFactsInTx(tx, unknown),
      tx.get(bRef),
      openEvidence(tx),
    ]);
    const fresh = batchFrom(freshSnap);
    const goneNow = new Set(snaps.filter((s) => !s.exists).map((s) => s.ref.path));
    const deleted = now.pending.paths.filter((p) => confirmed.has(p) || goneNow.has(p));
    const remaining = now.pending.paths.length - deleted.length;
    fresh.outcome.deleted.push(...deleted);
    tx.update(bRef, { outcome: fresh.outcome, ...(remaining === 0 ? { complete: true } : {}) });
    writeCheckpoint(tx, cp, env, {
      pending: null,
      ...(remaining === 0 ? { nextStep: step + 1 } : {}),
      "counts.deleted": FieldValue.increment(deleted.length),
    });
    if (deleted.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, {
          action: "PURGE_BATCH",
          decision: { reason: "AUTHORIZED_BY_POLICY" },
          paths: deleted,
          counts: { deleted: deleted.length, batch: batchIndex, stage: fresh.stage },
        }),
      );
    }
    return { remaining, deleted };
  }, TX_OPTIONS);
}

/**
 * The retention.purge_deletions series, per class, after the record committed. A run "as of" another time
 * (emulators only) emits nothing: its numbers describe a fictional now.
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

/**
 * Execute step for a delete batch: decide (holds re-checked), delete (BulkWriter), record (evidence),
 * repeated for documents that changed under the delete. Crash-safe at every point: the checkpoint's
 * `pending` list says what was about to be deleted, and the record step counts only what is gone.
 */
export async function deleteStep(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<void> {
  await fire(env, { point: "beforeExecute", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: [] });
  for (let attempt = 1; ; attempt++) {
    if (attempt > MAX_ATTEMPTS) throw new Error(`PURGE_BATCH_UNSETTLED: batch ${batchIndex} of ${cp.unitKey} kept changing under the purge`);
    const decided = await decide(cp, step, batchIndex, env);
    if (decided.kind === "stale") return;
    if (decided.kind === "settled") break;
    await fire(env, { point: "afterDecide", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: decided.paths });
    const confirmed = await bulkDelete(decided.paths, decided.updateTimes, env);
    await fire(env, { point: "afterDelete", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: decided.paths });
    const recorded = await record(cp, step, batchIndex, confirmed, env);
    if (recorded) countDeletions(recorded.deleted, env);
    if (!recorded || recorded.remaining === 0) break;
  }
  log.info("purge.batch.done", { unitKey: cp.unitKey, batch: batchIndex });
  await fire(env, { point: "afterExecute", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: [] });
}
