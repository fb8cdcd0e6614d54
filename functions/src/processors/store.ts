import { Timestamp, type DocumentReference, type DocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { policy } from "../platform/registry";
import { NOTICE_STATES, type Notice, type NoticeState, type Processor } from "./rules";

/** A deletion request (the processors' timeline entries go on it); the same document as purge/store.ts#requestRef. */
export const requestDocRef = (requestId: string): DocumentReference => db().collection(COLLECTIONS.deletionRequests).doc(requestId);

/** The processors' outbox (`processorNotices/{requestId}~{processor}`), in the governed database of the request. */
export const noticeRef = (noticeId: string): DocumentReference => db().collection(COLLECTIONS.processorNotices).doc(noticeId);

const ts = (ms: number | null): Timestamp | null => (ms === null ? null : Timestamp.fromMillis(ms));

/** A notice as stored: dates as Timestamps (the overdue query orders on `deadlineAt`). */
export function noticeFields(n: Notice): Record<string, unknown> {
  return {
    requestId: n.requestId,
    processor: n.processor,
    kind: n.kind,
    acknowledges: n.acknowledges,
    subject: n.subject,
    entries: n.entries,
    idempotencyKey: n.idempotencyKey,
    state: n.state,
    createdAt: ts(n.createdAtMs),
    deadlineAt: ts(n.deadlineAtMs),
    attempts: n.attempts,
    sentAt: ts(n.sentAtMs),
    acknowledgedAt: ts(n.acknowledgedAtMs),
    receiptId: n.receiptId,
    lastError: n.lastError,
    // The relay (sweep.ts) queues a notice once this has passed: at once for a new one (a manual one is never queued).
    queuedUntil: n.kind === "manual" ? null : ts(n.createdAtMs),
  };
}

/** Reads a stored notice back; null when there is none. */
export function noticeOf(snap: DocumentSnapshot): Notice | null {
  if (!snap.exists) return null;
  const g = (k: string): unknown => snap.get(k);
  const state = g("state");
  const subject = g("subject") as { type?: unknown; id?: unknown; scopeId?: unknown } | undefined;
  return {
    noticeId: snap.id,
    requestId: String(g("requestId")),
    processor: String(g("processor")),
    kind: g("kind") as Notice["kind"],
    acknowledges: g("acknowledges") as Notice["acknowledges"],
    subject: { type: subject?.type === "tenant" ? "tenant" : "user", id: typeof subject?.id === "string" ? subject.id : "", ...(typeof subject?.scopeId === "string" ? { scopeId: subject.scopeId } : {}) },
    entries: Array.isArray(g("entries")) ? (g("entries") as unknown[]).map(String) : [],
    idempotencyKey: String(g("idempotencyKey")),
    state: (NOTICE_STATES as readonly unknown[]).includes(state) ? (state as NoticeState) : "PENDING",
    createdAtMs: toMs(g("createdAt")) ?? 0,
    deadlineAtMs: toMs(g("deadlineAt")) ?? 0,
    attempts: typeof g("attempts") === "number" ? (g("attempts") as number) : 0,
    sentAtMs: toMs(g("sentAt")),
    acknowledgedAtMs: toMs(g("acknowledgedAt")),
    receiptId: typeof g("receiptId") === "string" ? (g("receiptId") as string) : null,
    lastError: typeof g("lastError") === "string" ? (g("lastError") as string) : null,
  };
}

/** The notices of one request, by processor name (index: the single-field index on requestId). */
export async function noticesOfRequest(requestId: string, tx?: Transaction): Promise<Notice[]> {
  const q = db().collection(COLLECTIONS.processorNotices).where("requestId", "==", requestId);
  const snap = tx ? await tx.get(q) : await q.get();
  return snap.docs.map(noticeOf).filter((n): n is Notice => n !== null).sort((a, b) => a.processor.localeCompare(b.processor));
}

/** The registry's processor a notice is for; a notice whose processor the registry no longer has fails loudly. */
export function processorOf(n: Pick<Notice, "processor" | "noticeId">): Processor {
  const p = policy().registry.processors.find((x) => x.name === n.processor);
  if (!p) throw new Error(`PROCESSOR_UNKNOWN: notice ${n.noticeId} is for processor ${n.processor}, which the enforced registry does not have`);
  return p;
}
