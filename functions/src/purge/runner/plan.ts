import { randomUUID } from "node:crypto";
import type { DocumentData } from "firebase-admin/firestore";
import { requestUnit, sweepUnit, type PurgeUnit } from "../rules/unit";
import { isOpenRequest } from "../../requests/rules/requests";
import type { ActiveHoldRef } from "../../kernel/held";
import { ancestorDocuments, compareNames } from "../../kernel/paths";
import type { DataMapEntry } from "../../kernel/policy-schema";
import type { PolicyIndex } from "../../kernel/policy";
import { evaluateForPurge, type BlockReason, type PurgeDocFacts } from "../rules/decide";
import type { PurgeItem, StageLayout } from "../rules/batches";
import { ManifestBuilder, type ManifestSummary, type RetainedRecord } from "../rules/manifest";
import type { SweepTarget } from "../rules/sweep";
import { hasDeleteTrigger } from "../../ttl/rules";
import { streamGovernedDescendants, toTimestamp } from "../../platform/governed-doc";
import { db } from "../../platform/firestore";
import { activeHolds, readFence } from "../../holds/index";
import { archivedOnErasure, archivesInTrees, discoverEntry, discoverEntryObjects, discoveredFrom, judgeDiscovered, judgeObject, KeptBelow, retainedDescendant, subjectVars, type DiscoveredSnapshot, type Subject } from "../../plan/index";
import { factsOfData, readAll, requestRef } from "../store";
import { policy } from "../../platform/registry";
import { versionOf, type PlanSink } from "./records";

/**
 * A unit's plan, streamed (docs/PURGE-ENGINE.md): discovery reads each document once (its retention fields
 * and version), the destroy predicate judges it, and the decision goes straight into a batch record through
 * the sink. What stays in memory is the open batches, the chain of ancestors of the document being read,
 * and counters; the plan itself is on disk, under a fresh plan id, before the brake ever sees it.
 */
export interface UnitPlan extends PurgeUnit, ManifestSummary {
  planId: string;
  round: number;
  /** The hold fence generation the decisions were made under (read before the holds). */
  fenceGeneration: number;
  decidedAtMs: number;
  blocked: { path: string; reason: BlockReason }[];
}

/** A fresh plan id: the round, then random characters (batch record ids start with it). */
export const newPlanId = (round: number): string => `p${round}x${randomUUID().replace(/-/g, "").slice(0, 10)}`;

export interface PlanInput {
  /** The plan's id: its records are written under it (purge/store.ts). */
  planId: string;
  round: number;
  nowMs: number;
  batchSize: number;
  sink: PlanSink;
}

/** What planning needs besides the document: the holds and policy read once, and the builder it feeds. */
interface PlanContext {
  holds: readonly ActiveHoldRef[];
  policy: PolicyIndex;
  nowMs: number;
  builder: ManifestBuilder;
  sink: PlanSink;
}

/** One document, judged, waiting for its subtree to pass (the ancestor rule). */
type Pending =
  | { kind: "delete"; item: PurgeItem; retentionClass: string; external: boolean; recursive: boolean }
  | { kind: "retain"; record: RetainedRecord }
  | { kind: "refused" };

async function begin(unit: PurgeUnit, input: PlanInput): Promise<{ ctx: PlanContext; planId: string; fenceGeneration: number }> {
  // The fence first: a hold placed after this read moves it, and every batch decided here is then judged
  // again inside its delete transaction.
  const fenceGeneration = await readFence();
  const holds = await activeHolds();
  const pol = policy();
  const planId = input.planId;
  const builder = new ManifestBuilder({
    unitKey: unit.unitKey,
    planId,
    batchSize: input.batchSize,
    decision: { fenceGeneration, policyVersion: pol.version, decidedAtMs: input.nowMs },
    onBatch: (b) => input.sink.batch(b),
    onRetained: (i, items) => input.sink.retained(i, items),
  });
  return { ctx: { holds, policy: pol, nowMs: input.nowMs, builder, sink: input.sink }, planId, fenceGeneration };
}

