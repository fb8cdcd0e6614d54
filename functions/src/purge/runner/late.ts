import pLimit from "p-limit";
import { hashCanonical } from "../../kernel/canonical";
import { compareNames, isSameOrUnder } from "../../kernel/paths";
import { BatchCutter, orderStages, type PurgeItem, type StageLayout } from "../rules/batches";
import { evaluateForPurge } from "../rules/decide";
import { hasDeleteTrigger } from "../../ttl/rules";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { activeHolds, readFence } from "../../holds/index";
import { KeptBelow } from "../../plan/index";
import { db } from "../../platform/firestore";
import { streamGovernedDescendants } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { purgeSettings } from "../settings";
import { batchRef, factsOfData, readAll, type BatchDoc, type UnitCheckpoint } from "../store";
import { fire, purgeEvidence, type StepEnv } from "./env";
import { recordSink, versionOf } from "./records";
import { fenceStep, writeCheckpoint, type BatchRun } from "./step";
import { roundBatches, roundRetained } from "./verify";

/**
 * The final sweep (docs/PURGE-ENGINE.md, "Late finds"). Once every stage has run, the purge looks again
 * under each recursive root it deleted and under each parent whose delete it deferred (something was still
 * under it). Whatever is there and is not a documented survivor of the plan (retained, held, refused) was
 * created while the purge ran, or is what kept a parent back. It is judged by the destroy predicate like
 * planned data, written down in late batch records (the decision), and deleted children first with the same
 * batch transaction as the rest, so the purge never leaves a child orphaned under a parent it deleted. The
 * deferred parents are decided again with them. What the predicate refuses now stays, with its ancestors.
 */
export async function lateSweep(cp: UnitCheckpoint, step: number, env: StepEnv, run: BatchRun): Promise<UnitCheckpoint | null> {
  const { roots, expected } = await survivorsAndRoots(cp);
  if (roots.length === 0) return cp;
  const fenceGeneration = await readFence();
  const holds = await activeHolds();
  const pol = policy();
  const ctx = { holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
  const sink = recordSink(cp.unitKey, cp.planId, cp.round);
  const decision = { fenceGeneration, policyVersion: pol.version, decidedAtMs: env.nowMs };
  const cutter = new BatchCutter(
    purgeSettings.batchSize(),
    (b) => sink.batch({ ...b, hash: hashCanonical({ unitKey: cp.unitKey, planId: cp.planId, stage: b.stage, seq: b.seq, items: b.items }), decision }),
    cp.late,
  );
  let found = 0;
  let refused = 0;
  type Pending = { item: PurgeItem } | null;
  const keeper = new KeptBelow<Pending>((p, keptBelow, leaf) => {
    if (p === null) return;
    if (keptBelow) {
      refused++;
      return;
    }
    found++;
    cutter.add("late", leaf ? { ...p.item, leaf: true } : p.item);
  });
  const visit = (path: string, data: Record<string, unknown> | undefined, version: string | undefined): void => {
    if (expected.has(path) || data === undefined) {
      keeper.push(path, null, true);
      return;
    }
    const ev = evaluateForPurge(factsOfData(path, data), ctx, "pending");
    if (ev.verdict !== "delete" || ev.needsArchive) {
      refused++;
      keeper.push(path, null, true);
      return;
    }
    const item: PurgeItem = { path, ...(version ? { version } : {}), ...(hasDeleteTrigger(pol, path) ? { mark: true as const } : {}) };
    keeper.push(path, { item }, false);
  };
  for (const root of await readAll(roots)) {
    if (root.exists) visit(root.ref.path, root.data(), versionOf(root.updateTime));
    for await (const d of streamGovernedDescendants(root.ref.path)) {
      visit(d.ref.path, d.data(), versionOf(d.updateTime));
      await sink.ready();
    }
  }
  keeper.end();
  const layout = cutter.end();
  await sink.close();
  const added = layout.reduce((n, s) => n + s.batches, 0) - cp.late.reduce((n, s) => n + s.batches, 0);
  if (added === 0) return cp;
  log.warn("purge.late.found", { unitKey: cp.unitKey, found, refused, batches: added });
  const next: UnitCheckpoint = { ...cp, late: layout };
  const ok = await db().runTransaction(async (tx) => {
    if (!(await fenceStep(tx, cp, env, step))) return false;
    const evidence = await openEvidence(tx, cp.unitKey);
    writeCheckpoint(tx, cp, env, { late: layout });
    evidence.append(
      purgeEvidence(env, cp, {
        action: "PURGE_LATE_FOUND",
        decision: { reason: "AUTHORIZED_BY_POLICY" },
        counts: { found, refused, batches: added, roots: roots.length },
        detail: { decidedGeneration: fenceGeneration },
      }),
    );
    return true;
  }, EVIDENCE_TX);
  if (!ok) return null;
  await runLate(next, cp.late, step, env, run);
  return next;
}

/** Runs the late batches added since `before`, stage by stage (children first), several at a time. */
async function runLate(cp: UnitCheckpoint, before: readonly StageLayout[], step: number, env: StepEnv, run: BatchRun): Promise<void> {
  const had = new Map(before.map((s) => [s.key, s.batches]));
  let ordinal = [...cp.layout, ...before].reduce((n, s) => n + s.batches, 0);
  const limit = pLimit(env.parallelBatches);
  for (const s of orderStages(cp.late)) {
    const from = had.get(s.key) ?? 0;
    const seqs = Array.from({ length: s.batches - from }, (_, k) => from + k);
    const base = ordinal;
    ordinal += seqs.length;
    await fire(env, { point: "beforeLate", unitKey: cp.unitKey, round: cp.round, step, batch: base, paths: [] });
    const results = await Promise.allSettled(seqs.map((seq, k) => limit(() => run(cp, { step, ref: batchRef(cp.unitKey, cp.planId, s.key, seq), ordinal: base + k }, env))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }
}

/**
 * What the plan expects to survive (retained records; paths its batches recorded as held or refused) and
 * where to look again: every recursive root the round deleted, and every parent it deferred, outermost
 * only (a scan covers everything under its root).
 */
async function survivorsAndRoots(cp: UnitCheckpoint): Promise<{ roots: string[]; expected: Set<string> }> {
  const expected = new Set<string>();
  for await (const r of roundRetained(cp)) expected.add(r.path);
  const candidates: string[] = [];
  for await (const b of roundBatches(cp)) {
    noteBatch(b, expected, candidates);
  }
  const roots: string[] = [];
  for (const p of candidates.sort(compareNames)) {
    const last = roots[roots.length - 1];
    if (last === undefined || !isSameOrUnder(p, last)) roots.push(p);
  }
  return { roots, expected };
}

function noteBatch(b: BatchDoc, expected: Set<string>, roots: string[]): void {
  if (b.kind !== "delete") return;
  for (const h of b.outcome.held) expected.add(h.path);
  for (const x of b.outcome.blocked) expected.add(x.path);
  const deleted = new Set(b.outcome.deleted);
  for (const item of b.items) if (item.root && deleted.has(item.path)) roots.push(item.path);
  roots.push(...b.outcome.deferred);
}
