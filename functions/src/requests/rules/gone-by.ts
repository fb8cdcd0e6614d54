import { DAY_MS } from "../../kernel/policy";
import { plannedShredMs } from "../../shred/rules";
import type { GoneByUnknown, RequestState } from "../../kernel/request-states";

/**
 * "Fully gone by": the date by which the last copy of what a request erased has left the governed database's
 * recovery copies, and when its final ERASURE_COMPLETE evidence is due. Pure: the purge's finalize computes the
 * date when the request becomes PURGED (purge/runner/finalize.ts), the status reports it, and the purge's
 * completion step records ERASURE_COMPLETE once it has passed (purge/completion.ts).
 *
 * What it counts: point-in-time recovery and scheduled backups of the governed database, at the windows the
 * deployment says it configured (the service cannot read them), and the archive copies the erasure made. What it
 * cannot count (copies outside this database) is in the README's "Fully gone by" section.
 */

/** The governed database's recovery copies, as configured in the project (RETENTION_PITR_DAYS, RETENTION_BACKUP_RETENTION_DAYS). */
export interface RecoveryWindows {
  /** Point-in-time recovery window in days; 0: PITR is off. */
  pitrDays: number;
  /** Longest retention of a scheduled backup or export in days; 0: no backups. */
  backupRetentionDays: number;
  /**
   * The archive keys' destroy delay in days (RETENTION_ARCHIVE_KEY_DESTROY_DAYS): a sealed archive copy is unreadable
   * everywhere, backups included, this long after its key's shred (decision 0038). Absent: not counted.
   */
  archiveKeyDestroyDays?: number;
}

/** The archive copies an erasure made of the subject's data (`archives/{id}` of its purge unit), as read when it ends. */
export interface ArchiveCopies {
  /** At least one copy exists. */
  any: boolean;
  /** The latest end of retention among the copies that have one; null when none has. */
  latestRetainUntilMs: number | null;
  /** A copy is under a retention hold: it carries no expiry while the hold stands. */
  held: boolean;
  /** The copies are sealed under their subject's data key (crypto-shredded at the end of their retention). */
  sealed?: boolean;
}

/** What a date was computed from: kept on the request and in the ERASURE_COMPLETE evidence. */
export interface GoneByBasis {
  purgedAtMs: number;
  pitrDays: number;
  backupRetentionDays: number;
  /** The latest end of retention of the erasure's archive copies; null: it made none. */
  archivesRetainUntilMs: number | null;
  /** The buckets' soft-delete retention in days, when the erasure deleted Cloud Storage objects (absent: it deleted none). */
  storageSoftDeleteDays?: number;
  /** The latest deadline of the processors the erasure notified (absent: it notified none; docs/decisions/0039-processors.md). */
  processorsDeadlineMs?: number;
  /**
   * The latest expiry of access-export parts a build was still writing when the erasure deleted the subject's exports
   * (absent: none; docs/decisions/0040-legal-clocks-and-access.md).
   */
  exportsExpireAtMs?: number;
  /** Sealed copies only: when their key is planned to be shredded, and the KEK destroy delay counted after it. */
  archivesShredAtMs?: number;
  archiveKeyDestroyDays?: number;
}

export type GoneBy = { atMs: number; basis: GoneByBasis } | { atMs: null; unknown: GoneByUnknown };

/** The longest a recovery copy outlives a deletion: the larger of the two windows, in ms. */
export function recoveryWindowMs(w: RecoveryWindows): number {
  for (const [name, days] of [
    ["pitrDays", w.pitrDays],
    ["backupRetentionDays", w.backupRetentionDays],
  ] as const) {
    if (!Number.isInteger(days) || days < 0) throw new Error(`${name} must be a whole number of days of at least 0, got ${days}`);
  }
  return Math.max(w.pitrDays, w.backupRetentionDays) * DAY_MS;
}