async function finish(unit: PurgeUnit, input: PlanInput, begun: { ctx: PlanContext; planId: string; fenceGeneration: number }): Promise<UnitPlan> {
  const summary = begun.ctx.builder.finish();
  await input.sink.close();
  return {
    ...unit,
    ...summary,
    blocked: summary.blocked as UnitPlan["blocked"],
    planId: begun.planId,
    round: input.round,
    fenceGeneration: begun.fenceGeneration,
    decidedAtMs: input.nowMs,
  };
}

/** The item a delete decision records: the path, the version decided on, and what execution must know. */
function deleteItem(path: string, snap: DiscoveredSnapshot["snap"], root: boolean, pol: PolicyIndex, needsArchive: boolean, archivedByDataMap = false): PurgeItem {
  const version = versionOf(snap.updateTime);
  return {
    path,
    ...(version ? { version } : {}),
    ...(root ? { root: true as const } : {}),
    ...(hasDeleteTrigger(pol, path) ? { mark: true as const } : {}),
    ...(needsArchive ? { archive: true as const } : {}),
    ...(archivedByDataMap ? { archivedByDataMap: true as const } : {}),
  };
}

/** Emits a judged document once its subtree has passed: a delete with anything kept below it is kept instead. */
function emitter(ctx: PlanContext, aboveKept: ReadonlySet<string>): (p: Pending, keptBelow: boolean) => void {
  return (p, keptBelow) => {
    if (p.kind === "retain") ctx.builder.retain(p.record);
    if (p.kind !== "delete") return;
    if (keptBelow || aboveKept.has(p.item.path)) {
      const kept = retainedDescendant(p.item.path);
      ctx.builder.retain({ path: kept.path, action: "retain", reasonCode: kept.reasonCode });
      return;
    }
    ctx.builder.delete(p.item, p.retentionClass, p.external);
  };
}

const heldRecord = (path: string, holdId: string | null, reasonCode: string, deferred: boolean): RetainedRecord => ({
  path,
  action: "retain",
  reasonCode,
  ...(holdId ? { holdId } : {}),
  ...(deferred ? { deferredByHold: true } : {}),
});

/** The data map's entries that keep the live record (what they reach wins over any other entry). */
const keeps = (e: DataMapEntry): boolean => e.action === "retain" || e.action === "mask" || e.action === "removeFromArray";

/**
 * A deletion request's unit. The data map's retain and mask entries go first (what they keep wins over any
 * delete entry, and their ancestors are kept), then its archive entries (what they reach is archived first,
 * whichever delete entry also reaches it: plan/rules.ts#archivedOnErasure), then each delete entry, one root's
 * subtree at a time in name order. Every delete path is judged by the plan rules (plan/rules.ts#judgeDiscovered: holds, the entry, the
 * class) and then by the destroy predicate with the workflow's authority; a hold found now keeps the path
 * (the erasure is deferred), any other refusal blocks the request. A path two delete entries both reach is
 * planned twice; the second batch finds it gone.
 */
