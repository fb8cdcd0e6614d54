import { createHmac, timingSafeEqual } from "node:crypto";
import { hashCanonical } from "../kernel/canonical";
import { DAY_MS } from "../kernel/policy";
import type { Processor } from "../kernel/policy-schema";
import type { RequestState } from "../kernel/request-states";
import { NOTICE_STATES, OPEN_NOTICE_STATES, type NoticeState, type ProcessorStatus } from "../kernel/processor-states";

/**
 * The processors' rules, pure (docs/decisions/0039-processors.md): which processors an erasure notifies, the notice
 * (the outbox entry) and the payload it carries, how a payload and an acknowledgement are signed and checked, and
 * what state a processor is in for a status, the audit and ERASURE_COMPLETE.
 */

export type { Processor };

export { NOTICE_STATES, OPEN_NOTICE_STATES, type NoticeState, type ProcessorStatus };

/** The subject kinds a data map has, as a processor's `receives` names them. */
export type SubjectKind = "user" | "tenant";

/** The processors an erasure of a subject of this kind must reach: those that receive any of its data-map entries. */
export function processorsFor(processors: readonly Processor[], kind: SubjectKind): Processor[] {
  return processors.filter((p) => p.receives[kind].length > 0);
}

/** The outbox entry's id: one per request and processor, so writing it twice is writing it once. */
export const noticeId = (requestId: string, processor: string): string => `${requestId}~${processor}`;

/**
 * The processor a notice id names: what follows its last `~` (a processor's name is kebab-case, so it has none);
 * null when the id has no `~` or nothing after it.
 */
export function processorNameOf(noticeId: string): string | null {
  const i = noticeId.lastIndexOf("~");
  return i < 0 || i === noticeId.length - 1 ? null : noticeId.slice(i + 1);
}

/** The key the processor deduplicates on: the same for every delivery of one notice, and nothing personal. */
export const idempotencyKey = (requestId: string, processor: string): string => `erase-${hashCanonical({ requestId, processor }).slice(0, 40)}`;

/** The outbox entry as stored (`processorNotices/{requestId}~{processor}`), dates in ms. */
export interface Notice {
  noticeId: string;
  requestId: string;
  processor: string;
  kind: Processor["kind"];
  acknowledges: Processor["acknowledges"];
  /** `scopeId`: a scoped user's scope, to find the documents a hold on them holds (never sent to the processor). */
  subject: { type: SubjectKind; id: string; scopeId?: string };
  entries: string[];
  idempotencyKey: string;
  state: NoticeState;
  createdAtMs: number;
  deadlineAtMs: number;
  attempts: number;
  sentAtMs: number | null;
  acknowledgedAtMs: number | null;
  receiptId: string | null;
  lastError: string | null;
}

/**
 * The notice a request's erasure writes for a processor at `nowMs` (the moment the request ends PURGED), with the
 * processor's agreed deadline counted from then. A manual processor's is SENT at once: staff's list is its delivery.
 */
export function newNotice(p: Processor, request: { requestId: string; subject: Notice["subject"] }, nowMs: number): Notice {
  return {
    noticeId: noticeId(request.requestId, p.name),
    requestId: request.requestId,
    processor: p.name,
    kind: p.kind,
    acknowledges: p.acknowledges,
    subject: request.subject,
    entries: [...p.receives[request.subject.type]],
    idempotencyKey: idempotencyKey(request.requestId, p.name),
    state: p.kind === "manual" ? "SENT" : "PENDING",
    createdAtMs: nowMs,
    deadlineAtMs: nowMs + p.deadlineDays * DAY_MS,
    attempts: 0,
    sentAtMs: p.kind === "manual" ? nowMs : null,
    acknowledgedAtMs: null,
    receiptId: null,
    lastError: null,
  };
}

/**
 * The requests among these that can have notices: only a PURGED one, since its notices are written in the
 * transaction that ends it PURGED (and PURGED is final). A status asks for no other's (a group's members still in
 * grace or under a hold would be a query each that finds nothing).
 */
