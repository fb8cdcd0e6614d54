import { FieldPath, FieldValue, Timestamp, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import type { JobOptions } from "../kernel/job";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs, toTimestamp } from "../platform/governed-doc";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { parseRequestState } from "../requests/rules/requests";
import { cellsOfRecord, requestCells } from "../requests/index";
import { PRIMARY_CELL } from "../kernel/policy";
import { storageSettings } from "../platform/storage";
import { completionDecision, purgedGoneBy, recoveryWindowMs, withExportsExpiry, withProcessorsDeadline, type CompletionDecision } from "../requests/rules/gone-by";
import { archiveCopiesOf, archiveCopyLeftInTx } from "./runner/archive";
import { goneByFields } from "./runner/finalize";
import { purgeSettings } from "./settings";
import { noticesOfRequest, openProcessors, processorsDeadlineMs } from "../processors/index";
import { requestRef } from "./store";

/**
 * The last word on an erasure: once a PURGED request's "fully gone by" date has passed, one ERASURE_COMPLETE
 * evidence entry, and the request's `erasureComplete`/`erasureCompleteAt`. Run by the nightly purge's job after
 * the purge itself (jobs/nightly-purge.ts).
 *
 * Paged and idempotent: the query (index: erasureComplete, fullyGoneBy) finds requests whose date has passed and
 * whose flag is still false, a page at a time in date order; each is decided in a transaction of its own that
 * reads the request again (completionDecision), so two runs at once, a retried run or a crash between pages record
 * each request once. A request with an archive copy still in the database waits (and is counted): its date moves
 * to a recovery window from now, and it is looked at again once that has passed.
 */

const PAGE = 100;
/** Requests one run records at most; the rest are next night's (each is one small transaction and one evidence entry). */
const MAX_PER_RUN = 2_000;
const SYSTEM: Actor = { type: "system", id: "nightlyPurge" };

export interface CompletionOptions extends Pick<JobOptions, "nowMs" | "asOfMs" | "dryRun" | "actor" | "correlationId"> {
  pageSize?: number;
  maxRequests?: number;
}

export interface CompletionSummary {
  /** Requests whose date had passed, looked at by this run. */
  due: number;
  /** ERASURE_COMPLETE entries this run wrote (a dry run: would write). */
  recorded: number;
  /** Due, but an archive copy of the erasure is still in the database. */
  waitingForArchive: number;
  /** Recorded meanwhile by another run (or no longer due). */
  skipped: number;
}

