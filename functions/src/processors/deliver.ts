import { FieldValue, Timestamp, type Transaction } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence, type EvidenceAppender } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { activeHoldsCoveringInTx } from "../holds/index";
import { fillTemplate } from "../kernel/paths";
import { db } from "../platform/firestore";
import { log } from "../platform/logs";
import { postWebhook, processorKeys, publishNotice, webhookUrl, type WebhookAnswer } from "../platform/processors";
import { policy } from "../platform/registry";
import { recordAckInTx } from "./ack";
import { newNotice, parseAcknowledgement, payloadOf, processorsFor, sign, verifySignature, type Acknowledgement, type Notice, type Processor, type SubjectKind } from "./rules";
import { noticeFields, noticeOf, noticeRef, processorOf, requestDocRef } from "./store";

const SYSTEM: Actor = { type: "system", id: "deliverProcessorNotice" };

/**
 * Writes, inside the transaction that ends a request PURGED, one notice per processor that receives any of the
 * subject's data-map entries, and one PROCESSOR_NOTICES_WRITTEN evidence entry naming them: the outbox entry and
 * the state it follows from commit together, so an erasure can never end without its processors' notices, nor a
 * notice exist for an erasure that did not happen. `existing` are the notice ids read in the same transaction
 * (a retried finalize writes nothing twice). Returns the processors written.
 */
export function writeNoticesInTx(tx: Transaction, request: { requestId: string; subject: Notice["subject"] }, existing: ReadonlySet<string>, nowMs: number, evidence: EvidenceAppender, actor: Actor): string[] {
  const written: string[] = [];
  for (const p of processorsFor(policy().registry.processors, request.subject.type)) {
    const n = newNotice(p, request, nowMs);
    if (existing.has(n.noticeId)) continue;
    tx.create(noticeRef(n.noticeId), noticeFields(n));
    written.push(p.name);
  }
  if (written.length === 0) return written;
  evidence.append({
    action: "PROCESSOR_NOTICES_WRITTEN",
    actor,
    decision: { reason: "ERASURE_REACHES_PROCESSORS" },
    policyVersion: policy().version,
    atMs: nowMs,
    requestId: request.requestId,
    detail: { processors: written.join(","), subjectType: request.subject.type },
  });
  return written;
}

/** The notice ids of a request's processors, read in the transaction that may write them. */
export async function existingNoticesInTx(tx: Transaction, requestId: string, kind: SubjectKind): Promise<Set<string>> {
  const ids = processorsFor(policy().registry.processors, kind).map((p) => newNotice(p, { requestId, subject: { type: kind, id: "-" } }, 0).noticeId);
  if (ids.length === 0) return new Set();
  const snaps = await tx.getAll(...ids.map((id) => noticeRef(id)));
  return new Set(snaps.filter((s) => s.exists).map((s) => s.id));
}

/**
 * The documents whose hold keeps a processor's notice back: for each entry it receives, the document a `doc` entry
 * names and the document a storage entry's objects are held with (`heldWith`), and for a scope's closure the scope's
 * record. A hold on any of them (or an ancestor) holds the notice: a litigation hold on the subject means the vendor
 * keeps its copy too.
 */
export function heldPathsOf(n: Pick<Notice, "subject" | "entries">): string[] {
  const registry = policy().registry;
  const scope = registry.subjects?.scope;
  const vars: Record<string, string> =
    n.subject.type === "user" ? { uid: n.subject.id, ...(scope && n.subject.scopeId ? { [scope.key]: n.subject.scopeId } : {}) } : scope ? { [scope.key]: n.subject.id } : {};
  const paths = new Set<string>();
  if (n.subject.type === "tenant" && scope) paths.add(fillTemplate(scope.record, vars));
  for (const id of n.entries) {
    const e = (registry.dataMap[n.subject.type] ?? []).find((x) => x.id === id);
    const template = e?.kind === "doc" ? e.path : e?.kind === "storage" ? e.heldWith : undefined;
    // A template with a variable this subject does not carry (another subject kind's) names no document of theirs.
    if (template === undefined || [...template.matchAll(/\{([A-Za-z]+)\}/g)].some((m) => vars[m[1]!] === undefined)) continue;
    paths.add(fillTemplate(template, vars));
  }
  return [...paths].sort();
}

/** The first active hold covering what a notice's processor receives, read in `tx`. */
async function holdOnInTx(tx: Transaction, n: Notice): Promise<{ holdId: string; reasonCode: string; path: string } | null> {
  for (const path of heldPathsOf(n)) {
    const [h] = await activeHoldsCoveringInTx(tx, path);
    if (h) return { holdId: h.holdId, reasonCode: h.reasonCode, path };
  }
  return null;
}