/**
 * Why a request in `state` has no date yet, or null for PURGED (whose date depends on its erasure). CANCELLING is
 * a cancel being carried out: nothing was erased, as for CANCELLED.
 */
export function unknownForState(state: RequestState): GoneByUnknown | null {
  if (state === "PURGED") return null;
  if (state === "RETAINED_UNDER_HOLD") return "RETAINED_UNDER_HOLD";
  if (state === "CANCELLED" || state === "CANCELLING") return "CANCELLED";
  return "NOT_ERASED_YET";
}

/**
 * A PURGED request's date: when the erasure finished plus the longer of the PITR and backup windows, and no earlier
 * than the end of any archive copy it made plus the same window (a copy leaves the database at its end of
 * retention, and its backups live on as long as any other deleted document's). When the erasure deleted Cloud
 * Storage objects (`objects`), no earlier than the erasure plus the buckets' soft-delete retention, during which a
 * deleted object can still be restored (docs/STORAGE.md). No date while a copy is held (it has no end) or when a
 * copy's class keeps it without end.
 */
export function purgedGoneBy(purgedAtMs: number, archives: ArchiveCopies, windows: RecoveryWindows, objects: { softDeleteDays: number } | null = null): GoneBy {
  const windowMs = recoveryWindowMs(windows);
  if (objects !== null && (!Number.isInteger(objects.softDeleteDays) || objects.softDeleteDays < 0)) {
    throw new Error(`softDeleteDays must be a whole number of days of at least 0, got ${objects.softDeleteDays}`);
  }
  if (archives.held) return { atMs: null, unknown: "ARCHIVE_UNDER_HOLD" };
  if (archives.any && archives.latestRetainUntilMs === null) return { atMs: null, unknown: "ARCHIVE_KEPT_WITHOUT_END" };
  const archivesRetainUntilMs = archives.any ? archives.latestRetainUntilMs : null;
  // A copy in the clear is gone once it has left the database and its last backup has expired. A sealed copy is
  // unreadable everywhere once its key's KEK is destroyed: the shred after its end of retention plus the destroy
  // delay, whichever comes first.
  let archivesGoneMs = archivesRetainUntilMs === null ? Number.NEGATIVE_INFINITY : archivesRetainUntilMs + windowMs;
  const shredAtMs = archives.any && archives.sealed === true && windows.archiveKeyDestroyDays !== undefined ? plannedShredMs(archivesRetainUntilMs) : null;
  if (shredAtMs !== null) {
    if (!Number.isInteger(windows.archiveKeyDestroyDays) || windows.archiveKeyDestroyDays! < 1) throw new Error(`archiveKeyDestroyDays must be a whole number of days of at least 1, got ${windows.archiveKeyDestroyDays}`);
    archivesGoneMs = Math.min(archivesGoneMs, shredAtMs + windows.archiveKeyDestroyDays! * DAY_MS);
  }
  const objectsGoneMs = objects === null ? Number.NEGATIVE_INFINITY : purgedAtMs + objects.softDeleteDays * DAY_MS;
  return {
    atMs: Math.max(purgedAtMs + windowMs, archivesGoneMs, objectsGoneMs),
    basis: {
      purgedAtMs,
      pitrDays: windows.pitrDays,
      backupRetentionDays: windows.backupRetentionDays,
      archivesRetainUntilMs,
      ...(objects !== null ? { storageSoftDeleteDays: objects.softDeleteDays } : {}),
      ...(shredAtMs !== null ? { archivesShredAtMs: shredAtMs, archiveKeyDestroyDays: windows.archiveKeyDestroyDays! } : {}),
    },
  };
}

/**
 * A date that also waits for the processors the erasure notified: no earlier than the latest deadline they agreed
 * to, since until then a processor may lawfully still hold its copy. No date stays no date.
 */
export function withProcessorsDeadline(goneBy: GoneBy, processorsDeadlineMs: number | null): GoneBy {
  if (goneBy.atMs === null || processorsDeadlineMs === null) return goneBy;
  return { atMs: Math.max(goneBy.atMs, processorsDeadlineMs), basis: { ...goneBy.basis, processorsDeadlineMs } };
}

