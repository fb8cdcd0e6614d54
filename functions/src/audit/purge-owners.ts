import { auditPurgeEligible, type AuditDoc, type Finding } from "./rules";
import { purgeMayTake } from "../requests/rules/requests";
import { db } from "../platform/firestore";
import { readFence } from "../holds/index";
import { checkpointFrom, checkpointRef, requestRef, takeFactsOf } from "../purge/index";

/** Documents whose owners are looked up together. */
const BATCH = 300;

/**
 * STALE_PURGE_ELIGIBLE: collects the audit's unheld PURGE_ELIGIBLE documents and looks up, by id and in
 * batches, the purge checkpoints their claims name and the deletion requests that own them, then hands the
 * facts to the pure rule (`audit/rules.ts#auditPurgeEligible`). Memory: one batch of documents.
 */
export class PurgeOwnerChecker {
  private pending: AuditDoc[] = [];
  private fence: Promise<number> | null = null;

  constructor(
    private readonly nowMs: number,
    private readonly report: (fs: readonly Finding[]) => void,
  ) {}

  async offer(doc: AuditDoc): Promise<void> {
    this.pending.push(doc);
    if (this.pending.length >= BATCH) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.fence ??= readFence();
    const fence = await this.fence;
    const units = [...new Set(batch.map((d) => d.claimUnitKey).filter((k): k is string => k !== null))];
    const requests = [...new Set(batch.flatMap((d) => [d.claimUnitKey, d.deletionRequestId]).filter((k): k is string => k !== null && !k.startsWith("sweep-")))];
    const [cps, reqs] = await Promise.all([units.length > 0 ? db().getAll(...units.map(checkpointRef)) : [], requests.length > 0 ? db().getAll(...requests.map(requestRef)) : []]);
    const running = new Set(cps.map((s) => checkpointFrom(s.data())).filter((c) => c?.phase === "RUNNING").map((c) => c!.unitKey));
    // At any later time: a request owning marked data resumes if some run will take it (grace ends, holds change).
    const resuming = new Set(reqs.filter((s) => s.exists && purgeMayTake(takeFactsOf(s.data()!), Number.POSITIVE_INFINITY, fence)).map((s) => s.id));
    for (const doc of batch) {
      const ownerWillResume = [doc.claimUnitKey, doc.deletionRequestId].some((k) => k !== null && resuming.has(k));
      this.report(auditPurgeEligible(doc, { claimRoundRunning: doc.claimUnitKey !== null && running.has(doc.claimUnitKey), ownerWillResume }, this.nowMs));
    }
  }
}
