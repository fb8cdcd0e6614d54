import type { ProcessorView } from "../contract/processors";
import { policy } from "../platform/registry";
import { processorStatus } from "./rules";
import { noticesOfRequest } from "./store";

export type { ProcessorView };

const iso = (ms: number) => new Date(ms).toISOString();

/** The notices of these requests as a status shows them, by request then processor. */
export async function processorViews(requestIds: readonly string[], nowMs: number): Promise<ProcessorView[]> {
  if (policy().registry.processors.length === 0 || requestIds.length === 0) return [];
  const notices = (await Promise.all(requestIds.map((id) => noticesOfRequest(id)))).flat();
  return notices.map((n) => ({
    processor: n.processor,
    kind: n.kind,
    status: processorStatus(n, nowMs),
    requestId: n.requestId,
    deadline: iso(n.deadlineAtMs),
    sentAt: n.sentAtMs === null ? null : iso(n.sentAtMs),
    acknowledgedAt: n.acknowledgedAtMs === null ? null : iso(n.acknowledgedAtMs),
    receiptId: n.receiptId,
    attempts: n.attempts,
    lastError: n.lastError,
  }));
}