export function notifiedRequestIds(requests: readonly { requestId: string; state: RequestState }[]): string[] {
  return requests.filter((r) => r.state === "PURGED").map((r) => r.requestId);
}

/** The latest agreed deadline of the processors an erasure notifies (null: none): "fully gone by" waits for it. */
export function processorsDeadlineMs(processors: readonly Processor[], kind: SubjectKind, purgedAtMs: number): number | null {
  const days = processorsFor(processors, kind).map((p) => p.deadlineDays);
  return days.length === 0 ? null : purgedAtMs + Math.max(...days) * DAY_MS;
}

/** A processor's state as people read it: an open notice past its deadline is overdue, whatever else it is. */
export function processorStatus(n: Pick<Notice, "state" | "deadlineAtMs">, nowMs: number): ProcessorStatus {
  if (n.state === "ACKNOWLEDGED") return "acknowledged";
  if (nowMs > n.deadlineAtMs) return "overdue";
  return ({ PENDING: "pending", SENT: "sent", FAILED: "failed", HELD: "held" } as const)[n.state];
}

/** The processors still open on a request (not acknowledged), as `name:status`: what ERASURE_COMPLETE records. */
export function openProcessors(notices: readonly Pick<Notice, "processor" | "state" | "deadlineAtMs">[], nowMs: number): string[] {
  return notices.filter((n) => OPEN_NOTICE_STATES.includes(n.state)).map((n) => `${n.processor}:${processorStatus(n, nowMs)}`).sort();
}

/**
 * The payload a processor receives: what it must erase and how to answer, and nothing personal beyond the id it
 * already knows the subject by (a user's uid, a scope's id) and the names of the data-map entries it holds.
 */
export interface NoticePayload {
  type: "erasure";
  version: 1;
  noticeId: string;
  idempotencyKey: string;
  processor: string;
  subject: { type: SubjectKind; id: string };
  entries: string[];
  erasedAt: string;
  deadline: string;
  acknowledge: { by: Processor["acknowledges"] };
}

export function payloadOf(n: Notice): NoticePayload {
  return {
    type: "erasure",
    version: 1,
    noticeId: n.noticeId,
    idempotencyKey: n.idempotencyKey,
    processor: n.processor,
    subject: { type: n.subject.type, id: n.subject.id },
    entries: n.entries,
    erasedAt: new Date(n.createdAtMs).toISOString(),
    deadline: new Date(n.deadlineAtMs).toISOString(),
    acknowledge: { by: n.acknowledges },
  };
}

/** How far a signature's time may be from ours: a replayed acknowledgement older than this is refused. */
export const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

/**
 * Signs a body: `t=<ms>,v1=<hex HMAC-SHA256 of "<ms>.<body>">`. The time is signed with the body, so a captured
 * signature cannot be replayed with another time.
 */
export function sign(body: string, secret: string, atMs: number): string {
  return `t=${atMs},v1=${createHmac("sha256", secret).update(`${atMs}.${body}`).digest("hex")}`;
}

export type SignatureCheck = "VALID" | "MALFORMED" | "STALE" | "MISMATCH";

/**
 * Checks a signature against every key the processor has (during a rotation the first signs and all verify), in
 * constant time, and its time against ours.
 */
export function verifySignature(body: string, header: string | undefined, secrets: readonly string[], nowMs: number): SignatureCheck {
  const m = /^t=(\d{1,16}),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m) return "MALFORMED";
  const atMs = Number(m[1]);
  if (Math.abs(nowMs - atMs) > SIGNATURE_TOLERANCE_MS) return "STALE";
  const given = Buffer.from(m[2]!, "hex");
  for (const s of secrets) {
    const want = createHmac("sha256", s).update(`${atMs}.${body}`).digest();
    if (timingSafeEqual(given, want)) return "VALID";
  }
  return "MISMATCH";
}

/** An acknowledgement: the processor's receipt of one notice (the body of a callback, or of a webhook's 2xx answer). */
export interface Acknowledgement {
  noticeId: string;
  idempotencyKey: string;
  receiptId: string;
}