/**
 * A date that also waits for access-export parts the erasure could not delete (a build was writing them as it ran):
 * no earlier than their expiry, when TTL deletes them, plus the recovery windows their backups live on for, as for
 * any other deleted document. No date stays no date.
 */
export function withExportsExpiry(goneBy: GoneBy, exportsExpireAtMs: number | null, windows: RecoveryWindows): GoneBy {
  if (goneBy.atMs === null || exportsExpireAtMs === null) return goneBy;
  return { atMs: Math.max(goneBy.atMs, exportsExpireAtMs + recoveryWindowMs(windows)), basis: { ...goneBy.basis, exportsExpireAtMs } };
}

/** What the request document says about its date (written by the purge's finalize when it became PURGED). */
export interface StoredGoneBy {
  fullyGoneByMs: number | null;
  unknown: GoneByUnknown | null;
  erasureCompleteAtMs: number | null;
}

/** What a status reports: the date (or why there is none) and when ERASURE_COMPLETE was recorded. */
export interface GoneByStatus {
  fullyGoneByMs: number | null;
  unknown: GoneByUnknown | null;
  erasureCompleteAtMs: number | null;
}

/**
 * The status's view of a request: a request that is not PURGED has no date (why: its state); a PURGED one has the
 * date its finalize stored, or the reason it stored; one purged before dates were recorded says NOT_RECORDED.
 */
export function goneByStatus(state: RequestState, stored: StoredGoneBy): GoneByStatus {
  const byState = unknownForState(state);
  if (byState !== null) return { fullyGoneByMs: null, unknown: byState, erasureCompleteAtMs: null };
  if (stored.fullyGoneByMs !== null) return { fullyGoneByMs: stored.fullyGoneByMs, unknown: null, erasureCompleteAtMs: stored.erasureCompleteAtMs };
  return { fullyGoneByMs: null, unknown: stored.unknown ?? "NOT_RECORDED", erasureCompleteAtMs: null };
}

/** What the completion step reads of a request, in its transaction. */
export interface CompletionFacts {
  state: RequestState;
  /** The explicit flag finalize sets at PURGED (false) and the completion step sets (true); absent on older requests. */
  erasureComplete: unknown;
  fullyGoneByMs: number | null;
  /** An archive copy the erasure made is still in the database (not yet swept, or held since). */
  archiveCopiesLeft: boolean;
  /**
   * A request of record across several databases: whether every other cell's request has recorded its own
   * ERASURE_COMPLETE (its own date has passed). Absent: a request of one database.
   */
  cellsComplete?: boolean;
}

export type CompletionDecision = "RECORD" | "ALREADY_RECORDED" | "NOT_PURGED" | "NO_DATE" | "NOT_DUE" | "ARCHIVE_COPY_LEFT" | "CELLS_NOT_COMPLETE";

/**
 * Whether ERASURE_COMPLETE is recorded for a request now: once, for a PURGED request whose date has passed, only
 * once every other cell of a request across several databases has recorded its own, and
 * only when no archive copy of its erasure is left in the database (a copy held after the date was computed, or
 * one TTL has not swept yet, keeps it waiting: the evidence never claims a copy is gone while it is there).
 */
export function completionDecision(f: CompletionFacts, nowMs: number): CompletionDecision {
  if (f.erasureComplete === true) return "ALREADY_RECORDED";
  if (f.state !== "PURGED") return "NOT_PURGED";
  if (f.fullyGoneByMs === null) return "NO_DATE";
  if (f.fullyGoneByMs > nowMs) return "NOT_DUE";
  if (f.archiveCopiesLeft) return "ARCHIVE_COPY_LEFT";
  // The last word on a request across databases waits for the last cell: its date is the latest of theirs.
  if (f.cellsComplete === false) return "CELLS_NOT_COMPLETE";
  return "RECORD";
}
