import type { DocumentReference } from "firebase-admin/firestore";
import { summaryIsFresh, type StatusSummaryFacts } from "./rules/status";
import type { DeletionRequest } from "./rules/requests";
import type { RetainedItem } from "../plan/rules";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs, toTimestamp } from "../platform/governed-doc";
import { readFence } from "../holds/index";
import { log } from "../platform/logs";
import { planSubject } from "../plan/index";
import { policy } from "../platform/registry";

/**
 * The status summary of a deletion request, `deletionRequests/{requestId}/status/summary`: what planning the
 * subject last found retained, when, under which policy version and which active holds. getDeletionStatus
 * answers from it, so a subject polling their status does not have the whole data map walked on every call;
 * the request's lifecycle writes it when the request opens, and a status call refreshes it at most every
 * RETENTION_STATUS_REFRESH_MINUTES, or at once when a hold is placed or released.
 * Stored in full (hold codes included: it is control-plane data no client can read); what a subject is told
 * is decided when it is read (`describeRetained`).
 */
export const statusSummaryRef = (requestId: string): DocumentReference =>
  db().collection(COLLECTIONS.deletionRequests).doc(requestId).collection("status").doc("summary");

/** Retained items kept on the summary: a 1 MiB document holds about 4,000; the rest are counted. */
export const SUMMARY_MAX_ITEMS = 2_000;

export interface StatusSummary extends StatusSummaryFacts {
  retained: RetainedItem[];
  /** Retained items beyond SUMMARY_MAX_ITEMS, counted but not listed. */
  retainedOmitted: number;
}

type Request = Pick<DeletionRequest, "requestId" | "subject">;

function fromFirestore(data: Record<string, unknown> | undefined): StatusSummary | null {
  const plannedAtMs = toMs(data?.plannedAt);
  if (!data || plannedAtMs === null || !Array.isArray(data.retained)) return null;
  return {
    plannedAtMs,
    policyVersion: typeof data.policyVersion === "string" ? data.policyVersion : "",
    holdFence: typeof data.holdFence === "number" ? data.holdFence : -1,
    retained: data.retained as RetainedItem[],
    retainedOmitted: typeof data.retainedOmitted === "number" ? data.retainedOmitted : 0,
  };
}

/** Plans the subject now and stores the summary. `fence`: the hold fence generation, when already read. */
export async function writeStatusSummary(request: Request, nowMs: number, fence?: number): Promise<StatusSummary> {
  const pol = policy();
  const [plan, holdFence] = await Promise.all([planSubject(request.subject, nowMs), fence ?? readFence()]);
  const summary: StatusSummary = {
    plannedAtMs: nowMs,
    policyVersion: pol.version,
    holdFence,
    retained: plan.retain.slice(0, SUMMARY_MAX_ITEMS),
    retainedOmitted: Math.max(0, plan.retain.length - SUMMARY_MAX_ITEMS),
  };
  const { plannedAtMs, ...rest } = summary;
  // A JSON round trip drops the planner's undefined members, which Firestore refuses.
  const plain = JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
  await statusSummaryRef(request.requestId).set({ ...plain, plannedAt: toTimestamp(plannedAtMs) });
  log.info("status.summary.planned", { requestId: request.requestId, retained: plan.retain.length });
  return summary;
}

/** The summary a status call answers from: the stored one while fresh, else a new plan (stored). */
export async function currentStatusSummary(request: Request, nowMs: number, refreshMs: number): Promise<StatusSummary> {
  const [snap, fence] = await Promise.all([statusSummaryRef(request.requestId).get(), readFence()]);
  const stored = fromFirestore(snap.data());
  if (stored && summaryIsFresh(stored, { nowMs, policyVersion: policy().version, holdFence: fence, refreshMs })) return stored;
  return writeStatusSummary(request, nowMs, fence);
}