/** Reads an acknowledgement's JSON body; null when it is not one (a receipt id is 1 to 200 printable characters). */
export function parseAcknowledgement(body: string): Acknowledgement | null {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null) return null;
  const o = v as Record<string, unknown>;
  const text = (x: unknown, max: number) => typeof x === "string" && x.length > 0 && x.length <= max && /^[\x20-\x7E]+$/.test(x);
  if (!text(o.noticeId, 300) || !text(o.idempotencyKey, 100) || !text(o.receiptId, 200)) return null;
  return { noticeId: o.noticeId as string, idempotencyKey: o.idempotencyKey as string, receiptId: o.receiptId as string };
}

/** Why a callback is refused before anything is read (the endpoint answers all of them alike, 401). */
export type CallbackRefusal = "UNKNOWN_PROCESSOR" | "MANUAL_PROCESSOR" | Exclude<SignatureCheck, "VALID">;

export type CallbackAuthentication =
  | { ok: true; ack: Acknowledgement; processor: Processor }
  | { ok: false; status: 400; reason: "MALFORMED_ACKNOWLEDGEMENT" }
  | { ok: false; status: 401; reason: CallbackRefusal; noticeId: string };

/**
 * Authenticates a processor's signed callback from what it carries and the registry alone, before anything is read:
 * the body must be an acknowledgement; the notice id in it names the processor, whose keys (`keysOf`, asked only for
 * a registered webhook or topic processor) must verify the signature at `nowMs`. The stored notice is looked at only
 * after this passes, so an unauthenticated caller costs no read and learns nothing of which notices exist.
 */
export function authenticateCallback(
  rawBody: string,
  signature: string | undefined,
  processors: readonly Processor[],
  keysOf: (p: Processor) => readonly string[],
  nowMs: number,
): CallbackAuthentication {
  const ack = parseAcknowledgement(rawBody);
  if (!ack) return { ok: false, status: 400, reason: "MALFORMED_ACKNOWLEDGEMENT" };
  const refused = (reason: CallbackRefusal): CallbackAuthentication => ({ ok: false, status: 401, reason, noticeId: ack.noticeId });
  const name = processorNameOf(ack.noticeId);
  const p = processors.find((x) => x.name === name);
  if (!p) return refused("UNKNOWN_PROCESSOR");
  // A manual processor has no key: staff confirm it in the console, never a callback.
  if (p.kind === "manual") return refused("MANUAL_PROCESSOR");
  const check = verifySignature(rawBody, signature, keysOf(p), nowMs);
  return check === "VALID" ? { ok: true, ack, processor: p } : refused(check);
}

/** What recording an acknowledgement does to a notice: record it, or nothing (a second answer, or the wrong notice). */
export type AckDecision = "RECORD" | "ALREADY_ACKNOWLEDGED" | "WRONG_KEY" | "NOT_FOUND";

export function ackDecision(n: Pick<Notice, "state" | "idempotencyKey"> | null, ack: Pick<Acknowledgement, "idempotencyKey">): AckDecision {
  if (n === null) return "NOT_FOUND";
  if (n.idempotencyKey !== ack.idempotencyKey) return "WRONG_KEY";
  if (n.state === "ACKNOWLEDGED") return "ALREADY_ACKNOWLEDGED";
  return "RECORD";
}

/**
 * Why staff may not send a notice again (null: they may). Only a FAILED notice is sent again: every attempt the queue
 * allowed failed, and the cause (an endpoint down for hours, a wrong URL or key) may be fixed since. A manual
 * processor's notice is confirmed by staff, never sent; a notice in any other state is on its way or answered.
 */
export function resendRefusal(n: Pick<Notice, "kind" | "state"> | null): "PROCESSOR_NOTICE_NOT_FOUND" | "MANUAL_PROCESSOR_NOT_SENT" | "NOTICE_NOT_FAILED" | null {
  if (!n) return "PROCESSOR_NOTICE_NOT_FOUND";
  if (n.kind === "manual") return "MANUAL_PROCESSOR_NOT_SENT";
  if (n.state !== "FAILED") return "NOTICE_NOT_FAILED";
  return null;
}
