import { sealPlaintextArchives } from "../shred/index";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { FieldPath, type DocumentReference, type DocumentSnapshot, type Query, type QueryDocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import { backfillPhases, planBackfillFix, type BackfillDocFacts, type BackfillFix, type BackfillPhase } from "./rules";
import type { ActiveHoldRef } from "../kernel/held";
import type { EvidenceBody } from "../evidence/rules";
import { matchPattern, parentDocumentPath } from "../kernel/paths";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs, toTimestamp, GOVERNED_FIELDS } from "../platform/governed-doc";
import { readFenceInTx, activeHolds, activeHoldsCoveringInTx } from "../holds/index";
import { log } from "../platform/logs";
import { emitMetric } from "../platform/metrics";
import { policy } from "../platform/registry";
import type { JobOptions, JobSummary } from "../kernel/job";

/** The checkpoint document: `retentionJobs/expiryBackfill`. */
export const BACKFILL_JOB_DOC = "expiryBackfill";
const checkpointRef = () => db().collection(COLLECTIONS.retentionJobs).doc(BACKFILL_JOB_DOC);
export const BACKFILL_DEFAULTS = { maxDocs: 2_000, maxSeconds: 45, pageSize: 100 } as const;
/** Only the retention fields are read: the backfill never needs business content. */

export interface ExpiryBackfillOptions extends JobOptions {
  /** Documents scanned by this run before it stops and saves its cursor. */
  maxDocs?: number;
  /** Wall-clock seconds this run may start new pages for. */
  maxSeconds?: number;
  pageSize?: number;
  /** The clock the time budget is measured on (tests make it deterministic). */
  clock?: () => number;
}

interface Counts {
  scanned: number;
  expireAtSet: number;
  inheritedSet: number;
  orphansDeleted: number;
  heldSkipped: number;
  noAnchor: number;
}

const zero = (): Counts => ({ scanned: 0, expireAtSet: 0, inheritedSet: 0, orphansDeleted: 0, heldSkipped: 0, noAnchor: 0 });
const add = (a: Counts, b: Counts): Counts => ({
  scanned: a.scanned + b.scanned,
  expireAtSet: a.expireAtSet + b.expireAtSet,
  inheritedSet: a.inheritedSet + b.inheritedSet,
  orphansDeleted: a.orphansDeleted + b.orphansDeleted,
  heldSkipped: a.heldSkipped + b.heldSkipped,
  noAnchor: a.noAnchor + b.noAnchor,
});

interface Cursor {
  /** The phase's collection pattern; null before the first page of a pass. */
  phase: string | null;
  /** The last document path scanned in that phase. */
  after: string | null;
}

interface Checkpoint extends Cursor {
  passId: string;
  done: boolean;
  passCounts: Counts;
}

type StopReason = "PASS_COMPLETE" | "MAX_DOCS" | "MAX_SECONDS" | "PASS_MOVED";

/**
 * The expiry backfill: sets missing TTL values from policy, copies a living parent's expiry onto children
 * that lack it, and deletes children whose parent is gone. One pass walks the TTL collections in a fixed
 * order (parents before children, document-id order within each).
 *
 * Each page is one transaction that re-reads the page, plans it, writes the fixes, appends evidence and
 * moves the cursor in `retentionJobs/expiryBackfill` together: a crash loses at most an uncommitted page,
 * and the next run resumes exactly after the last committed one. Every page starts from the cursor it reads
 * in its own transaction, so two overlapping runs interleave pages instead of repeating them.
 * A run stops within its budget (documents scanned, seconds); a pass that is complete is followed by a
 * fresh pass on the next run. Idempotent: a fixed document plans nothing the next time. A dry run reads the
 * same pages from the saved cursor and writes nothing, not even the cursor.
 */