export type DeliveryOutcome =
  /** Delivered; the processor acknowledges later (a callback), or a topic took it. */
  | "SENT"
  /** Delivered and acknowledged by the webhook's own signed answer. */
  | "ACKNOWLEDGED"
  /** Nothing to do: acknowledged, failed for good, already sent, a manual processor's, or no such notice. */
  | "NOTHING_TO_DO"
  /** A hold covers what the processor receives: not sent (the sweep tries again after the release). */
  | "HELD"
  /** This attempt failed and it was the queue's last: FAILED, with its evidence. */
  | "FAILED"
  /** This attempt failed; the queue retries it with backoff. */
  | "RETRY";

export interface DeliveryOptions {
  /** The clock (a test moves it). */
  nowMs?: () => number;
  /** Whether the queue will not try this task again (the task's retry count has reached its maxAttempts). */
  finalAttempt?: boolean;
}

/** Why one attempt failed: a short code, stored on the notice and in the evidence (never a processor's text). */
export type AttemptError = "TIMEOUT" | "NETWORK" | `HTTP_${number}` | "RECEIPT_UNSIGNED" | "RECEIPT_FORGED" | "RECEIPT_MALFORMED" | "RECEIPT_FOR_ANOTHER_NOTICE" | "PUBLISH_FAILED";

/**
 * Delivers one notice (the deliverProcessorNotice task): in a transaction, the notice is read, a hold on what its
 * processor receives stops it (HELD, once, with PROCESSOR_DELIVERY_HELD), and the attempt is counted; then the
 * signed payload goes out (a webhook POST, or a Pub/Sub publish) outside any transaction; then, in a second
 * transaction, the outcome is recorded: SENT with PROCESSOR_NOTICE_SENT, and for a webhook that acknowledges in its
 * answer, the receipt once its signature checks (PROCESSOR_ACKNOWLEDGED, in the same commit). A failed attempt is
 * RETRY (the task throws and the queue backs off), or FAILED with PROCESSOR_DELIVERY_FAILED on the last attempt.
 * Two deliveries of one task may both send: the processor deduplicates on the idempotency key, and the notice
 * records one acknowledgement.
 */
export async function deliverNotice(noticeId: string, opts: DeliveryOptions = {}): Promise<{ outcome: DeliveryOutcome; error?: AttemptError }> {
  const now = opts.nowMs ?? Date.now;
  const start = await db().runTransaction(async (tx) => {
    const n = noticeOf(await tx.get(noticeRef(noticeId)));
    if (!n || n.kind === "manual" || (n.state !== "PENDING" && n.state !== "HELD")) return null;
    const hold = await holdOnInTx(tx, n);
    if (hold) {
      if (n.state !== "HELD") {
        const evidence = await openEvidence(tx, n.requestId);
        const at = Timestamp.fromMillis(now());
        tx.update(noticeRef(noticeId), { state: "HELD", heldBy: hold.holdId, heldAt: at });
        tx.update(requestDocRef(n.requestId), { timeline: FieldValue.arrayUnion({ at, event: "PROCESSOR_DELIVERY_HELD", detail: `${n.processor}: hold ${hold.holdId} (${hold.reasonCode})` }) });
        evidence.append({ action: "PROCESSOR_DELIVERY_HELD", actor: SYSTEM, decision: { reason: "LEGAL_HOLD" }, policyVersion: policy().version, atMs: now(), requestId: n.requestId, holdId: hold.holdId, paths: [hold.path], detail: { processor: n.processor, noticeId } });
      }
      return "HELD" as const;
    }
    tx.update(noticeRef(noticeId), { state: "PENDING", attempts: FieldValue.increment(1), lastAttemptAt: Timestamp.fromMillis(now()), heldBy: FieldValue.delete() });
    return { ...n, attempts: n.attempts + 1 };
  }, EVIDENCE_TX);
  if (start === null) return { outcome: "NOTHING_TO_DO" };
  if (start === "HELD") {
    log.info("processor.notice.held", { noticeId });
    return { outcome: "HELD" };
  }
  const p = processorOf(start);
  const sent = await send(start, p);
  return recordOutcome(start, p, sent, now(), opts.finalAttempt === true);
}

type Sent = { ok: true; ack: Acknowledgement | null; detail: string } | { ok: false; error: AttemptError };