export async function planRequestUnit(requestId: string, subject: Subject, input: PlanInput): Promise<UnitPlan> {
  const unit = requestUnit(requestId, subject);
  const begun = await begin(unit, input);
  const { ctx } = begun;
  const entries = ctx.policy.dataMapOf(subject);
  const keptByEntry = new Set<string>();
  const aboveKept = new Set<string>();
  for (const entry of entries.filter(keeps)) {
    for await (const d of discoverEntry(subject, entry)) {
      const path = d.snap.ref.path;
      if (keptByEntry.has(path)) continue;
      keptByEntry.add(path);
      for (const a of ancestorDocuments(path)) aboveKept.add(a);
      const kept = judgeDiscovered(discoveredFrom(d.snap, entry.id), entry, ctx.holds, ctx.policy, ctx.nowMs);
      if (!kept) throw new Error(`data-map entry ${entry.id} keeps ${path}, but the plan rules would delete it`);
      const record: RetainedRecord = {
        path,
        action: kept.action,
        reasonCode: kept.reasonCode,
        ...(kept.holdId ? { holdId: kept.holdId } : {}),
        ...(kept.deferredByHold ? { deferredByHold: true } : {}),
      };
      if (kept.action === "mask" || kept.action === "removeFromArray") {
        const version = versionOf(d.snap.updateTime);
        const change = kept.action === "mask" ? { fields: kept.fields ?? [] } : { fields: [], pull: kept.fields ?? [] };
        ctx.builder.mask({ path, ...change, ...(version ? { version } : {}) }, record);
      } else ctx.builder.retain(record);
      await ctx.sink.ready();
    }
  }
  const emit = emitter(ctx, aboveKept);
  // Paths an archive entry planned, and whether it kept them (a hold, a refusal): a delete entry reaching one
  // again leaves it to that decision, and keeps its ancestors when it was kept.
  const archivedByEntry = new Map<string, boolean>();
  const erasing = [...entries.filter((e) => e.action === "archive"), ...entries.filter((e) => e.action === "delete")];
  // An archive entry of a whole collection inside a recursive delete entry's tree is judged as that tree's stream
  // passes its documents, instead of in a pass of its own that reads each of them a second time.
  const inTrees = archivesInTrees(erasing, subjectVars(subject));
  const streamedByTree = new Set([...inTrees.values()].flatMap((m) => [...m.values()].map((e) => e.id)));
  for (const entry of erasing) {
    if (streamedByTree.has(entry.id)) continue;
    const archives = inTrees.get(entry.id);
    const keeper = new KeptBelow<Pending>(emit);
    for await (const d of discoverEntry(subject, entry)) {
      const path = d.snap.ref.path;
      const planned = archivedByEntry.get(path);
      if (planned !== undefined) {
        keeper.push(path, { kind: "refused" }, planned);
      } else {
        const by = archives?.get(path.slice(0, path.lastIndexOf("/"))) ?? entry;
        const p = judgeRequestDoc(d, by, keptByEntry, ctx);
        if (entry.action === "archive") archivedByEntry.set(path, p.kind !== "delete");
        keeper.push(path, p, p.kind !== "delete");
      }
      await ctx.sink.ready();
    }
    keeper.end();
  }
  await planObjects(subject, ctx);
  return finish(unit, input, begun);
}

/**
 * The subject's Cloud Storage objects (docs/STORAGE.md), after its documents: each object a storage entry lists,
 * judged by the plan rules (plan/rules.ts#judgeObject: a hold covering its heldWith document, a hold marker on it,
 * the entry's retain); the rest go into object batches with the generation decided on and their heldWith document.
 * An object two entries reach is decided once: the first entry that keeps it, else the first that deletes it.
 */
async function planObjects(subject: Subject, ctx: PlanContext): Promise<void> {
  const entries = ctx.policy.storageMapOf(subject);
  if (entries.length === 0) return;
  const decided = new Set<string>();
  for (const entry of [...entries.filter((e) => e.action === "retain"), ...entries.filter((e) => e.action === "delete")]) {
    for await (const { found } of discoverEntryObjects(subject, entry)) {
      if (decided.has(found.path)) continue;
      decided.add(found.path);
      const kept = judgeObject(found, entry, ctx.holds);
      if (kept) {
        ctx.builder.retain({ path: found.path, action: "retain", reasonCode: kept.reasonCode, ...(kept.holdId ? { holdId: kept.holdId } : {}), ...(kept.deferredByHold ? { deferredByHold: true } : {}) });
      } else {
        ctx.builder.object({ path: found.path, version: found.generation, heldWith: found.heldWith });
      }
      await ctx.sink.ready();
    }
  }
}

/** Judges one document of a delete entry. */
function judgeRequestDoc(d: DiscoveredSnapshot, entry: DataMapEntry, keptByEntry: ReadonlySet<string>, ctx: PlanContext): Pending {
  const path = d.snap.ref.path;
  if (keptByEntry.has(path)) return { kind: "refused" };
  const kept = judgeDiscovered(discoveredFrom(d.snap, entry.id), entry, ctx.holds, ctx.policy, ctx.nowMs);
  if (kept) {
    return {
      kind: "retain",
      record: { path, action: "retain", reasonCode: kept.reasonCode, ...(kept.holdId ? { holdId: kept.holdId } : {}), ...(kept.deferredByHold ? { deferredByHold: true } : {}) },
    };
  }
  const archived = archivedOnErasure(discoveredFrom(d.snap, entry.id), entry, ctx.nowMs) !== null;
  const ev = evaluateForPurge(factsOfData(path, d.snap.data()), { holds: ctx.holds, workflowEligible: true, policy: ctx.policy, nowMs: ctx.nowMs }, "pending", false, archived);
  switch (ev.verdict) {
    case "delete":
      return {
        kind: "delete",
        item: deleteItem(path, d.snap, d.root && entry.recursive === true, ctx.policy, ev.needsArchive, archived),
        retentionClass: ev.retentionClass,
        external: entry.external === true,
        recursive: entry.recursive === true,
      };
    case "held":
      // Found held only now: the hold defers its deletion.
      return { kind: "retain", record: heldRecord(path, ev.holdId, ev.reasonCode, true) };
    case "blocked":
      ctx.builder.block(path, ev.reason);
      return { kind: "refused" };
    case "gone":
      return { kind: "refused" };
  }
}

