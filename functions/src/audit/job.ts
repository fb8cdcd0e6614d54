import { Timestamp } from "firebase-admin/firestore";
import { FINDING_CODES, SOFT_DELETE_AGE_BUCKETS } from "./rules";
import { scanRetention, type AuditResult, type ScanOptions } from "./scan";
import { COLLECTIONS, db } from "../platform/firestore";
import { log } from "../platform/logs";
import { emitMetric } from "../platform/metrics";
import type { JobOptions, JobSummary } from "../kernel/job";

/** Findings stored in one report document: Firestore documents are capped at 1 MiB; counts stay exact. */
export const REPORT_FINDINGS_KEPT = 200;

export interface RetentionAuditOptions extends JobOptions {
  scan?: Omit<ScanOptions, "nowMs">;
  /** Fixes the report id (the scheduled run uses its schedule time), so a retried run rewrites one report. */
  reportKey?: string;
}

/**
 * The retention audit as a job (the schedule and runRetentionJob run this; `retention audit` runs the
 * read-only scan alone). It reads everything, emits the audit's metrics, and, unless it is a dry run,
 * writes one `retentionReports` entry. Any finding is logged at ERROR, which is what the alert policy in
 * docs/METRICS.md fires on.
 */
export async function runRetentionAudit(opts: RetentionAuditOptions): Promise<JobSummary> {
  const result = await scanRetention({ ...opts.scan, nowMs: opts.nowMs });
  // A run "as of" another time describes a fictional now: its numbers must not feed real dashboards.
  if (opts.asOfMs === null) emitAuditMetrics(result);
  const reportId = opts.dryRun ? null : await writeReport(result, opts);
  const byCode = nonZero(result.byCode);
  const fields = {
    findings: result.totalFindings,
    byCode: Object.entries(byCode).map(([c, n]) => `${c}=${n}`),
    documents: result.stats.documents,
    reportId,
    dryRun: opts.dryRun,
    durationMs: result.durationMs,
  };
  if (result.ok) log.info("audit.done", fields);
  else log.error("audit.findings", fields);
  return {
    job: "retentionAudit",
    dryRun: opts.dryRun,
    asOf: opts.asOfMs === null ? null : new Date(opts.asOfMs).toISOString(),
    ok: result.ok,
    findings: result.totalFindings,
    byCode,
    documents: result.stats.documents,
    reportId,
    durationMs: result.durationMs,
  };
}

export function nonZero(byCode: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(byCode).filter(([, n]) => n > 0));
}

/**
 * The report's id. A scheduled run passes its schedule time, so a retry of that run rewrites its own report
 * instead of adding one; other runs get the wall-clock time and their correlation id.
 */
export function reportIdFor(opts: { reportKey?: string; correlationId?: string }, wallMs: number): string {
  const key = opts.reportKey ?? `${new Date(wallMs).toISOString()}${opts.correlationId ? `-${opts.correlationId}` : ""}`;
  return `audit-${key.replace(/[^A-Za-z0-9_.:-]/g, "_")}`;
}

async function writeReport(result: AuditResult, opts: RetentionAuditOptions): Promise<string> {
  const id = reportIdFor(opts, Date.now());
  await db()
    .collection(COLLECTIONS.retentionReports)
    .doc(id)
    .set({
      kind: "retentionAudit",
      createdAt: Timestamp.now(),
      asOf: opts.asOfMs === null ? null : Timestamp.fromMillis(opts.asOfMs),
      auditedAs: Timestamp.fromMillis(result.nowMs),
      actor: opts.actor,
      policyVersion: result.policyVersion,
      ok: result.ok,
      totalFindings: result.totalFindings,
      byCode: result.byCode,
      findings: result.findings.slice(0, REPORT_FINDINGS_KEPT),
      findingsTruncated: result.totalFindings > REPORT_FINDINGS_KEPT,
      stats: {
        documents: result.stats.documents,
        byClass: result.stats.byClass,
        heldDocuments: result.stats.heldDocuments,
        activeHoldRecords: result.stats.activeHoldRecords,
        softDeleteAge: result.stats.softDeleteAge,
        requests: {
          unfinished: result.stats.requests.unfinished,
          overdue: result.stats.requests.overdue,
          retainedUnderHold: result.stats.requests.retainedUnderHold,
          retainedPastDue: result.stats.requests.retainedPastDue,
          dueBuckets: result.stats.requests.dueBuckets,
        },
        deadlines: result.stats.deadlines,
        archives: result.stats.archives,
        subjectsChecked: result.stats.subjectsChecked,
      },
      durationMs: result.durationMs,
    });
  return id;
}

/**
 * The audit's metric points (docs/METRICS.md). Every series is emitted on every run, zeros included, so a
 * repaired problem brings its series back to zero instead of leaving the last bad value standing.
 */
export function emitAuditMetrics(result: AuditResult): void {
  const { stats, byCode } = result;
  for (const [cls, c] of Object.entries(stats.byClass)) emitMetric("retention.candidates", c.candidates, { class: cls });
  emitMetric("retention.ttl_missing", byCode.MISSING_TTL);
  emitMetric("retention.ttl_invalid", byCode.INVALID_TTL, { code: "INVALID_TTL" });
  emitMetric("retention.ttl_invalid", byCode.HOLD_WITH_TTL, { code: "HOLD_WITH_TTL" });
  emitMetric("retention.holds", stats.heldDocuments, { kind: "documents" });
  emitMetric("retention.holds", stats.activeHoldRecords, { kind: "records" });
  for (const b of SOFT_DELETE_AGE_BUCKETS) emitMetric("retention.soft_delete_age", stats.softDeleteAge[b.label] ?? 0, { bucket: b.label });
  emitMetric("retention.orphans", byCode.ORPHANED_SUBCOLLECTION, { kind: "subcollection" });
  emitMetric("retention.orphans", byCode.ORPHANED_SUBJECT, { kind: "subject" });
  emitMetric("retention.archive_verification_failures", byCode.ARCHIVE_UNVERIFIED);
  emitMetric("retention.requests_past_due", byCode.OVERDUE_REQUEST);
  emitMetric("retention.requests_answered", stats.deadlines.withinDeadline, { deadline: "within" });
  emitMetric("retention.requests_answered", stats.deadlines.late, { deadline: "missed" });
  emitMetric("retention.business_expiry_overdue", byCode.EXPIRED_BUT_VISIBLE);
  emitMetric("retention.ttl_cleanup_overdue", byCode.TTL_OVERDUE);
  for (const code of FINDING_CODES) emitMetric("retention.audit_findings", byCode[code], { code });
}
