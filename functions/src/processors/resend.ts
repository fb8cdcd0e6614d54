import { FieldValue, Timestamp } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { hashCanonical } from "../kernel/canonical";
import { notFound, preconditionFailed } from "../kernel/errors";
import { db } from "../platform/firestore";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { noticeId as noticeIdOf, resendRefusal } from "./rules";
import { noticeOf, noticeRef, requestDocRef } from "./store";

/**
 * Sends a FAILED notice again, at staff's word and with their written reason (docs/decisions/0039-processors.md). The
 * notice goes back to PENDING, due now: the next relay queues it under a new task id, with the queue's full retries,
 * and a hold that covers it by then keeps it HELD as before. Its deadline stays the one the processor agreed to, so
 * a late resend is still flagged overdue. PROCESSOR_NOTICE_RESENT evidence commits with the change; a refusal
 * changes nothing.
 */
export async function resendFailedNotice(input: { requestId: string; processor: string; reason: string }, actor: Actor, nowMs: number): Promise<{ noticeId: string }> {
  const noticeId = noticeIdOf(input.requestId, input.processor);
  await db().runTransaction(async (tx) => {
    const n = noticeOf(await tx.get(noticeRef(noticeId)));
    const refusal = resendRefusal(n);
    if (refusal === "PROCESSOR_NOTICE_NOT_FOUND") throw notFound(refusal, `request ${input.requestId} has no notice for processor ${input.processor}`);
    if (refusal === "MANUAL_PROCESSOR_NOT_SENT") throw preconditionFailed(refusal, `${input.processor} is a manual processor: staff confirm it, nothing is sent`);
    if (refusal !== null) throw preconditionFailed(refusal, `the notice to ${input.processor} is ${n!.state}, not FAILED: there is nothing to send again`);
    const evidence = await openEvidence(tx, input.requestId);
    const at = Timestamp.fromMillis(nowMs);
    tx.update(noticeRef(noticeId), { state: "PENDING", queuedUntil: at, resentAt: at, resentBy: `${actor.type}:${actor.id}`, failedAt: FieldValue.delete() });
    tx.update(requestDocRef(input.requestId), { timeline: FieldValue.arrayUnion({ at, event: "PROCESSOR_NOTICE_RESENT", detail: `${input.processor}: ${input.reason}` }) });
    evidence.append({
      action: "PROCESSOR_NOTICE_RESENT",
      actor,
      decision: { reason: "STAFF_RESENT" },
      policyVersion: policy().version,
      atMs: nowMs,
      requestId: input.requestId,
      detail: { processor: input.processor, noticeId, reasonText: input.reason, reasonHash: hashCanonical({ resendReason: input.reason }), lastError: n!.lastError ?? null, attempts: n!.attempts },
    });
  }, EVIDENCE_TX);
  log.info("processor.notice.resent", { noticeId, by: actor.id });
  return { noticeId };
}