export async function runExpiryBackfill(opts: ExpiryBackfillOptions): Promise<JobSummary> {
  const maxDocs = opts.maxDocs ?? BACKFILL_DEFAULTS.maxDocs;
  const maxSeconds = opts.maxSeconds ?? BACKFILL_DEFAULTS.maxSeconds;
  const pageSize = opts.pageSize ?? BACKFILL_DEFAULTS.pageSize;
  const clock = opts.clock ?? Date.now;
  const startedMs = clock();
  const phases = backfillPhases(policy());
  // A dry run cannot check hold records in a writing transaction, so it checks them all up front.
  const dryHolds = opts.dryRun ? await activeHolds() : null;
  // Metrics come from real runs only: a dry run changes nothing, and an asOf run describes a fictional now.
  const live = !opts.dryRun && opts.asOfMs === null;

  let run = zero();
  let pages = 0;
  let resumed = false;
  let passId: string | null = null;
  let dryCursor: Checkpoint | null = null;
  let stop: StopReason | null = null;
  let last: Checkpoint | null = null;

  while (stop === null) {
    if (run.scanned >= maxDocs) stop = "MAX_DOCS";
    else if (clock() - startedMs >= maxSeconds * 1000) stop = "MAX_SECONDS";
    if (stop) break;
    const limit = Math.min(pageSize, maxDocs - run.scanned);

    // Runs once per transaction attempt: nothing outside changes until the page has committed.
    const step = async (read: Reader, tx: Transaction | null): Promise<PageOutcome> => {
      const stored = dryCursor ?? ((await read.doc(checkpointRef())).data() as Checkpoint | undefined) ?? null;
      if (passId === null) {
        const resuming = stored !== null && !stored.done;
        const cp = resuming ? stored : { passId: new Date(opts.nowMs).toISOString(), phase: null, after: null, done: false, passCounts: zero() };
        return { ...(await processPage(read, tx, phases, cp, limit, opts, dryHolds)), resuming };
      }
      // Another run finished this pass or started a new one since our last page: leave the cursor to it.
      if (!stored || stored.passId !== passId || stored.done) return { kind: "moved" };
      return { ...(await processPage(read, tx, phases, stored, limit, opts, dryHolds)), resuming: resumed };
    };

    let outcome: PageOutcome;
    try {
      outcome = opts.dryRun ? await step(plainReader(), null) : await db().runTransaction((tx) => step(txReader(tx), tx), EVIDENCE_TX);
    } catch (err) {
      if (live) emitMetric("retention.backfill_errors", 1);
      throw err;
    }
    if (outcome.kind === "moved") {
      stop = "PASS_MOVED";
      break;
    }
    if (passId === null) resumed = outcome.resuming;
    passId = outcome.next.passId;
    pages++;
    run = add(run, outcome.counts);
    last = outcome.next;
    if (opts.dryRun) dryCursor = outcome.next;
    log.info("backfill.batch.done", { ...outcome.counts, phase: outcome.next.phase, done: outcome.next.done, dryRun: opts.dryRun });
    if (outcome.next.done) stop = "PASS_COMPLETE";
  }

  // Archive copies still in the clear are sealed (decision 0038), within what is left of the run's document budget.
  const archiveSeal = run.scanned < maxDocs && clock() - startedMs < maxSeconds * 1000
    ? await sealPlaintextArchives({ nowMs: opts.nowMs, actor: opts.actor, dryRun: opts.dryRun, correlationId: opts.correlationId ?? null, maxDocs: maxDocs - run.scanned, pageSize })
    : null;

  const summary: JobSummary = {
    job: "expiryBackfill",
    archiveSeal,
    dryRun: opts.dryRun,
    asOf: opts.asOfMs === null ? null : new Date(opts.asOfMs).toISOString(),
    ...run,
    done: stop === "PASS_COMPLETE",
    stoppedBy: stop,
    resumed,
    pages,
    passId,
    cursor: last ? { phase: last.phase, after: last.after } : null,
    pass: last?.passCounts ?? null,
  };
  log.info("backfill.done", { ...run, done: stop === "PASS_COMPLETE", stoppedBy: stop, pages, dryRun: opts.dryRun });
  // How far the current pass has come (documents scanned since it started), once per run.
  if (live && last) emitMetric("retention.backfill_checkpoint", last.passCounts.scanned, { done: String(last.done) });
  return summary;
}