/**
 * Paths soft-deleted by a deletion request that is still open (requests/rules/requests.ts#isOpenRequest), or
 * being cancelled, are that request's to purge (or to restore), never the sweep's. Request states are read
 * once per request id.
 */
function openRequestOwner(): (data: DocumentData | undefined) => Promise<boolean> {
  const known = new Map<string, boolean>();
  return async (data) => {
    const id = typeof data?.deletionRequestId === "string" && data.deletionRequestId !== "" ? data.deletionRequestId : null;
    if (id === null) return false;
    let open = known.get(id);
    if (open === undefined) {
      const state = (await requestRef(id).get()).get("state") as unknown;
      open = isOpenRequest(state) || state === "CANCELLING";
      known.set(id, open);
    }
    return open;
  };
}

/**
 * A policy sweep's unit for one collection: documents whose retention has run out (or that a
 * retention-admin made PURGE_ELIGIBLE), up to `limit`, each with all its descendants, judged by the destroy
 * predicate without the workflow's authority. Paths it refuses stay, documented, and so do their ancestors;
 * a root an open request owns is left out with its whole subtree. Null when there is nothing to delete.
 */
export async function planSweepUnit(target: SweepTarget, limit: number, input: PlanInput): Promise<UnitPlan | null> {
  const col = db().collection(target.collection);
  const [due, decided] = await Promise.all([
    col.where(target.field, "<=", toTimestamp(input.nowMs)).orderBy(target.field).limit(limit).select().get(),
    col.where("lifecycleState", "==", "PURGE_ELIGIBLE").limit(limit).select().get(),
  ]);
  const candidates = [...new Set([...due.docs, ...decided.docs].map((d) => d.ref.path))].sort(compareNames);
  const unit = sweepUnit(target.collection);
  const begun = await begin(unit, input);
  const { ctx } = begun;
  const owned = openRequestOwner();
  const keeper = new KeptBelow<Pending>(emitter(ctx, new Set()));
  const judge = async (snap: DiscoveredSnapshot["snap"], root: boolean): Promise<void> => {
    const path = snap.ref.path;
    const data = snap.data();
    const facts: PurgeDocFacts = factsOfData(path, data);
    const ev = evaluateForPurge(facts, { holds: ctx.holds, workflowEligible: false, policy: ctx.policy, nowMs: ctx.nowMs }, "pending");
    let p: Pending;
    if (ev.verdict === "delete" && (await owned(data))) p = { kind: "retain", record: { path, action: "retain", reasonCode: "OPEN_DELETION_REQUEST" } };
    else if (ev.verdict === "delete") p = { kind: "delete", item: deleteItem(path, snap, root, ctx.policy, ev.needsArchive), retentionClass: ev.retentionClass, external: false, recursive: true };
    else if (ev.verdict === "held") p = { kind: "retain", record: heldRecord(path, ev.holdId, ev.reasonCode, false) };
    else if (ev.verdict === "blocked") p = { kind: "retain", record: { path, action: "retain", reasonCode: ev.reason } };
    else p = { kind: "refused" };
    keeper.push(path, p, p.kind !== "delete");
    await ctx.sink.ready();
  };
  for (const root of await readAll(candidates)) {
    if (!root.exists || (await owned(root.data()))) continue;
    await judge(root, true);
    for await (const d of streamGovernedDescendants(root.ref.path)) await judge(d, false);
  }
  keeper.end();
  const plan = await finish(unit, input, begun);
  return plan.counts.delete > 0 ? plan : null;
}

export type { StageLayout };
