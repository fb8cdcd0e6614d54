import { FieldValue, Timestamp, type Transaction } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence, type EvidenceAppender } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { notFound, preconditionFailed } from "../kernel/errors";
import { db } from "../platform/firestore";
import { log } from "../platform/logs";
import { processorKeys } from "../platform/processors";
import { policy } from "../platform/registry";
import { ackDecision, authenticateCallback, noticeId as noticeIdOf, type AckDecision, type Acknowledgement, type Notice } from "./rules";
import { noticeOf, noticeRef, requestDocRef } from "./store";

/** How an acknowledgement arrived: the webhook's own answer, a signed callback, or a staff member's confirmation. */
export type AckVia = "response" | "callback" | "staff";

/**
 * Records an acknowledgement on a notice read in `tx`, once: the notice becomes ACKNOWLEDGED with the receipt id
 * and time, the request's timeline says so, and a PROCESSOR_ACKNOWLEDGED evidence entry commits with it. A second
 * answer (the same or another receipt) finds the notice acknowledged and changes nothing. `evidence` is the appender
 * opened among the transaction's reads.
 */
export function recordAckInTx(tx: Transaction, n: Notice, ack: Acknowledgement, via: AckVia, actor: Actor, nowMs: number, evidence: EvidenceAppender): void {
  const at = Timestamp.fromMillis(nowMs);
  tx.update(noticeRef(n.noticeId), { state: "ACKNOWLEDGED", acknowledgedAt: at, receiptId: ack.receiptId, acknowledgedVia: via, acknowledgedBy: `${actor.type}:${actor.id}`, lastError: null });
  tx.update(requestDocRef(n.requestId), { timeline: FieldValue.arrayUnion({ at, event: "PROCESSOR_ACKNOWLEDGED", detail: `${n.processor}: receipt ${ack.receiptId} (${via})` }) });
  evidence.append({
    action: "PROCESSOR_ACKNOWLEDGED",
    actor,
    decision: { reason: via === "staff" ? "STAFF_CONFIRMED" : "PROCESSOR_RECEIPT" },
    policyVersion: policy().version,
    atMs: nowMs,
    requestId: n.requestId,
    detail: { processor: n.processor, noticeId: n.noticeId, receiptId: ack.receiptId, via, idempotencyKey: n.idempotencyKey, deadline: new Date(n.deadlineAtMs).toISOString(), late: nowMs > n.deadlineAtMs },
  });
}

/** Records an acknowledgement in a transaction of its own; returns what it did (RECORD: recorded now). */
export async function acknowledgeNotice(ack: Acknowledgement, via: AckVia, actor: Actor, nowMs: number): Promise<AckDecision> {
  const decision = await db().runTransaction(async (tx) => {
    const n = noticeOf(await tx.get(noticeRef(ack.noticeId)));
    const d = ackDecision(n, ack);
    if (d !== "RECORD") return d;
    const evidence = await openEvidence(tx, n!.requestId);
    recordAckInTx(tx, n!, ack, via, actor, nowMs, evidence);
    return d;
  }, EVIDENCE_TX);
  log.info("processor.acknowledged", { noticeId: ack.noticeId, via, outcome: decision });
  return decision;
}

/** What the acknowledgement endpoint answers: an HTTP status and a small JSON body (never why a signature failed). */
export interface CallbackAnswer {
  status: number;
  body: { recorded: boolean; reason: string };
}

/**
 * A processor's signed callback (the ackProcessorNotice endpoint): the body is an acknowledgement, signed with the
 * processor's key in the signature header. It is authenticated before anything is read (processors/rules.ts
 * #authenticateCallback): a body that is not an acknowledgement is 400; a notice id that names no webhook or topic
 * processor of the registry, or a bad, stale or missing signature with that processor's keys, is 401 with nothing
 * read or written. Only then is the notice read, in the transaction that records it: an unknown notice or the wrong
 * idempotency key is 401 and changes nothing; a valid one is recorded once (200, `recorded: false` with
 * ALREADY_ACKNOWLEDGED for the second answer).
 */
export async function handleAckCallback(rawBody: string, signature: string | undefined, nowMs: number): Promise<CallbackAnswer> {
  const refused = (noticeId: string, why: string): CallbackAnswer => {
    log.warn("processor.ack.refused", { noticeId: noticeId.slice(0, 300), why });
    return { status: 401, body: { recorded: false, reason: "ACKNOWLEDGEMENT_REFUSED" } };
  };
  // Against the wall clock (a signature's time is the sender's), whatever business time the caller records at.
  const auth = authenticateCallback(rawBody, signature, policy().registry.processors, processorKeys, Date.now());
  if (!auth.ok) return auth.status === 400 ? { status: 400, body: { recorded: false, reason: auth.reason } } : refused(auth.noticeId, auth.reason);
  const decision = await acknowledgeNotice(auth.ack, "callback", { type: "system", id: `processor:${auth.processor.name}` }, nowMs);
  if (decision === "WRONG_KEY" || decision === "NOT_FOUND") return refused(auth.ack.noticeId, decision);
  return { status: 200, body: { recorded: decision === "RECORD", reason: decision } };
}

/**
 * A staff member confirms that a manual processor (a vendor with no API) erased the subject: the vendor's receipt
 * or ticket id, recorded as the processor's acknowledgement with the staff member as its actor. Only a manual
 * processor's notice: a webhook or topic acknowledges with its own signed receipt. Confirming twice records once.
 */
export async function confirmManualProcessor(input: { requestId: string; processor: string; receiptId: string }, actor: Actor, nowMs: number): Promise<{ recorded: boolean; acknowledgedAt: number }> {
  const id = noticeIdOf(input.requestId, input.processor);
  const n = noticeOf(await noticeRef(id).get());
  if (!n) throw notFound("PROCESSOR_NOTICE_NOT_FOUND", `request ${input.requestId} has no notice for processor ${input.processor}`);
  if (n.kind !== "manual") throw preconditionFailed("NOT_A_MANUAL_PROCESSOR", `${input.processor} is a ${n.kind} processor: it acknowledges with its own signed receipt`);
  const decision = await acknowledgeNotice({ noticeId: id, idempotencyKey: n.idempotencyKey, receiptId: input.receiptId }, "staff", actor, nowMs);
  const after = noticeOf(await noticeRef(id).get());
  return { recorded: decision === "RECORD", acknowledgedAt: after?.acknowledgedAtMs ?? nowMs };
}