type PageOutcome = { kind: "moved" } | { kind: "page"; counts: Counts; next: Checkpoint; resuming: boolean };

interface Reader {
  doc(ref: DocumentReference): Promise<DocumentSnapshot>;
  docs(refs: DocumentReference[], fields: string[]): Promise<DocumentSnapshot[]>;
  query(q: Query): Promise<QueryDocumentSnapshot[]>;
}

const txReader = (tx: Transaction): Reader => ({
  doc: (ref) => tx.get(ref),
  docs: (refs, fields) => (refs.length ? tx.getAll(...refs, { fieldMask: fields }) : Promise.resolve([])),
  query: async (q) => (await tx.get(q)).docs,
});

const plainReader = (): Reader => ({
  doc: (ref) => ref.get(),
  docs: (refs, fields) => (refs.length ? db().getAll(...refs, { fieldMask: fields }) : Promise.resolve([])),
  query: async (q) => (await q.get()).docs,
});

function facts(snap: DocumentSnapshot, anchorField: string): BackfillDocFacts {
  const anchor = toMs(snap.get(anchorField)) ?? (snap.createTime ? snap.createTime.toMillis() : null);
  return {
    path: snap.ref.path,
    legalHold: snap.get("legalHold") === true,
    lifecycleState: typeof snap.get("lifecycleState") === "string" ? (snap.get("lifecycleState") as string) : null,
    expireAtMs: toMs(snap.get("expireAt")),
    anchorMs: anchor,
  };
}

