import { FieldPath, type DocumentReference, type DocumentSnapshot } from "firebase-admin/firestore";
import type { DataMapEntry } from "../../kernel/policy-schema";
import pLimit from "p-limit";
import { ancestorDocuments, compareNames, isSameOrUnder, parentDocumentPath } from "../../kernel/paths";
import { BatchCutter, orderStages, stageKind, type PurgeItem, type StageLayout } from "../rules/batches";
import { evaluateForPurge } from "../rules/decide";
import { batchHash } from "../rules/manifest";
import { hasDeleteTrigger } from "../../ttl/rules";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { activeHolds, readFence } from "../../holds/index";
import { discoverEntryObjects, discoveredFrom, entryRoots, judgeObject, judgeUnplanned, KeptBelow, type Subject } from "../../plan/index";
import { db } from "../../platform/firestore";
import { streamGovernedDescendants } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { purgeSettings } from "../settings";
import { batchRef, checkpointRef, factsOfData, readAll, type BatchDoc, type UnitCheckpoint } from "../store";
import { fire, purgeEvidence, type StepEnv } from "./env";
import { fencedRecordSink, versionOf } from "./records";
import { fenceStep, writeCheckpoint, type Steps } from "./step";
import { readBatches, roundBatches, roundRetained, type RoundFacts } from "./verify";

/** How many stranded or unplanned late finds a round lists (each one is a verification finding; one is enough to block). */
const FINDS_LISTED = 100;

/** What the late sweep leaves for a deletion request's verification: each path is a finding that blocks the request. */
export interface LateFindings {
  /** Refused under a parent that is gone (LATE_FIND_STRANDED). */
  stranded: string[];
  /** Reached by an erasing entry of the data map outside the round's decisions (LATE_FIND_UNPLANNED). */
  unplanned: string[];
}

/**
 * The final sweep (docs/PURGE-ENGINE.md, "Late finds"). Once every stage has run, the purge looks again
 * under each recursive root it deleted or deferred (something was still under it). Whatever is there and is not a documented survivor of the plan (retained, held, refused) was
 * created while the purge ran, or is what kept a parent back. It is judged by the destroy predicate like
 * planned data, written down in late batch records (the decision, each record written in a transaction fenced
 * like every step of the round), and deleted children first with the same
 * batch transaction as the rest, so the purge never leaves a child orphaned under a parent it deleted. The
 * deferred parents are decided again with them. What the predicate refuses now stays, with its ancestors; one
 * whose parent is gone (created under it after the parent's batch probed, before that batch committed) is listed in
 * `stranded`, and a deletion request's verification then refuses to call the erasure complete.
 *
 * A deletion request's data map is asked again too (`dataMapAgain`): a document one of its erasing entries reaches
 * outside every root the sweep looks under, which the round did not decide about, was created (or created again)
 * after the plan by a server-side writer. One that non-recursive delete entries alone reach, and none keeps, is
 * decided and deleted like a late find (plan/rules.ts#judgeUnplanned). Any other, one the predicate refuses, and
 * anything new under a recursive `doc` entry whose document is missing, is listed in `unplanned` and left as it is:
 * verification refuses to call the erasure complete, and the next run plans the request again with it.
 *
 * A deletion request's Cloud Storage objects are listed again the same way (everything under a storage entry is
 * the erasure's): an object the round has not decided about (a new name, or a new generation of a name, uploaded
 * while the purge ran, which the window's generation-checked delete reported `changed`) is decided now, held or
 * kept as the plan would, else written into a late object batch and deleted in its own delete window.
 *
 * `facts` notes every record of the round as it stands once the sweep is over (the records it read, then the late
 * batches it ran), for verification (verify.ts#RoundFacts).
 */
