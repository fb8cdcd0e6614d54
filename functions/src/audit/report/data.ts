import { DEFAULT_THRESHOLDS, listedFindings } from "../rules";
import type { ChainedEvidence } from "../../evidence/rules";
import type { Count, ReportData, ReportTtlDelay } from "./types";
import { DUE_BUCKETS, SAMPLE_PER_CODE, scanRetention, type ScanOptions } from "../scan";
import { verifyEvidence } from "../../evidence/index";
import { COLLECTIONS, db } from "../../platform/firestore";
import { toMs } from "../../platform/governed-doc";

/**
 * Findings and chain problems listed on the page (counts stay exact). The findings listed include the first
 * SAMPLE_PER_CODE of every code (audit/rules.ts#listedFindings), so a flood of one code never hides a rarer one.
 */
const LISTED = 200;

const HOUR = 3_600_000;
/** Delay buckets: the first four end at the TTL cleanup SLA (72 h), so the chart's SLA line falls between buckets. */
export const TTL_DELAY_BUCKETS = [
  { label: "<1h", maxMs: HOUR },
  { label: "1-6h", maxMs: 6 * HOUR },
  { label: "6-24h", maxMs: 24 * HOUR },
  { label: "24-72h", maxMs: 72 * HOUR },
  { label: ">72h", maxMs: Number.POSITIVE_INFINITY },
] as const;

/**
 * Expiration-to-deletion delays, folded one evidence entry at a time (bounded memory). A TTL_DELETE
 * entry carries `detail.deletionLagMs` (event time minus expireAt); older entries may carry only the two
 * times, which give the same number.
 */
export class TtlDelayFold {
  private readonly counts = TTL_DELAY_BUCKETS.map(() => 0);
  private n = 0;
  private sum = 0;
  private max: number | null = null;
  private overSla = 0;

  constructor(private readonly slaMs: number = DEFAULT_THRESHOLDS.ttlCleanupSlaMs) {}

  add(entry: ChainedEvidence): void {
    if (entry.action !== "TTL_DELETE") return;
    const lag = delayOf(entry);
    if (lag === null) return;
    const ms = Math.max(0, lag);
    this.n++;
    this.sum += ms;
    this.max = Math.max(this.max ?? 0, ms);
    if (ms > this.slaMs) this.overSla++;
    const i = TTL_DELAY_BUCKETS.findIndex((b) => ms < b.maxMs);
    this.counts[i] = (this.counts[i] ?? 0) + 1;
  }

  result(): ReportTtlDelay {
    return {
      count: this.n,
      buckets: TTL_DELAY_BUCKETS.map((b, i) => ({ label: b.label, count: this.counts[i] ?? 0 })),
      meanMs: this.n === 0 ? null : Math.round(this.sum / this.n),
      maxMs: this.max,
      overSla: this.overSla,
      slaMs: this.slaMs,
    };
  }
}

function delayOf(e: ChainedEvidence): number | null {
  const d = e.detail ?? {};
  if (typeof d.deletionLagMs === "number") return d.deletionLagMs;
  if (typeof d.expireAtMs === "number" && typeof d.eventTimeMs === "number") return d.eventTimeMs - d.expireAtMs;
  return null;
}

/**
 * Gathers the dashboard's data in two read-only passes: the retention audit (classes, holds, soft-delete
 * ages, requests, findings) and the evidence walk (chain status, and TTL delays from the same pass).
 */
export async function collectReportData(opts: { nowMs: number; target: string; scan?: Omit<ScanOptions, "nowMs">; onProgress?: (text: string) => void }): Promise<ReportData> {
  const audit = await scanRetention({
    ...opts.scan,
    nowMs: opts.nowMs,
    onProgress: (p) => opts.onProgress?.(`auditing ${p.phase}: ${p.scanned} documents`),
  });
  const delays = new TtlDelayFold();
  const evidence = await verifyEvidence({
    maxFindings: LISTED,
    onEntry: (e) => delays.add(e),
    onProgress: (n) => opts.onProgress?.(`verifying evidence: ${n} entries`),
  });
  const s = audit.stats;
  const counts = (rec: Record<string, number>, order: readonly string[]): Count[] => order.map((label) => ({ label, count: rec[label] ?? 0 }));
  return {
    generatedAt: new Date().toISOString(),
    auditedAs: new Date(opts.nowMs).toISOString(),
    target: opts.target,
    policyVersion: audit.policyVersion,
    audit: {
      ok: audit.ok,
      totalFindings: audit.totalFindings,
      findings: listedFindings(audit.findings, LISTED, SAMPLE_PER_CODE),
      byCode: Object.fromEntries(Object.entries(audit.byCode).filter(([, n]) => n > 0)),
      documents: s.documents,
      byClass: s.byClass,
      heldDocuments: s.heldDocuments,
      activeHoldRecords: s.activeHoldRecords,
      softDeleteAge: counts(s.softDeleteAge, Object.keys(s.softDeleteAge)),
      requests: {
        unfinished: s.requests.unfinished,
        overdue: s.requests.overdue,
        dueBuckets: counts(s.requests.dueBuckets, DUE_BUCKETS),
        mostUrgent: s.requests.mostUrgent.map((r) => ({
          path: r.path,
          state: r.state,
          dueAt: new Date(r.dueAtMs).toISOString(),
          requestedAt: r.requestedAtMs === null ? null : new Date(r.requestedAtMs).toISOString(),
        })),
      },
      deadlines: s.deadlines,
      archives: s.archives,
    },
    evidence: {
      ok: evidence.ok,
      checked: evidence.checked,
      chains: evidence.chains,
      macs: evidence.macs,
      anchors: evidence.anchors ? `${evidence.anchors.count} from ${evidence.anchors.source}${evidence.anchors.latestAt ? `, latest ${evidence.anchors.latestAt}` : ""}` : null,
      problems: evidence.findings.map((f) => ({ problem: f.problem, chain: f.shard, seq: f.seq, docId: f.docId ?? null, detail: f.detail })),
    },
    ttlDelay: delays.result(),
    lastStoredAudit: await lastStoredAudit(),
  };
}

/** The newest stored audit report (the scheduled run and runRetentionJob write them). */
async function lastStoredAudit(): Promise<ReportData["lastStoredAudit"]> {
  const snap = await db()
    .collection(COLLECTIONS.retentionReports)
    .where("kind", "==", "retentionAudit")
    .orderBy("createdAt", "desc")
    .limit(1)
    .select("createdAt", "ok", "totalFindings")
    .get();
  const doc = snap.docs[0];
  if (!doc) return null;
  const created = toMs(doc.get("createdAt"));
  const total: unknown = doc.get("totalFindings");
  return {
    id: doc.id,
    createdAt: created === null ? null : new Date(created).toISOString(),
    ok: doc.get("ok") === true,
    totalFindings: typeof total === "number" ? total : 0,
  };
}