/** A run's summary where a request across several databases waited: due, but another cell has not recorded its own yet. */
export type CompletionAcrossCells = CompletionSummary & { waitingForCells?: number };

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Decides one request in its own transaction, and records ERASURE_COMPLETE when it is due. */
async function completeOne(requestId: string, opts: CompletionOptions): Promise<CompletionDecision> {
  return db().runTransaction(async (tx) => {
    const ref = requestRef(requestId);
    const snap = await tx.get(ref);
    const fullyGoneByMs = toMs(snap.get("fullyGoneBy"));
    const state = parseRequestState(snap.get("state"));
    const erasureComplete = snap.get("erasureComplete") as unknown;
    // The archive read only matters for a request otherwise due; the others are decided without it.
    const early = completionDecision({ state, erasureComplete, fullyGoneByMs, archiveCopiesLeft: false }, opts.nowMs);
    if (early !== "RECORD") return early;
    // A request of record across several databases waits for every other cell's ERASURE_COMPLETE. Those are read
    // outside this transaction (another database): a cell read as not complete only delays this entry to a later
    // night, and a cell's erasureComplete, once true, is never unset.
    const cells = cellsOfRecord(snap.data()).length > 0 ? (await requestCells(requestId, snap.data()!)).filter((c) => c.cell !== PRIMARY_CELL) : null;
    const cellsComplete = cells === null ? undefined : cells.every((c) => c.erasureComplete);
    const decision = completionDecision({ state, erasureComplete, fullyGoneByMs, archiveCopiesLeft: await archiveCopyLeftInTx(tx, requestId), cellsComplete }, opts.nowMs);
    if (decision === "ARCHIVE_COPY_LEFT" && !opts.dryRun) {
      // A copy outlived the date (held after it was computed, or not swept yet): its own backups last a recovery
      // window past its going, so the date moves to at least now plus that window, never earlier. That also takes
      // the request out of the due pages until then, so waiting requests cannot crowd out the others.
      const later = Math.max(fullyGoneByMs ?? 0, opts.nowMs + recoveryWindowMs(purgeSettings.recoveryWindows()));
      tx.update(ref, {
        fullyGoneBy: toTimestamp(later),
        timeline: FieldValue.arrayUnion({ at: toTimestamp(opts.nowMs), event: "FULLY_GONE_BY_MOVED", detail: `an archive copy is still kept: fully gone by ${iso(later)}` }),
      });
    }
    if (decision !== "RECORD" || opts.dryRun) return decision;
    // The processors the erasure notified: the date waited for their deadlines; the entry names those still open.
    const notices = policy().registry.processors.length > 0 ? await noticesOfRequest(requestId, tx) : [];
    const open = openProcessors(notices, opts.nowMs);
    const evidence = await openEvidence(tx, requestId);
    const at = toTimestamp(opts.nowMs);
    const basis = (snap.get("fullyGoneByBasis") ?? {}) as Record<string, unknown>;
    tx.update(ref, {
      erasureComplete: true,
      erasureCompleteAt: at,
      timeline: FieldValue.arrayUnion({ at, event: "ERASURE_COMPLETE", detail: `fully gone by ${iso(fullyGoneByMs)}${open.length > 0 ? `; processors still open: ${open.join(", ")}` : ""}` }),
      ...(notices.length > 0 ? { processorsOpenAtCompletion: open } : {}),
    });
    evidence.append({
      action: "ERASURE_COMPLETE",
      actor: SYSTEM,
      decision: { reason: "RECOVERY_WINDOWS_PASSED" },
      policyVersion: policy().version,
      atMs: opts.nowMs,
      requestId,
      correlationId: opts.correlationId ?? null,
      asOfMs: opts.asOfMs,
      detail: {
        fullyGoneBy: iso(fullyGoneByMs),
        purgedAt: iso(toMs(basis.purgedAt)),
        pitrDays: typeof basis.pitrDays === "number" ? basis.pitrDays : null,
        backupRetentionDays: typeof basis.backupRetentionDays === "number" ? basis.backupRetentionDays : null,
        archivesRetainUntil: iso(toMs(basis.archivesRetainUntil)),
        ...(typeof basis.storageSoftDeleteDays === "number" ? { storageSoftDeleteDays: basis.storageSoftDeleteDays } : {}),
        ...(basis.exportsExpireAt ? { exportsExpireAt: iso(toMs(basis.exportsExpireAt)) } : {}),
        ...(notices.length > 0 ? { processorsDeadline: iso(toMs(basis.processorsDeadline)), processorsAcknowledged: notices.length - open.length, processorsOpen: open.join(",") } : {}),
        // Across databases: each other cell's own date; the request's is the latest of them and its own.
        ...(cells ? { cells: cells.map((c) => `${c.cell}:${iso(c.fullyGoneByMs) ?? "-"}`).join(","), latestFullyGoneBy: iso(Math.max(fullyGoneByMs ?? 0, ...cells.map((c) => c.fullyGoneByMs ?? 0))) } : {}),
        ...(opts.actor.type === "system" ? {} : { startedBy: `${opts.actor.type}:${opts.actor.id}` }),
      },
    });
    return decision;
  }, EVIDENCE_TX);
}

/**
 * Dates again one PURGED request that finalize left without a date because an archive copy of its erasure was
 * held (ARCHIVE_UNDER_HOLD), once no copy is held any more: the same computation as finalize's (purgedGoneBy),
 * from the purge time it stored and its copies as they are now, read in the transaction that writes the date.
 * Returns whether it was dated.
 */