export async function lateSweep(cp: UnitCheckpoint, step: number, env: StepEnv, steps: Pick<Steps, "delete" | "objects">, facts: RoundFacts, findings: LateFindings): Promise<UnitCheckpoint | null> {
  await fire(env, { point: "beforeLate", unitKey: cp.unitKey, round: cp.round, step, batch: null, paths: [] });
  const { roots, expected, decidedObjects, deferred } = await survivorsAndRoots(cp, facts);
  const again = cp.kind === "request" && cp.subject ? await dataMapAgain(cp.subject, roots, (path) => expected.has(path) || deferred.has(path)) : { finds: new Map<string, Reached>(), trees: [] as string[] };
  const { stranded, unplanned } = findings;
  const listFull = (): boolean => unplanned.length >= FINDS_LISTED;
  const listUnplanned = (path: string): void => {
    if (!listFull() && !unplanned.includes(path)) unplanned.push(path);
  };
  const storage = cp.kind === "request" && cp.subject ? policy().storageMapOf(cp.subject) : [];
  if (roots.length === 0 && storage.length === 0 && again.finds.size === 0 && again.trees.length === 0) return cp;
  const fenceGeneration = await readFence();
  const holds = await activeHolds();
  const pol = policy();
  const ctx = { holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
  // Late records are written while the round runs: under its fence, so a runner that lost the lease (or
  // whose step another attempt finished) adds no decision to the plan.
  const sink = fencedRecordSink(cp.unitKey, cp.planId, cp.round, async (tx) => (await fenceStep(tx, cp, env, step)) !== null);
  const decision = { fenceGeneration, policyVersion: pol.version, decidedAtMs: env.nowMs };
  const cutter = new BatchCutter(
    purgeSettings.batchSize(),
    (b) => sink.batch({ ...b, hash: batchHash({ unitKey: cp.unitKey, planId: cp.planId, stage: b.stage, seq: b.seq, items: b.items }), decision }),
    await lateRecordsSoFar(cp),
  );
  let found = 0;
  let refused = 0;
  // Finds of the data map (outside the round's roots) decided for deletion here.
  let fromDataMap = 0;
  type Pending = { item: PurgeItem; outsideRound: boolean } | null;
  const keeper = new KeptBelow<Pending>((p, keptBelow) => {
    if (p === null) return;
    if (keptBelow) {
      refused++;
      return;
    }
    found++;
    if (p.outsideRound) fromDataMap++;
    cutter.add("late", p.item);
  });
  // The documents of the scan that lead to the current one (name order: a parent comes before its children), to
  // tell whether a late find's parent is still there.
  const chain: string[] = [];
  const parentPresent = (path: string): boolean => {
    while (chain.length > 0 && !path.startsWith(`${chain[chain.length - 1]!}/`)) chain.pop();
    const parent = parentDocumentPath(path);
    const present = parent !== null && chain[chain.length - 1] === parent;
    chain.push(path);
    return present;
  };
  // Refusals under a root the data map reached outside the round block the request: no planned item documents them.
  let outsideRound = false;
  const visit = (path: string, data: Record<string, unknown> | undefined, version: string | undefined, root = false): void => {
    // A root is judged as it is, whatever its own parent: only what lies under it can be stranded.
    const underParent = root || parentPresent(path);
    if (expected.has(path) || data === undefined) {
      keeper.push(path, null, true);
      return;
    }
    const ev = evaluateForPurge(factsOfData(path, data), ctx, "pending");
    if (ev.verdict !== "delete" || ev.needsArchive) {
      refused++;
      // Refused under a parent that is gone: created after its parent's batch probed, before that batch committed.
      if (!underParent && stranded.length < FINDS_LISTED) stranded.push(path);
      else if (outsideRound) listUnplanned(path);
      keeper.push(path, null, true);
      return;
    }
    const item: PurgeItem = { path, ...(version ? { version } : {}), ...(hasDeleteTrigger(pol, path) ? { mark: true as const } : {}) };
    keeper.push(path, { item, outsideRound }, false);
  };
  const walk: SweepRoot[] = (await readAll(roots)).map((snap) => ({ snap, outsideRound: false }));
  for (const [path, r] of [...again.finds].sort(([a], [b]) => compareNames(a, b))) {
    if (judgeUnplanned(discoveredFrom(r.snap, r.entries[0]!.id), r.entries, holds, pol, env.nowMs) === "replan") listUnplanned(path);
    else walk.push({ snap: r.snap, outsideRound: true });
  }
  // Under a recursive `doc` entry's missing document nothing is deleted here: what is new there waits for the next
  // plan, which judges it against every entry of the data map.
  for (const tree of again.trees) {
    if (listFull()) break;
    for await (const d of streamGovernedDescendants(tree)) {
      if (!expected.has(d.ref.path) && !deferred.has(d.ref.path)) listUnplanned(d.ref.path);
      if (listFull()) break;
    }
  }
  for (const root of walk) {
    chain.length = 0;
    outsideRound = root.outsideRound;
    if (root.snap.exists) {
      visit(root.snap.ref.path, root.snap.data(), versionOf(root.snap.updateTime), true);
      chain.push(root.snap.ref.path);
    }
    // A data-map find is judged alone: what is under it is not its non-recursive entry's (the batch's probe defers it).
    if (root.outsideRound) continue;
    for await (const d of streamGovernedDescendants(root.snap.ref.path)) {
      visit(d.ref.path, d.data(), versionOf(d.updateTime));
      await sink.ready();
    }
  }
  keeper.end();
  // The subject's objects, listed again: what the round has not decided about is decided now.
  for (const entry of storage) {
    for await (const { object, found: o } of discoverEntryObjects(cp.subject!, entry)) {
      if (expected.has(o.path) || decidedObjects.get(o.path)?.has(object.generation)) continue;
      if (judgeObject(o, entry, holds) !== null) {
        refused++;
        continue;
      }
      found++;
      cutter.add("late-objects", { path: o.path, version: o.generation, heldWith: o.heldWith });
      await sink.ready();
    }
  }
  const layout = cutter.end();
  await sink.close();
  if (sink.stale) return null;
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
        counts: { found, refused, batches: added, roots: roots.length, fromDataMap },
        detail: { decidedGeneration: fenceGeneration },
      }),
    );
    return true;
  }, EVIDENCE_TX);
  if (!ok) return null;
  for await (const b of readBatches(await runLate(next, cp.late, step, env, steps))) facts.note(b);
  return next;
}

