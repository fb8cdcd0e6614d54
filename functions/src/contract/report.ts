import { z } from "zod";

/** The dashboard's data, live: the same audit and evidence walk as `retention report`. */
export const GetRetentionReportInput = z.object({ skipSubjects: z.boolean().optional() }).strict();

const Count = z.object({ label: z.string(), count: z.number() });

export const GetRetentionReportOutput = z.object({
  generatedAt: z.string(),
  auditedAs: z.string(),
  target: z.string(),
  policyVersion: z.string(),
  audit: z.object({
    ok: z.boolean(),
    totalFindings: z.number(),
    findings: z.array(z.object({ path: z.string(), code: z.string(), detail: z.string() })),
    byCode: z.record(z.string(), z.number()),
    documents: z.number(),
    byClass: z.record(z.string(), z.object({ documents: z.number(), candidates: z.number(), held: z.number(), softDeleted: z.number() })),
    heldDocuments: z.number(),
    activeHoldRecords: z.number(),
    softDeleteAge: z.array(Count),
    requests: z.object({
      unfinished: z.number(),
      overdue: z.number(),
      dueBuckets: z.array(Count),
      mostUrgent: z.array(z.object({ path: z.string(), state: z.string(), dueAt: z.string(), requestedAt: z.string().nullable() })),
    }),
    /** Requests opened in the last year and answered: by their deadline (legal clock or class), or after it. */
    deadlines: z.object({ answered: z.number(), withinDeadline: z.number(), late: z.number() }),
    archives: z.object({ entries: z.number(), unverified: z.number() }),
  }),
  evidence: z.object({
    ok: z.boolean(),
    checked: z.number(),
    /** Chains walked (and the first release's single chain, when there is one). */
    chains: z.number(),
    /** Whether the MACs were checked with the evidence key. */
    macs: z.enum(["checked", "unchecked"]),
    /** The anchors the ledger was held against, in words; null when none were read. */
    anchors: z.string().nullable(),
    problems: z.array(z.object({ problem: z.string(), chain: z.string(), seq: z.number(), docId: z.string().nullable(), detail: z.string() })),
  }),
  ttlDelay: z.object({
    count: z.number(),
    buckets: z.array(Count),
    meanMs: z.number().nullable(),
    maxMs: z.number().nullable(),
    overSla: z.number(),
    slaMs: z.number(),
  }),
  lastStoredAudit: z.object({ id: z.string(), createdAt: z.string().nullable(), ok: z.boolean(), totalFindings: z.number() }).nullable(),
});