async function redateOne(requestId: string, opts: CompletionOptions): Promise<boolean> {
  return db().runTransaction(async (tx) => {
    const ref = requestRef(requestId);
    const snap = await tx.get(ref);
    const purgedAtMs = toMs(snap.get("purgedAt"));
    if (parseRequestState(snap.get("state")) !== "PURGED" || snap.get("fullyGoneByUnknown") !== "ARCHIVE_UNDER_HOLD" || purgedAtMs === null) return false;
    const objects = snap.get("objectsErased") === true ? { softDeleteDays: storageSettings.softDeleteDays() } : null;
    // The same date the finalize gives a PURGED request (runner/finalize.ts), from the moment it was purged: the
    // processors it notified then have until their deadline, whichever copy held the date back.
    const kind = snap.get("subjectType") === "tenant" ? "tenant" : "user";
    const processorsDue = processorsDeadlineMs(policy().registry.processors, kind, purgedAtMs);
    const purged = purgedGoneBy(purgedAtMs, await archiveCopiesOf(requestId, tx), purgeSettings.recoveryWindows(), objects);
    const goneBy = withExportsExpiry(withProcessorsDeadline(purged, processorsDue), toMs(snap.get("exportsExpireAt")), purgeSettings.recoveryWindows());
    if (goneBy.atMs === null && goneBy.unknown === "ARCHIVE_UNDER_HOLD") return false;
    if (opts.dryRun) return true;
    const detail = goneBy.atMs === null ? `no archive copy is held any more: fully gone by unknown (${goneBy.unknown})` : `no archive copy is held any more: fully gone by ${iso(goneBy.atMs)}`;
    tx.update(ref, { ...goneByFields(goneBy), timeline: FieldValue.arrayUnion({ at: toTimestamp(opts.nowMs), event: "FULLY_GONE_BY_DATED", detail }) });
    return true;
  });
}

/**
 * The PURGED requests whose date waited for a held archive copy (`fullyGoneByUnknown` ARCHIVE_UNDER_HOLD), dated
 * again where no copy of theirs is held now: a hold's release gives the copies back their expiry
 * (holds/service.ts#releaseHoldById), and this gives their requests back a date. Paged by id; returns how many
 * were dated.
 */
async function redateReleasedArchives(opts: CompletionOptions, pageSize: number): Promise<number> {
  const waiting = db().collection(COLLECTIONS.deletionRequests).where("fullyGoneByUnknown", "==", "ARCHIVE_UNDER_HOLD").orderBy(FieldPath.documentId());
  let dated = 0;
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    const page = await (last ? waiting.startAfter(last) : waiting).select().limit(pageSize).get();
    for (const d of page.docs) if (await redateOne(d.id, opts)) dated++;
    if (page.size < pageSize) return dated;
    last = page.docs[page.docs.length - 1];
  }
}

/**
 * Records ERASURE_COMPLETE for every PURGED request whose "fully gone by" date has passed at `nowMs` (up to
 * MAX_PER_RUN a run), after dating again the requests whose held archive copies were released since. A dry run
 * counts what it would record and writes nothing.
 */
export async function recordErasureCompletions(opts: CompletionOptions): Promise<CompletionAcrossCells> {
  const pageSize = opts.pageSize ?? PAGE;
  const max = opts.maxRequests ?? MAX_PER_RUN;
  const dated = await redateReleasedArchives(opts, pageSize);
  if (dated > 0) log.info("purge.fully_gone_by_dated", { dated, dryRun: opts.dryRun });
  const summary: CompletionAcrossCells = { due: 0, recorded: 0, waitingForArchive: 0, skipped: 0 };
  const due = db()
    .collection(COLLECTIONS.deletionRequests)
    .where("erasureComplete", "==", false)
    .where("fullyGoneBy", "<=", Timestamp.fromMillis(opts.nowMs))
    .orderBy("fullyGoneBy")
    .orderBy(FieldPath.documentId());
  let last: QueryDocumentSnapshot | undefined;
  while (summary.due < max) {
    const page = await (last ? due.startAfter(last) : due).select("fullyGoneBy").limit(Math.min(pageSize, max - summary.due)).get();
    for (const d of page.docs) {
      summary.due++;
      const decision = await completeOne(d.id, opts);
      if (decision === "RECORD") summary.recorded++;
      else if (decision === "ARCHIVE_COPY_LEFT") summary.waitingForArchive++;
      else if (decision === "CELLS_NOT_COMPLETE") summary.waitingForCells = (summary.waitingForCells ?? 0) + 1;
      else summary.skipped++;
    }
    if (page.size < pageSize) break;
    last = page.docs[page.docs.length - 1];
  }
  log.info("purge.erasure_complete", { ...summary, dryRun: opts.dryRun });
  return summary;
}
