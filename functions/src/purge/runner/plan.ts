import { requestUnit, sweepUnit, type PurgeUnit } from "../rules/unit";
import type { DocumentSnapshot } from "firebase-admin/firestore";
import { hashCanonical } from "../../kernel/canonical";
import { isOpenRequest } from "../../requests/rules/requests";
import type { ActiveHoldRef } from "../../kernel/held";
import { sortedUnique } from "../../kernel/paths";
import type { Subject } from "../../plan/rules";
import { evaluateForPurge, keepAncestorsOf, type BlockReason, type Evaluation, type PurgeDocFacts } from "../rules/decide";
import type { SweepTarget } from "../rules/sweep";
import { streamGovernedDescendants, toTimestamp } from "../../platform/governed-doc";
import { db } from "../../platform/firestore";
import { activeHolds } from "../../holds/index";
import { planSubject } from "../../plan/index";
import { factsOfData, readAll, requestRef, type RetainedRecord } from "../store";
import { policy } from "../../platform/registry";

/** A unit's manifest as the purge will execute it, after the destroy predicate has judged every path. */
export interface UnitPlan extends PurgeUnit {
  manifestHash: string;
  delete: string[];
  external: string[];
  mask: { path: string; fields: string[] }[];
  retain: RetainedRecord[];
  /** Paths the predicate refused for a reason other than a hold. A request with any is BLOCKED. */
  blocked: { path: string; reason: BlockReason }[];
  /** Delete paths whose class requires a verified archive first. */
  needsArchive: string[];
  deleteByClass: Record<string, number>;
}

function evaluateFacts(facts: readonly PurgeDocFacts[], holds: readonly ActiveHoldRef[], workflowEligible: boolean, nowMs: number): Evaluation[] {
  const ctx = { holds, workflowEligible, policy: policy(), nowMs };
  return facts.map((f) => evaluateForPurge(f, ctx, "pending"));
}

/** A document as planning read it: its path and (retention) data, undefined when it does not exist. */
interface Read {
  path: string;
  data: Record<string, unknown> | undefined;
}

const readOf = (s: DocumentSnapshot): Read => ({ path: s.ref.path, data: s.exists ? s.data() : undefined });

/**
 * Paths soft-deleted by a deletion request that is still open (requests/rules/requests.ts#isOpenRequest), or
 * being cancelled: they are that request's to purge (or to restore), never the sweep's.
 */
async function ownedByOpenRequest(reads: readonly Read[]): Promise<Set<string>> {
  const requestOf = (r: Read): string | null => (typeof r.data?.deletionRequestId === "string" && r.data.deletionRequestId !== "" ? r.data.deletionRequestId : null);
  const ids = [...new Set(reads.map(requestOf).filter((v): v is string => v !== null))];
  const open = new Set<string>();
  for (let i = 0; i < ids.length; i += 300) {
    const reqs = await db().getAll(...ids.slice(i, i + 300).map((id) => requestRef(id)));
    for (const r of reqs) if (isOpenRequest(r.get("state")) || r.get("state") === "CANCELLING") open.add(r.id);
  }
  return new Set(reads.filter((r) => open.has(requestOf(r) ?? "")).map((r) => r.path));
}

function tally(evals: readonly Evaluation[]): { del: string[]; needsArchive: string[] } {
  const del: string[] = [];
  const needsArchive: string[] = [];
  for (const e of evals) {
    if (e.verdict !== "delete") continue;
    del.push(e.path);
    if (e.needsArchive) needsArchive.push(e.path);
  }
  return { del, needsArchive };
}

function recount(byPath: readonly Evaluation[], keep: ReadonlySet<string>): Record<string, number> {
  const byClass: Record<string, number> = {};
  for (const e of byPath) if (e.verdict === "delete" && keep.has(e.path)) byClass[e.retentionClass] = (byClass[e.retentionClass] ?? 0) + 1;
  return byClass;
}

/**
 * A deletion request's unit: the subject's plan (planSubject: data map, holds, retain and mask entries),
 * then every delete path judged by the destroy predicate with the workflow's authority, on the retention
 * fields discovery read (the mark and execute steps read each document again inside their transactions).
 * A hold found now moves the path (and its ancestors) to retained; any other refusal blocks the request.
 */
