import { DataKeys } from "../../shred/index";
import type { DocumentSnapshot, Transaction } from "firebase-admin/firestore";
import { decideExecute, decideMark, type ExecOutcome } from "../rules/decide";
import type { PurgeItem } from "../rules/batches";
import { archiveRef, holdArchiveInTx, verifyArchiveSnapshot } from "./archive";
import { db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { emitMetric } from "../../platform/metrics";
import { ancestorsInRange, probeBatch } from "./probe";
import { fire, wants, type StepEnv } from "./env";
import { inBatch, type BatchDecisionResult, type BatchSpec } from "./step";
import { timestampOfVersion, versionOf } from "./records";
import { batchFrom, factsOf, readFactsInTx, settledPaths, type BatchDoc, type BatchOutcome, type UnitCheckpoint } from "../store";
import { policy } from "../../platform/registry";
import { purgeSettings } from "../settings";

/**
 * A delete batch (docs/PURGE-ENGINE.md): ONE transaction decides and deletes.
 *
 * Through the batch helper (`inBatch`) it reads the unit's fence (lease and checkpoint: a runner that lost
 * its lease, or a step another attempt already finished, commits nothing), the batch record and the hold
 * fence's generation. Then, on the fast path, when the generation and the policy version are the ones the
 * plan decided under, each document is deleted with its decided version as a precondition: the plan's
 * decision is about exactly that version under exactly those holds, so it still stands, and the document
 * costs its one read at discovery and its delete. Documents that must be looked at again are read in the
 * transaction: trigger-collection documents (marked first), archive classes (the archive is verified
 * against the source now), and everything when the fence or the policy moved. If any precondition fails
 * (the document changed or went), the transaction fails as a whole and runs again on the read path, where
 * every document is read and judged: holds, predicate, archive, and a document that changed since the plan
 * is decided afresh in the same commit as its delete.
 *
 * A parent goes only when nothing is left under it: every item is probed first (a child may have been
 * created under any of them since the plan).
 * Because the transaction read the hold fence, Firestore serialises it against any hold placement: a hold
 * either committed first (and the transaction sees the new generation, and the holds) or commits after the
 * documents are gone and their deletion is on the record.
 */
export async function deleteBatch(cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv): Promise<BatchOutcome | null> {
  // Hooks that act before the transaction (tests, profiles) are told the batch's paths, which only a read of the
  // record ahead of the transaction gives; without them the record is read once, in the transaction.
  if (wants(env, "afterMark") || wants(env, "beforeExecute")) {
    const ahead = await hooksAhead(cp, spec, env);
    if (ahead !== undefined) return ahead;
  }
  // The batch's items are known only inside the transaction: it reserves a full batch and gives back the rest.
  const reserved = purgeSettings.batchSize();
  await env.limiter.acquire(reserved);
  const keys = env.dataKeys ?? new DataKeys();
  let done: BatchDecisionResult | null = null;
  try {
    for (let mode: "fast" | "read" = "fast"; ; ) {
      try {
        done = await executeTx(cp, spec, env, mode, keys);
        break;
      } catch (err) {
        if (err instanceof KeysFirst) {
          // Archive copies under keys not opened yet: opened now, outside the transaction (a ledger read and a KMS
          // unwrap each), then the transaction runs again and finds them in the step's cache.
          await Promise.all(err.refs.map((r) => keys.open(r)));
          continue;
        }
        if (err instanceof MarkFirst) {
          // Trigger-collection documents are marked in a transaction of their own before the delete.
          const marked = await markBatch(cp, spec, env);
          if (marked === null) return null;
          if (marked.complete) return marked.outcome;
          continue;
        }
        const code = (err as { code?: unknown }).code;
        if (mode === "read" || (code !== 9 && code !== 5)) throw err;
        // FAILED_PRECONDITION (or NOT_FOUND for a document already gone): a document changed or went since the
        // plan. Nothing was committed; the read path, which checks strictly more, decides again.
        log.info("purge.batch.changed", { unitKey: cp.unitKey, batch: spec.ref.id });
        mode = "read";
      }
    }
  } finally {
    env.limiter.refund(Math.max(0, reserved - (done?.paths.length ?? 0)));
  }
  if (!done) return null;
  if (done.outcome.held.length > 0) log.warn("purge.hold_stopped", { unitKey: cp.unitKey, batch: spec.ref.id, held: done.outcome.held.length });
  countDeletions(done.paths, env);
  log.info("purge.batch.done", { unitKey: cp.unitKey, batch: spec.ref.id, deleted: done.paths.length });
  return done.outcome;
}

/** The delete transaction found archive copies under data keys not opened yet: nothing was written; open them first. */
class KeysFirst extends Error {
  constructor(readonly refs: readonly string[]) {
    super("the batch's archive copies' data keys must be opened first");
  }
}

/** The delete transaction found trigger-collection items not yet marked: nothing was written; mark them first. */
class MarkFirst extends Error {
  constructor() {
    super("the batch's trigger-collection items must be marked first");
  }
}

/**
 * The record read ahead of the transaction, for hooks that act before it: marks the batch first when it must
 * be, then fires `afterMark` and `beforeExecute` with its paths. Returns the batch's outcome when there is
 * nothing left to do (or null when the step is not this runner's any more), undefined to go on.
 */
async function hooksAhead(cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv): Promise<BatchOutcome | null | undefined> {
  let before = batchFrom(await spec.ref.get());
  if (before.complete) return before.outcome;
  const hook = { unitKey: cp.unitKey, round: cp.round, step: spec.step, batch: spec.ordinal };
  if (!before.marked && before.items.some((i) => i.mark)) {
    const marked = await markBatch(cp, spec, env);
    if (marked === null) return null;
    if (marked.complete) return marked.outcome;
    before = batchFrom(await spec.ref.get());
  }
  await fire(env, { point: "afterMark", ...hook, paths: before.items.map((i) => i.path) });
  const settled = settledPaths(before.outcome);
  await fire(env, { point: "beforeExecute", ...hook, paths: before.items.filter((i) => !settled.has(i.path)).map((i) => i.path) });
  return undefined;
}

/** Whether a document read now is the version its batch decided on. */
const isRecorded = (item: PurgeItem, snap: DocumentSnapshot): boolean => item.version !== undefined && versionOf(snap.updateTime) === item.version;

function executeTx(cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv, mode: "fast" | "read", keys: DataKeys): Promise<BatchDecisionResult | null> {
  const pol = policy();
  return inBatch(cp, { ...spec, inPoint: "inExecute", afterPoint: "afterExecute" }, env, async ({ tx, batch, holds }) => {
    if (!batch.marked && batch.items.some((i) => i.mark)) throw new MarkFirst();
    const settled = settledPaths(batch.outcome);
    // A path two data-map entries both reached is decided once per batch.
    const seen = new Set<string>();
    const items = batch.items.filter((i) => {
      if (settled.has(i.path) || seen.has(i.path)) return false;
      seen.add(i.path);
      return true;
    });
    const fast = mode === "fast" && holds.generation === batch.decision.fenceGeneration && batch.decision.policyVersion === pol.version;
    const mustRead = (i: PurgeItem) => !fast || i.mark === true || i.archive === true || i.version === undefined;
    const toRead = items.filter(mustRead);
    // Whole documents only where an archive must be verified against its source.
    const snaps =
      toRead.length === 0 ? [] : toRead.some((i) => i.archive) ? await tx.getAll(...toRead.map((i) => db().doc(i.path))) : await readFactsInTx(tx, toRead.map((i) => i.path));
    const archiveSnaps = await readArchives(tx, toRead, batch);
    // Keys are opened outside the transaction (no KMS call while it holds its locks): any not opened yet, and nothing
    // is decided here.
    const unopened = [...new Set([...archiveSnaps.values()].map((a) => a.get("dataKey") as unknown).filter((r): r is string => typeof r === "string" && !keys.has(r)))];
    if (unopened.length > 0) throw new KeysFirst(unopened);
    // A parent with anything under it is not deleted. Every item is probed, after the fence, the record and the
    // items are read (the probe is a plain query: it locks nothing): a child may have been created since the plan
    // under any of them, a planned leaf included (docs/PURGE-ENGINE.md, "Why every item is probed").
    const paths = items.map((i) => i.path);
    const around = ancestorsInRange(paths);
    const aroundSnaps = around && around.length > 0 ? await readFactsInTx(tx, around) : [];
    const probes = await probeBatch(paths, snaps.filter((snap) => !snap.exists).length, around === null ? null : aroundSnaps.filter((snap) => snap.exists).length);
    const ctx = { holds: holds.holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
    // The archive is verified again now, against the source as it is in this transaction (its seal opened with its
    // data key, opened once per step before the transaction).
    const archiveOk = await Promise.all(
      toRead.map(async (item, k) => {
        const archive = archiveSnaps.get(item.path);
        return archive !== undefined && snaps[k]!.exists && (await verifyArchiveSnapshot(snaps[k]!, archive, keys)) === null;
      }),
    );
    const outcomes: ExecOutcome[] = toRead.map((item, k) => {
      const snap = snaps[k]!;
      const archiveVerified = archiveOk[k]!;
      return decideExecute(factsOf(snap), cp, ctx, {
        recorded: isRecorded(item, snap),
        archiveVerified,
        descendantsRemain: probes.has(item.path),
        archivedByDataMap: item.archivedByDataMap === true,
        ...(item.mark ? { markedBy: spec.ref.id } : {}),
      });
    });
    // The plan's decision stands for the rest: same version (the precondition), same holds, same policy.
    for (const item of items.filter((i) => !mustRead(i))) {
      if (probes.has(item.path)) outcomes.push({ path: item.path, outcome: "deferred" });
      else {
        tx.delete(db().doc(item.path), { lastUpdateTime: timestampOfVersion(item.version!) });
        outcomes.push({ path: item.path, outcome: "delete", redecided: false });
      }
    }
    const read = new Set(toRead.map((i) => i.path));
    const o = batch.outcome;
    for (const out of outcomes) {
      switch (out.outcome) {
        case "delete":
          if (read.has(out.path)) tx.delete(db().doc(out.path));
          o.deleted.push(out.path);
          if (out.redecided) o.redecided.push(out.path);
          break;
        case "gone":
          o.gone.push(out.path);
          break;
        case "held": {
          o.held.push({ path: out.path, holdId: out.holdId, reasonCode: out.reasonCode });
          const archive = archiveSnaps.get(out.path);
          if (archive) holdArchiveInTx(tx, archive, holds.holds);
          break;
        }
        case "deferred":
          o.deferred.push(out.path);
          break;
        case "blocked":
          o.blocked.push({ path: out.path, reason: out.reason });
          break;
      }
    }
    const versions = new Map(toRead.map((i, k) => [i.path, versionOf(snaps[k]!.updateTime)]));
    return batchEvidence(batch, spec.ordinal, outcomes, fast, versions);
  });
}

async function readArchives(tx: Transaction, items: readonly PurgeItem[], batch: BatchDoc): Promise<Map<string, DocumentSnapshot>> {
  const out = new Map<string, DocumentSnapshot>();
  const paths = items.filter((i) => i.archive && batch.archives[i.path] !== undefined).map((i) => i.path);
  if (paths.length === 0) return out;
  const read = await tx.getAll(...paths.map((p) => archiveRef(batch.archives[p]!)));
  paths.forEach((p, k) => out.set(p, read[k]!));
  return out;
}

/** The batch's evidence: one PURGE_BATCH for what it deleted (and one entry for each other kind of outcome). */
function batchEvidence(batch: BatchDoc, ordinal: number, outcomes: readonly ExecOutcome[], fast: boolean, versions: ReadonlyMap<string, string | undefined>): BatchDecisionResult {
  const of = (name: ExecOutcome["outcome"]) => outcomes.filter((x) => x.outcome === name).map((x) => x.path);
  const deleted = of("delete");
  const held = of("held");
  const gone = of("gone");
  // A document that changed since the plan was decided again in this transaction: each such path with the
  // version that decision was about (`path@seconds.nanos`, one per line) goes into the entry, beside the
  // batch record's hash.
  const redecided = outcomes.filter((x) => x.outcome === "delete" && x.redecided).map((x) => ({ path: x.path, version: versions.get(x.path) ?? null }));
  const evidence: BatchDecisionResult["evidence"] = [];
  if (held.length > 0) evidence.push({ action: "PURGE_HOLD_STOPPED", decision: { reason: "LEGAL_HOLD" }, paths: held, counts: { held: held.length, batch: ordinal } });
  if (gone.length > 0) evidence.push({ action: "PURGE_OBSERVED_GONE", decision: { reason: "ALREADY_DELETED" }, paths: gone, counts: { gone: gone.length, batch: ordinal } });
  if (deleted.length > 0) {
    evidence.push({
      action: "PURGE_BATCH",
      decision: { reason: "AUTHORIZED_BY_POLICY" },
      paths: deleted,
      counts: { deleted: deleted.length, batch: ordinal, redecided: redecided.length },
      detail: { stage: batch.stage, decidedGeneration: batch.decision.fenceGeneration, path: fast ? "precondition" : "read", ...(redecided.length > 0 ? { redecided: redecided.map((r) => `${r.path}@${r.version ?? "?"}`).join("\n") } : {}) },
    });
  }
  return { outcome: batch.outcome, complete: true, evidence, paths: deleted };
}

/**
 * Marks a batch's trigger-collection documents PURGE_ELIGIBLE with this round's decision (`purgeDecision`),
 * in their own transaction before the delete: the delete trigger then sees a purge decision on the deleted
 * document and leaves the evidence to the purge. Documents the predicate refuses now are not marked (the
 * delete transaction records why).
 */
function markBatch(cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv): Promise<BatchDecisionResult | null> {
  const pol = policy();
  return inBatch(cp, spec, env, async ({ tx, batch, holds }) => {
    const items = batch.items.filter((i) => i.mark);
    const byDataMap = new Set(items.filter((i) => i.archivedByDataMap).map((i) => i.path));
    const facts = (await readFactsInTx(tx, items.map((i) => i.path))).map(factsOf);
    const ctx = { holds: holds.holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
    const paths: string[] = [];
    for (const f of facts) {
      const action = decideMark(f, cp, ctx, batch.archives[f.path] !== undefined, byDataMap.has(f.path), spec.ref.id);
      if (action.kind !== "mark") continue;
      tx.update(db().doc(f.path), {
        lifecycleState: "PURGE_ELIGIBLE",
        purgeDecision: {
          allowed: true,
          reason: "AUTHORIZED_BY_POLICY",
          policyVersion: pol.version,
          retentionClass: f.retentionClass,
          decidedAt: toTimestamp(env.nowMs),
          decidedBy: { type: env.actor.type, id: env.actor.id },
          requestId: cp.requestId,
          manifestHash: cp.manifestHash,
          unitKey: cp.unitKey,
          round: cp.round,
          batch: spec.ref.id,
          from: action.from,
          route: action.route,
        },
      });
      paths.push(f.path);
    }
    return {
      outcome: batch.outcome,
      complete: false,
      marked: true,
      evidence: paths.length > 0 ? [{ action: "PURGE_ELIGIBLE_MARKED", decision: { reason: "AUTHORIZED_BY_POLICY" }, paths, counts: { marked: paths.length, batch: spec.ordinal } }] : [],
      paths,
    };
  });
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
