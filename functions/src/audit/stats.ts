import { isDeletionCandidate, softDeleteAgeBucket, SOFT_DELETE_AGE_BUCKETS, type AuditDoc } from "./rules";

/** The audit's counts: what its metrics and the dashboard show. Bounded: counts and the few most urgent requests. */
export interface ClassStats {
  documents: number;
  candidates: number;
  held: number;
  softDeleted: number;
}

export interface UrgentRequest {
  path: string;
  state: string;
  dueAtMs: number;
  requestedAtMs: number | null;
}

export interface AuditStats {
  documents: number;
  byClass: Record<string, ClassStats>;
  heldDocuments: number;
  activeHoldRecords: number;
  softDeleteAge: Record<string, number>;
  oldestSoftDeleteMs: number | null;
  /**
   * Open deletion requests: `unfinished` counts those that owe erasure and those RETAINED_UNDER_HOLD (open, not
   * done), `overdue` those with an OVERDUE_REQUEST finding, `retainedUnderHold` the RETAINED_UNDER_HOLD ones and
   * `retainedPastDue` those of them past their due date (lawfully kept or not). The due chart lists them all.
   */
  requests: { unfinished: number; overdue: number; retainedUnderHold: number; retainedPastDue: number; dueBuckets: Record<string, number>; mostUrgent: UrgentRequest[] };
  /**
   * Requests opened within the lookback (audit/rules.ts#DEADLINE_LOOKBACK_DAYS) and answered: `answered` in all,
   * `withinDeadline` of them by their deadline, `late` after it (each a DEADLINE_MISSED finding).
   */
  deadlines: { answered: number; withinDeadline: number; late: number };
  archives: { entries: number; unverified: number };
  subjectsChecked: number;
  /** Cloud Storage objects the object check read (at most RETENTION_AUDIT_MAX_OBJECTS), and whether that bound cut it short. */
  objects: { checked: number; truncated: boolean };
}

/** Requests kept for the dashboard's "against their due date" chart: the most urgent few. */
const URGENT_KEPT = 20;
export const DUE_BUCKETS = ["overdue", "<7d", "7-14d", "14-30d", ">30d"] as const;

export function newStats(activeHoldRecords: number): AuditStats {
  return {
    documents: 0,
    byClass: {},
    heldDocuments: 0,
    activeHoldRecords,
    softDeleteAge: Object.fromEntries(SOFT_DELETE_AGE_BUCKETS.map((b) => [b.label, 0])),
    oldestSoftDeleteMs: null,
    requests: { unfinished: 0, overdue: 0, retainedUnderHold: 0, retainedPastDue: 0, dueBuckets: Object.fromEntries(DUE_BUCKETS.map((b) => [b, 0])), mostUrgent: [] },
    deadlines: { answered: 0, withinDeadline: 0, late: 0 },
    archives: { entries: 0, unverified: 0 },
    subjectsChecked: 0,
    objects: { checked: 0, truncated: false },
  };
}

/** Counts one governed document under `classId` (the registry's class for its path). */
export function tallyDoc(stats: AuditStats, classId: string, doc: AuditDoc, held: boolean, nowMs: number): void {
  stats.documents++;
  const c = (stats.byClass[classId] ??= { documents: 0, candidates: 0, held: 0, softDeleted: 0 });
  c.documents++;
  if (held) {
    c.held++;
    stats.heldDocuments++;
  }
  if (isDeletionCandidate(doc, held, nowMs)) c.candidates++;
  if (doc.lifecycleState !== "SOFT_DELETED") return;
  c.softDeleted++;
  if (doc.softDeletedAtMs === null) return;
  const age = Math.max(0, nowMs - doc.softDeletedAtMs);
  const bucket = softDeleteAgeBucket(age);
  stats.softDeleteAge[bucket] = (stats.softDeleteAge[bucket] ?? 0) + 1;
  stats.oldestSoftDeleteMs = Math.max(stats.oldestSoftDeleteMs ?? 0, age);
}

export function tallyRequest(
  stats: AuditStats,
  r: { path: string; state: string | null; dueAtMs: number | null; requestedAtMs: number | null },
  overdue: boolean,
  nowMs: number,
): void {
  const q = stats.requests;
  q.unfinished++;
  if (overdue) q.overdue++;
  if (r.state === "RETAINED_UNDER_HOLD") {
    q.retainedUnderHold++;
    if (r.dueAtMs !== null && r.dueAtMs < nowMs) q.retainedPastDue++;
  }
  if (r.dueAtMs === null) return;
  const days = (r.dueAtMs - nowMs) / 86_400_000;
  const bucket = days < 0 ? "overdue" : days < 7 ? "<7d" : days < 14 ? "7-14d" : days < 30 ? "14-30d" : ">30d";
  q.dueBuckets[bucket] = (q.dueBuckets[bucket] ?? 0) + 1;
  q.mostUrgent.push({ path: r.path, state: r.state ?? "?", dueAtMs: r.dueAtMs, requestedAtMs: r.requestedAtMs });
  q.mostUrgent.sort((a, b) => a.dueAtMs - b.dueAtMs || (a.path < b.path ? -1 : 1));
  if (q.mostUrgent.length > URGENT_KEPT) q.mostUrgent.length = URGENT_KEPT;
}