/**
 * The late stages as far as records exist: the checkpoint's late layout, extended by records an earlier
 * attempt of this step wrote before it crashed (never run: a late batch runs only once the layout naming it
 * has committed). New records are numbered after them, so a record is never written twice (records are
 * created, never overwritten), and the leftovers, real decisions of this plan, run with the new ones.
 */
async function lateRecordsSoFar(cp: UnitCheckpoint): Promise<StageLayout[]> {
  const counts = new Map(cp.late.map((s) => [s.key, s.batches]));
  const prefix = `${cp.planId}-late-`;
  const records = checkpointRef(cp.unitKey).collection("batches");
  const snap = await records
    .where(FieldPath.documentId(), ">=", records.doc(prefix))
    .where(FieldPath.documentId(), "<", records.doc(`${prefix}\uf8ff`))
    .select("stage", "seq")
    .get();
  for (const d of snap.docs) {
    const stage = d.get("stage") as string;
    counts.set(stage, Math.max(counts.get(stage) ?? 0, (d.get("seq") as number) + 1));
  }
  return orderStages([...counts].map(([key, batches]) => ({ key, kind: stageKind(key), batches })));
}

/**
 * Runs the late batches added since `before`, stage by stage (children first), several at a time. Returns their
 * records' references.
 */
async function runLate(cp: UnitCheckpoint, before: readonly StageLayout[], step: number, env: StepEnv, steps: Pick<Steps, "delete" | "objects">): Promise<DocumentReference[]> {
  const had = new Map(before.map((s) => [s.key, s.batches]));
  let ordinal = [...cp.layout, ...before].reduce((n, s) => n + s.batches, 0);
  const limit = pLimit(env.parallelBatches);
  const ran: DocumentReference[] = [];
  for (const s of orderStages(cp.late)) {
    const from = had.get(s.key) ?? 0;
    const seqs = Array.from({ length: s.batches - from }, (_, k) => from + k);
    const base = ordinal;
    ordinal += seqs.length;
    const run = stageKind(s.key) === "objects" ? steps.objects : steps.delete;
    const refs = seqs.map((seq) => batchRef(cp.unitKey, cp.planId, s.key, seq));
    const results = await Promise.allSettled(refs.map((ref, k) => limit(() => run(cp, { step, ref, ordinal: base + k }, env))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    ran.push(...refs);
  }
  return ran;
}

/**
 * What the plan expects to survive (retained records; paths its batches recorded as held or refused) and
 * where to look again: every recursive root the round deleted or deferred, outermost only (a scan covers
 * everything under its root). Each record read is noted in `facts`.
 */
async function survivorsAndRoots(cp: UnitCheckpoint, facts: RoundFacts): Promise<{ roots: string[]; expected: Set<string>; decidedObjects: Map<string, Set<string>>; deferred: Set<string> }> {
  const expected = new Set<string>();
  const deferred = new Set<string>();
  for await (const r of roundRetained(cp)) expected.add(r.path);
  const candidates: string[] = [];
  const decidedObjects = new Map<string, Set<string>>();
  for await (const b of roundBatches(cp)) {
    facts.note(b);
    if (b.kind === "objects") {
      for (const h of b.outcome.held) expected.add(h.path);
      // Each object with the generation a decision of this round was about: listed again, it is not a late find.
      for (const i of b.items) decidedObjects.set(i.path, (decidedObjects.get(i.path) ?? new Set<string>()).add(i.version ?? ""));
      continue;
    }
    noteBatch(b, expected, candidates);
    for (const p of b.outcome.deferred) deferred.add(p);
  }
  const roots: string[] = [];
  for (const p of candidates.sort(compareNames)) {
    const last = roots[roots.length - 1];
    if (last === undefined || !isSameOrUnder(p, last)) roots.push(p);
  }
  return { roots, expected, decidedObjects, deferred };
}

/** A root the final sweep walks: a recursive root of the round, or a document the request's data map reaches again. */
interface SweepRoot {
  snap: DocumentSnapshot;
  /**
   * False: a recursive root of the round, walked with its descendants. True: a document the data map reaches outside
   * the round's decisions, judged alone; a refusal of it blocks the request.
   */
  outsideRound: boolean;
}

/** A document the data map reaches again, with every entry that reaches it. */
interface Reached {
  snap: DocumentSnapshot;
  entries: DataMapEntry[];
}

/**
 * A request's data map asked again at its finalize (each entry's document, or its query's results: one read or one
 * query per entry, all at once), for what the round did not decide about outside the roots the sweep walks
 * (`decided`: retained, held, refused, deferred). `finds`: the documents erasing entries reach, with every entry that
 * reaches them (keep entries are asked only when there are finds: what they reach wins, as in the plan). The round
 * deleted every other document those entries reached, so one still there was written after the plan. Everything under
 * a recursive entry's document is that entry's too, as the plan judges it: a find under one (kept, missing, of a keep
 * entry or an erasing one) is reached by that entry as well. `trees`: the path of a recursive erasing `doc` entry's
 * missing document, whose subtree is the erasure's all the same.
 */
async function dataMapAgain(subject: Subject, roots: readonly string[], decided: (path: string) => boolean): Promise<{ finds: Map<string, Reached>; trees: string[] }> {
  const under = new Set(roots);
  const covered = (path: string): boolean => under.has(path) || ancestorDocuments(path).some((a) => under.has(a));
  const entries = policy().dataMapOf(subject);
  const erasing = entries.filter((e) => e.action === "delete" || e.action === "archive");
  const finds = new Map<string, Reached>();
  const trees = new Map<string, DataMapEntry>();
  const recursiveRoots = new Map<string, DataMapEntry[]>();
  const reach = async (entry: DataMapEntry, onlyFound: boolean): Promise<void> => {
    for await (const snap of entryRoots(subject, entry)) {
      const path = snap.ref.path;
      if (covered(path)) continue;
      if (entry.recursive === true) recursiveRoots.set(path, [...(recursiveRoots.get(path) ?? []), entry]);
      if (!snap.exists) {
        if (!onlyFound && entry.kind === "doc" && entry.recursive === true) trees.set(path, entry);
        continue;
      }
      if (decided(path)) continue;
      const r = finds.get(path);
      if (r) r.entries.push(entry);
      else if (!onlyFound) finds.set(path, { snap, entries: [entry] });
    }
  };
  await Promise.all(erasing.map((e) => reach(e, false)));
  if (finds.size > 0) await Promise.all(entries.filter((e) => !erasing.includes(e)).map((e) => reach(e, true)));
  for (const [path, r] of finds) for (const a of ancestorDocuments(path)) r.entries.push(...(recursiveRoots.get(a) ?? []));
  return { finds, trees: [...trees.keys()].sort(compareNames) };
}

function noteBatch(b: BatchDoc, expected: Set<string>, roots: string[]): void {
  if (b.kind !== "delete") return;
  for (const h of b.outcome.held) expected.add(h.path);
  for (const x of b.outcome.blocked) expected.add(x.path);
  // Only recursive roots: everything under one is the erasure's. A non-recursive parent that was deferred
  // stays deferred (what is under it is not the erasure's to delete), and verification reports it.
  const settled = new Set([...b.outcome.deleted, ...b.outcome.deferred]);
  for (const item of b.items) if (item.root && settled.has(item.path)) roots.push(item.path);
}