export async function planRequestUnit(requestId: string, subject: Subject, nowMs: number): Promise<UnitPlan> {
  const seen = new Map<string, PurgeDocFacts>();
  const plan = await planSubject(subject, nowMs, (d) => seen.set(d.snap.ref.path, factsOfData(d.snap.ref.path, d.snap.data())));
  const holds = await activeHolds();
  const evals = evaluateFacts(
    plan.delete.map((p) => seen.get(p) ?? factsOfData(p, undefined)),
    holds,
    true,
    nowMs,
  );
  seen.clear();
  const held = evals.filter((e): e is Extract<Evaluation, { verdict: "held" }> => e.verdict === "held");
  const { del, needsArchive } = tally(evals);
  const kept = keepAncestorsOf(del, held.map((h) => h.path));
  const retain: RetainedRecord[] = [
    ...plan.retain.map((r) => ({
      path: r.path,
      action: r.action,
      reasonCode: r.reasonCode,
      ...(r.holdId ? { holdId: r.holdId } : {}),
      ...(r.deferredByHold ? { deferredByHold: true } : {}),
    })),
    // Found held only now (the plan's delete list): the hold defers their deletion.
    ...held.map((h) => ({ path: h.path, action: "retain" as const, reasonCode: h.reasonCode, ...(h.holdId ? { holdId: h.holdId } : {}), deferredByHold: true })),
    ...kept.keptAncestors.map((p) => ({ path: p, action: "retain" as const, reasonCode: "RETAINED_DESCENDANT" })),
  ];
  const deleteSet = new Set(kept.delete);
  return {
    ...requestUnit(requestId, subject),
    manifestHash: plan.manifestHash,
    delete: kept.delete,
    external: plan.externalCopiesToReview.filter((p) => deleteSet.has(p)),
    mask: plan.retain.filter((r) => r.action === "mask").map((r) => ({ path: r.path, fields: r.fields ?? [] })),
    retain,
    blocked: evals.flatMap((e) => (e.verdict === "blocked" ? [{ path: e.path, reason: e.reason }] : [])),
    needsArchive: needsArchive.filter((p) => deleteSet.has(p)),
    deleteByClass: recount(evals, deleteSet),
  };
}

/**
 * A policy sweep's unit for one collection: documents whose retention has run out (or that a
 * retention-admin made PURGE_ELIGIBLE), up to `limit`, with all their descendants. Paths the predicate
 * refuses stay, documented, and so do their ancestors. Returns null when there is nothing to delete.
 */
export async function planSweepUnit(target: SweepTarget, nowMs: number, limit: number): Promise<UnitPlan | null> {
  const col = db().collection(target.collection);
  const [due, decided] = await Promise.all([
    col.where(target.field, "<=", toTimestamp(nowMs)).orderBy(target.field).limit(limit).select().get(),
    col.where("lifecycleState", "==", "PURGE_ELIGIBLE").limit(limit).select().get(),
  ]);
  const candidates = sortedUnique([...due.docs, ...decided.docs].map((d) => d.ref.path));
  // A root in an open request's hands is left out with its whole subtree.
  const roots = (await readAll(candidates)).map(readOf);
  const rootOwned = await ownedByOpenRequest(roots);
  const all: Read[] = [];
  for (const root of roots.filter((r) => !rootOwned.has(r.path))) {
    all.push(root);
    for await (const d of streamGovernedDescendants(root.path)) all.push({ path: d.ref.path, data: d.data() });
  }
  const holds = await activeHolds();
  const owned = await ownedByOpenRequest(all);
  const evals = evaluateFacts(all.map((r) => factsOfData(r.path, r.data)), holds, false, nowMs).map(
    (e): Evaluation => (owned.has(e.path) && e.verdict === "delete" ? { path: e.path, verdict: "blocked", reason: "OPEN_DELETION_REQUEST" } : e),
  );
  const { del, needsArchive } = tally(evals);
  const refused = evals.filter((e) => e.verdict === "held" || e.verdict === "blocked");
  const kept = keepAncestorsOf(del, refused.map((e) => e.path));
  if (kept.delete.length === 0) return null;
  const retain: RetainedRecord[] = [
    ...refused.map((e) => ({
      path: e.path,
      action: "retain" as const,
      reasonCode: e.verdict === "held" ? e.reasonCode : e.verdict === "blocked" ? e.reason : "",
      ...(e.verdict === "held" && e.holdId ? { holdId: e.holdId } : {}),
    })),
    ...kept.keptAncestors.map((p) => ({ path: p, action: "retain" as const, reasonCode: "RETAINED_DESCENDANT" })),
  ].sort((a, b) => (a.path < b.path ? -1 : 1));
  const unit = sweepUnit(target.collection);
  const deleteSet = new Set(kept.delete);
  const pol = policy();
  return {
    ...unit,
    manifestHash: hashCanonical({ unitKey: unit.unitKey, delete: [...kept.delete].sort(), retain, policyVersion: pol.version }),
    delete: kept.delete,
    external: [],
    mask: [],
    retain,
    blocked: [],
    needsArchive: needsArchive.filter((p) => deleteSet.has(p)),
    deleteByClass: recount(evals, deleteSet),
  };
}