/** One attempt: the payload signed with the processor's first key, sent its way, and what came back. */
async function send(n: Notice, p: Processor): Promise<Sent> {
  const keys = processorKeys(p);
  const body = JSON.stringify(payloadOf(n));
  // Signatures carry the wall clock, whatever business time a job runs at: the other side checks them against its own.
  const headers = { signature: sign(body, keys[0]!, Date.now()), idempotencyKey: n.idempotencyKey };
  if (p.kind === "pubsub") {
    try {
      const messageId = await publishNotice(p.topic!, body, headers);
      return { ok: true, ack: null, detail: `message ${messageId}` };
    } catch {
      return { ok: false, error: "PUBLISH_FAILED" };
    }
  }
  // A bad endpoint setting is a configuration error, not a network failure: it throws here, loudly, unretried as NETWORK.
  const url = webhookUrl(p);
  let answer: WebhookAnswer;
  try {
    answer = await postWebhook(url, body, headers);
  } catch (err) {
    const name = (err as { name?: string }).name;
    return { ok: false, error: name === "TimeoutError" || name === "AbortError" ? "TIMEOUT" : "NETWORK" };
  }
  if (answer.status < 200 || answer.status > 299) return { ok: false, error: `HTTP_${answer.status}` };
  if (p.acknowledges !== "response") return { ok: true, ack: null, detail: `HTTP ${answer.status}` };
  // The answer is the receipt: it counts only when signed with the processor's key, for this very notice.
  if (answer.signature === undefined) return { ok: false, error: "RECEIPT_UNSIGNED" };
  if (verifySignature(answer.body, answer.signature, keys, Date.now()) !== "VALID") return { ok: false, error: "RECEIPT_FORGED" };
  const ack = parseAcknowledgement(answer.body);
  if (!ack) return { ok: false, error: "RECEIPT_MALFORMED" };
  if (ack.noticeId !== n.noticeId || ack.idempotencyKey !== n.idempotencyKey) return { ok: false, error: "RECEIPT_FOR_ANOTHER_NOTICE" };
  return { ok: true, ack, detail: `HTTP ${answer.status}` };
}

/** Records an attempt's outcome in a transaction that reads the notice again (a callback may have come first). */
async function recordOutcome(n: Notice, p: Processor, sent: Sent, nowMs: number, finalAttempt: boolean): Promise<{ outcome: DeliveryOutcome; error?: AttemptError }> {
  const result = await db().runTransaction(async (tx) => {
    const cur = noticeOf(await tx.get(noticeRef(n.noticeId)));
    if (!cur) return { outcome: "NOTHING_TO_DO" as const };
    const evidence = await openEvidence(tx, n.requestId);
    const at = Timestamp.fromMillis(nowMs);
    const base = { policyVersion: policy().version, atMs: nowMs, requestId: n.requestId, actor: SYSTEM };
    if (!sent.ok) {
      if (cur.state !== "PENDING") return { outcome: "NOTHING_TO_DO" as const };
      if (!finalAttempt) {
        tx.update(noticeRef(n.noticeId), { lastError: sent.error });
        return { outcome: "RETRY" as const, error: sent.error };
      }
      tx.update(noticeRef(n.noticeId), { state: "FAILED", lastError: sent.error, failedAt: at });
      tx.update(requestDocRef(n.requestId), { timeline: FieldValue.arrayUnion({ at, event: "PROCESSOR_DELIVERY_FAILED", detail: `${p.name}: ${sent.error} after ${n.attempts} attempts` }) });
      evidence.append({ ...base, action: "PROCESSOR_DELIVERY_FAILED", decision: { reason: sent.error }, counts: { attempts: n.attempts }, detail: { processor: p.name, noticeId: n.noticeId } });
      return { outcome: "FAILED" as const, error: sent.error };
    }
    if (cur.state === "PENDING") {
      tx.update(noticeRef(n.noticeId), { state: "SENT", sentAt: at, lastError: null });
      tx.update(requestDocRef(n.requestId), { timeline: FieldValue.arrayUnion({ at, event: "PROCESSOR_NOTICE_SENT", detail: `${p.name} (${p.kind})` }) });
      evidence.append({ ...base, action: "PROCESSOR_NOTICE_SENT", decision: { reason: "DELIVERED" }, counts: { attempts: n.attempts }, detail: { processor: p.name, noticeId: n.noticeId, kind: p.kind, answer: sent.detail, idempotencyKey: n.idempotencyKey } });
    }
    if (sent.ack && cur.state !== "ACKNOWLEDGED") {
      recordAckInTx(tx, { ...cur, state: "SENT" }, sent.ack, "response", { type: "system", id: `processor:${p.name}` }, nowMs, evidence);
      return { outcome: "ACKNOWLEDGED" as const };
    }
    return { outcome: cur.state === "PENDING" ? ("SENT" as const) : ("NOTHING_TO_DO" as const) };
  }, EVIDENCE_TX);
  if (result.outcome === "RETRY" || result.outcome === "FAILED") log.warn("processor.notice.failed", { noticeId: n.noticeId, error: result.error ?? null, attempts: n.attempts, final: result.outcome === "FAILED" });
  else log.info("processor.notice.sent", { noticeId: n.noticeId, outcome: result.outcome });
  return result;
}
