/** Everything the dashboard shows, gathered by `audit/report/data.ts`. Plain data: the page builder is pure. */
export interface ReportData {
  generatedAt: string;
  /** The time the audit judged against (the wall clock, or --as-of on the emulators). */
  auditedAs: string;
  target: string;
  policyVersion: string;
  audit: ReportAudit;
  evidence: ReportEvidence;
  ttlDelay: ReportTtlDelay;
  lastStoredAudit: { id: string; createdAt: string | null; ok: boolean; totalFindings: number } | null;
}

export interface Count {
  label: string;
  count: number;
}

export interface ReportAudit {
  ok: boolean;
  totalFindings: number;
  /** Findings listed (the first N); totalFindings is exact. */
  findings: { path: string; code: string; detail: string }[];
  byCode: Record<string, number>;
  documents: number;
  byClass: Record<string, { documents: number; candidates: number; held: number; softDeleted: number }>;
  heldDocuments: number;
  activeHoldRecords: number;
  softDeleteAge: Count[];
  requests: {
    unfinished: number;
    overdue: number;
    dueBuckets: Count[];
    mostUrgent: { path: string; state: string; dueAt: string; requestedAt: string | null }[];
  };
  /** Requests opened in the last year and answered: by their deadline, or after it (DEADLINE_MISSED). */
  deadlines: { answered: number; withinDeadline: number; late: number };
  archives: { entries: number; unverified: number };
}

export interface ReportEvidence {
  ok: boolean;
  checked: number;
  /** Chains walked (and the legacy segment). */
  chains: number;
  /** Whether the MACs were checked (the dashboard had the evidence key). */
  macs: "checked" | "unchecked";
  /** The anchors the ledger was held against, in words; null when none were read. */
  anchors: string | null;
  problems: { problem: string; chain: string; seq: number; docId: string | null; detail: string }[];
}

/** Expiration-to-deletion delay of TTL deletes (event time minus expireAt), from TTL_DELETE evidence. */
export interface ReportTtlDelay {
  count: number;
  buckets: Count[];
  meanMs: number | null;
  maxMs: number | null;
  /** Deletes later than the TTL cleanup SLA. */
  overSla: number;
  slaMs: number;
}