/** Reads, plans and (unless dry) writes one page; returns the counts and the cursor after it. */
async function processPage(
  read: Reader,
  tx: Transaction | null,
  phases: BackfillPhase[],
  cp: Checkpoint,
  limit: number,
  opts: ExpiryBackfillOptions,
  dryHolds: ActiveHoldRef[] | null,
): Promise<{ kind: "page"; counts: Counts; next: Checkpoint }> {
  const pol = policy();
  let phaseIndex = cp.phase === null ? 0 : phases.findIndex((p) => p.pattern === cp.phase);
  // A registry change that dropped the phase restarts the walk of the pass from its first phase.
  let after = phaseIndex < 0 ? null : cp.after;
  if (phaseIndex < 0) phaseIndex = 0;
  const phase = phases[phaseIndex];
  if (!phase) return { kind: "page", counts: zero(), next: { ...cp, phase: null, after: null, done: true } };

  // The hold fence (holds/fence.ts): a hold placed while this page is decided cannot land unseen.
  if (tx) await readFenceInTx(tx);
  const base = phase.topLevel ? db().collection(phase.collectionId) : db().collectionGroup(phase.collectionId);
  let q = base.select(...new Set([...GOVERNED_FIELDS, phase.anchorField])).orderBy(FieldPath.documentId()).limit(limit);
  if (after !== null) q = q.startAfter(db().doc(after));
  const scanned = await read.query(q);
  // A collection group also returns same-named collections elsewhere; only the phase's pattern is governed here.
  const docs = scanned.filter((d) => matchPattern(phase.pattern, d.ref.path) !== null);

  const parents = new Map<string, BackfillDocFacts | null>();
  if (phase.inherits) {
    const refs = [...new Set(docs.map((d) => parentDocumentPath(d.ref.path)).filter((p): p is string => p !== null))].map((p) => db().doc(p));
    const parentAnchor = (path: string) => pol.ruleForPath(path)?.anchorField ?? "createdAt";
    const mask = [...new Set([...GOVERNED_FIELDS, ...refs.map((r) => parentAnchor(r.path))])];
    for (const s of await read.docs(refs, mask)) parents.set(s.ref.path, s.exists ? facts(s, parentAnchor(s.ref.path)) : null);
  }

  const counts = { ...zero(), scanned: scanned.length };
  const changes: { ref: DocumentReference; fix: BackfillFix }[] = [];
  for (const d of docs) {
    const f = facts(d, phase.anchorField);
    const parentPath = parentDocumentPath(d.ref.path);
    const parent = phase.inherits && parentPath ? (parents.get(parentPath) ?? null) : undefined;
    let fix = planBackfillFix(f, parent, pol, dryHolds ?? []);
    if (fix.kind !== "NONE" && tx) {
      // Hold records are checked in the same transaction that writes: a hold on the document or an ancestor
      // (a subtree hold also covers documents created after it) means no TTL value and no delete.
      const holds: ActiveHoldRef[] = await activeHoldsCoveringInTx(tx, d.ref.path);
      if (holds.length > 0) fix = planBackfillFix(f, parent, pol, holds);
    }
    if (fix.kind === "NONE") {
      if (fix.reason === "HELD" || fix.reason === "ORPHAN_HELD") counts.heldSkipped++;
      if (fix.reason === "ORPHAN_HELD") log.warn("backfill.orphan.kept_held", { path: d.ref.path });
      if (fix.reason === "NO_ANCHOR") counts.noAnchor++;
      continue;
    }
    if (fix.kind === "SET_EXPIRE_AT") counts.expireAtSet++;
    if (fix.kind === "INHERIT_EXPIRE_AT") counts.inheritedSet++;
    if (fix.kind === "DELETE_ORPHAN") counts.orphansDeleted++;
    changes.push({ ref: d.ref, fix });
  }

  const endOfPhase = scanned.length < limit;
  const nextPhase = endOfPhase ? phases[phaseIndex + 1] : phase;
  after = endOfPhase ? null : scanned[scanned.length - 1]!.ref.path;
  const next: Checkpoint = {
    passId: cp.passId,
    phase: nextPhase ? nextPhase.pattern : null,
    after: nextPhase ? after : null,
    done: nextPhase === undefined,
    passCounts: add(cp.passCounts, counts),
  };
  if (!tx) return { kind: "page", counts, next };

  const evidence = changes.length > 0 ? await openEvidence(tx, changes[0]!.ref.path) : null;
  for (const { ref, fix } of changes) {
    if (fix.kind === "DELETE_ORPHAN") tx.delete(ref);
    else if (fix.kind !== "NONE") tx.update(ref, { expireAt: toTimestamp(fix.expireAtMs) });
  }
  for (const body of evidenceFor(changes, opts, pol.version)) evidence?.append(body);
  tx.set(checkpointRef(), { ...next, updatedAt: toTimestamp(opts.nowMs) });
  return { kind: "page", counts, next };
}

/** One entry for the TTL values set on a page and one for the orphans deleted: paths, counts, no content. */
function evidenceFor(changes: { ref: DocumentReference; fix: BackfillFix }[], opts: ExpiryBackfillOptions, policyVersion: string): EvidenceBody[] {
  const common = {
    actor: opts.actor,
    policyVersion,
    atMs: opts.nowMs,
    correlationId: opts.correlationId ?? null,
    asOfMs: opts.asOfMs,
  };
  const set = changes.filter((c) => c.fix.kind === "SET_EXPIRE_AT" || c.fix.kind === "INHERIT_EXPIRE_AT");
  const orphans = changes.filter((c) => c.fix.kind === "DELETE_ORPHAN");
  const out: EvidenceBody[] = [];
  if (set.length > 0) {
    out.push({
      ...common,
      action: "EXPIRY_BACKFILL",
      decision: { reason: "TTL_VALUE_FROM_POLICY" },
      paths: set.map((c) => c.ref.path),
      counts: {
        expireAtSet: set.filter((c) => c.fix.kind === "SET_EXPIRE_AT").length,
        inheritedSet: set.filter((c) => c.fix.kind === "INHERIT_EXPIRE_AT").length,
      },
    });
  }
  if (orphans.length > 0) {
    out.push({
      ...common,
      action: "ORPHAN_DELETE",
      decision: { reason: "PARENT_GONE" },
      paths: orphans.map((c) => c.ref.path),
      counts: { orphansDeleted: orphans.length },
    });
  }
  return out;
}
