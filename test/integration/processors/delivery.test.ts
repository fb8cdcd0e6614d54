/**
 * An erasure reaches its processors (docs/decisions/0039-processors.md), on AtlasMart's registry: the search index
 * (a webhook that acknowledges in its answer), the email platform (a Pub/Sub topic, acknowledging by callback) and
 * the payment provider (manual: staff confirm). The webhook is a real HTTP server on the loopback, the topic the real
 * Pub/Sub emulator; the delivery task's body runs in-process, called as Cloud Tasks calls it (again after a failure,
 * the last time with its final attempt).
 */
import { PubSub, type Message, type Subscription } from "@google-cloud/pubsub";
import { Timestamp } from "firebase-admin/firestore";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { confirmProcessorNoticeHandler } from "../../../functions/src/entrypoints/callable/confirm-processor-notice";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { DELIVERY_RETRY } from "../../../functions/src/entrypoints/tasks/deliver-processor-notice";
import { scanRetention } from "../../../functions/src/audit/scan";
import { releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { policy } from "../../../functions/src/platform/registry";
import { deliverNotice, handleAckCallback, resendFailedNotice, sweepProcessorNotices, type NoticeTask } from "../../../functions/src/processors/index";
import { recordErasureCompletions, runNightlyPurge } from "../../../functions/src/purge/index";
import { idempotencyKey, newNotice, sign } from "../../../functions/src/processors/rules";
import { noticeFields } from "../../../functions/src/processors/store";
import { noticeTaskId, QUEUEING_IN_FLIGHT } from "../../../functions/src/processors/sweep";
import { PROJECT_ID, db } from "../../helpers/emulator";
import { keyOf, startPubSubEmulator, Webhook } from "../../helpers/processors";
import { AFTER_GRACE, evidence, expectChainVerifies, hold, putCustomer, requestDeletion, reset, runOptions } from "../purge/support";

const SEARCH = "search-index";
const EMAIL = "email-platform";
const DESK = "payment-provider";
const SEARCH_KEY = () => keyOf("RETENTION_PROCESSOR_SEARCH_INDEX_KEY");
const EMAIL_KEY = () => keyOf("RETENTION_PROCESSOR_EMAIL_PLATFORM_KEY");
const staff = { uid: "c-2001", tenantId: null, roles: ["compliance" as const] };

const notice = async (requestId: string, processor: string) => (await db().doc(`processorNotices/${requestId}~${processor}`).get()).data()!;
const actions = async (action: string) => (await evidence()).filter((e) => e.action === action);
const receipt = (requestId: string, processor: string, receiptId: string) => JSON.stringify({ noticeId: `${requestId}~${processor}`, idempotencyKey: idempotencyKey(requestId, processor), receiptId });
const status = (requestId: string, nowMs: number) => getDeletionStatusHandler({ requestId }, staff, { nowMs, refreshMs: DAY_MS });
const processorsOf = async (requestId: string, nowMs: number) => Object.fromEntries(((await status(requestId, nowMs)).processors ?? []).map((p) => [p.processor, p.status]));

/**
 * Runs `work` and returns the processor-notice paths the engine touched meanwhile: every reference to the
 * processorNotices collection or one of its documents goes through the engine's Firestore (db(), the one the helpers
 * share), whether it is then read alone, in a transaction or in a batch.
 */
async function noticeAccessDuring(work: () => Promise<unknown>): Promise<string[]> {
  const touched: string[] = [];
  const f = db();
  const collection = vi.spyOn(f, "collection");
  const doc = vi.spyOn(f, "doc");
  try {
    await work();
  } finally {
    for (const [path] of [...collection.mock.calls, ...doc.mock.calls]) if (path.startsWith("processorNotices")) touched.push(path);
    collection.mockRestore();
    doc.mockRestore();
  }
  return touched;
}

/** What Cloud Tasks does with one task: delivers it, again after each failure, up to the queue's maxAttempts. */
async function deliverAsTheQueueDoes(noticeId: string, maxAttempts: number = DELIVERY_RETRY.maxAttempts) {
  const outcomes: string[] = [];
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const r = await deliverNotice(noticeId, { finalAttempt: attempt + 1 >= maxAttempts, nowMs: () => AFTER_GRACE });
    outcomes.push(r.error ? `${r.outcome}:${r.error}` : r.outcome);
    if (r.outcome !== "RETRY") break;
  }
  return outcomes;
}

/** The first message on the email platform's subscription for this notice (others are acknowledged and passed over). */
function received(noticeId: string): Promise<Message> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      subscription.removeListener("message", onMessage);
      reject(new Error(`no message for ${noticeId} on the topic in 15 s`));
    }, 15_000);
    const onMessage = (m: Message) => {
      m.ack();
      if ((JSON.parse(m.data.toString()) as { noticeId?: string }).noticeId !== noticeId) return;
      clearTimeout(timer);
      subscription.removeListener("message", onMessage);
      resolve(m);
    };
    subscription.on("message", onMessage);
  });
}

/** A customer erased: the request is PURGED and its notices are written. */
async function erased(uid: string): Promise<string> {
  await putCustomer(uid, { messages: 1, activity: 1 });
  const requestId = await requestDeletion(uid);
  await runNightlyPurge(runOptions());
  expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
  return requestId;
}

const webhook = new Webhook();
let pubsub: { stop: () => Promise<void> };
let subscription: Subscription;

beforeAll(async () => {
  process.env.RETENTION_PROCESSOR_ENDPOINTS = `${SEARCH}=${await webhook.start()}`;
  pubsub = await startPubSubEmulator();
  const client = new PubSub({ projectId: PROJECT_ID });
  const [topic] = await client.createTopic("retention-erasures-email");
  [subscription] = await topic.createSubscription("email-platform-erasures");
}, 60_000);

afterAll(async () => {
  delete process.env.RETENTION_PROCESSOR_ENDPOINTS;
  delete process.env.RETENTION_PROCESSOR_TIMEOUT_SECONDS;
  await webhook.stop();
  await subscription?.close();
  await pubsub?.stop();
});

beforeEach(async () => {
  await reset();
  webhook.received.length = 0;
});

afterEach(() => {
  delete process.env.RETENTION_PROCESSOR_TIMEOUT_SECONDS;
});

describe("the erasure writes its processors' notices with its PURGED", () => {
  it("one per processor, in the transaction that ends the request, with evidence; the date waits for their deadlines", async () => {
    const requestId = await erased("u-7001");
    expect(await notice(requestId, SEARCH)).toMatchObject({ state: "PENDING", kind: "webhook", subject: { type: "user", id: "u-7001", scopeId: "t-acme" }, entries: ["profile", "directory"], attempts: 0 });
    expect(await notice(requestId, EMAIL)).toMatchObject({ state: "PENDING", kind: "pubsub", entries: ["profile", "orders"] });
    expect(await notice(requestId, DESK)).toMatchObject({ state: "SENT", kind: "manual", entries: ["orders"] });
    const written = await actions("PROCESSOR_NOTICES_WRITTEN");
    expect(written.map((e) => e.detail?.processors)).toEqual([`${SEARCH},${EMAIL},${DESK}`]);
    // Committed with the request's end: the request's PURGE_VERIFIED and the notices' entry are one commit's.
    const verified = (await actions("PURGE_VERIFIED")).find((e) => e.requestId === requestId || e.detail?.requestId === requestId) ?? (await actions("PURGE_VERIFIED"))[0]!;
    expect(written[0]!.shard).toBe(verified.shard);
    expect(written[0]!.seq).toBe(verified.seq + 1);
    // A second run changes nothing.
    await runNightlyPurge(runOptions({ nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    expect(await actions("PROCESSOR_NOTICES_WRITTEN")).toHaveLength(1);
    const s = await status(requestId, AFTER_GRACE);
    expect(Object.fromEntries((s.processors ?? []).map((p) => [p.processor, p.status]))).toEqual({ [SEARCH]: "pending", [EMAIL]: "pending", [DESK]: "sent" });
    // 35 days of backups against 30 days the email platform and the payment provider agreed to: the later wins.
    expect(Date.parse(s.fullyGoneBy!)).toBe(AFTER_GRACE + 35 * DAY_MS);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("fullyGoneByBasis.processorsDeadline")).toEqual(Timestamp.fromMillis(AFTER_GRACE + 30 * DAY_MS));
  });

  it("the relay queues each due notice once, never a manual one, and again only after the queue's retries are spent", async () => {
    const requestId = await erased("u-7002");
    const queued: { task: NoticeTask; id: string }[] = [];
    const enqueue = (task: NoticeTask, id: string) => {
      queued.push({ task, id });
      return Promise.resolve();
    };
    expect(await sweepProcessorNotices({ nowMs: AFTER_GRACE, enqueue })).toEqual({ queued: 2 });
    expect(queued.map((q) => q.task.noticeId).sort()).toEqual([`${requestId}~${EMAIL}`, `${requestId}~${SEARCH}`]);
    expect(await sweepProcessorNotices({ nowMs: AFTER_GRACE + 60 * 60_000, enqueue })).toEqual({ queued: 0 });
    expect(await sweepProcessorNotices({ nowMs: AFTER_GRACE + 2 * 60 * 60_000, enqueue })).toEqual({ queued: 2 });
    expect(new Set(queued.map((q) => q.id)).size).toBe(4);
  });

  it("the relay queues a backlog a few at a time, each notice once under its own task id; one that fails to queue stops none of the others", async () => {
    const search = policy().registry.processors.find((p) => p.name === SEARCH)!;
    const ids: string[] = [];
    for (let i = 0; i < 3 * QUEUEING_IN_FLIGHT; i++) {
      const n = newNotice(search, { requestId: `r-backlog-${String(i).padStart(2, "0")}`, subject: { type: "user", id: `u-b${i}` } }, AFTER_GRACE - DAY_MS);
      await db().doc(`processorNotices/${n.noticeId}`).create(noticeFields(n));
      ids.push(n.noticeId);
    }
    // Each Cloud Tasks call is held until as many are in flight as the relay allows (or 10 s pass, which fails the
    // test): a relay that queued one at a time would never get there.
    let inFlight = 0;
    let most = 0;
    let full!: () => void;
    const reached = new Promise<void>((r) => (full = r));
    const tooFew = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`only ${most} queued at once in 10 s`)), 10_000).unref());
    const queued: { task: NoticeTask; id: string }[] = [];
    const failing = ids[5]!;
    const enqueue = async (task: NoticeTask, id: string) => {
      most = Math.max(most, ++inFlight);
      if (inFlight === QUEUEING_IN_FLIGHT) full();
      try {
        await Promise.race([reached, tooFew]);
        if (task.noticeId === failing) throw new Error("Cloud Tasks unavailable");
        queued.push({ task, id });
      } finally {
        inFlight--;
      }
    };
    await expect(sweepProcessorNotices({ nowMs: AFTER_GRACE, enqueue })).rejects.toThrow("Cloud Tasks unavailable");
    expect(most).toBe(QUEUEING_IN_FLIGHT);
    expect(queued.map((q) => q.task.noticeId).sort()).toEqual(ids.filter((id) => id !== failing));
    expect(queued.map((q) => q.id)).toEqual(queued.map((q) => noticeTaskId(q.task.noticeId, AFTER_GRACE - DAY_MS)));
    // The ones queued moved on; the one that failed is due still, and the schedule's retry queues it alone.
    expect((await notice("r-backlog-00", SEARCH)).queuedUntil).toEqual(Timestamp.fromMillis(AFTER_GRACE + 2 * 3_600_000));
    expect((await db().doc(`processorNotices/${failing}`).get()).get("queuedUntil")).toEqual(Timestamp.fromMillis(AFTER_GRACE - DAY_MS));
    queued.length = 0;
    expect(await sweepProcessorNotices({ nowMs: AFTER_GRACE + 60_000, enqueue: (task, id) => Promise.resolve(void queued.push({ task, id })) })).toEqual({ queued: 1 });
    expect(queued).toEqual([{ task: { noticeId: failing }, id: noticeTaskId(failing, AFTER_GRACE - DAY_MS) }]);
  });
});

describe("a webhook processor", () => {
  it("fails twice, then succeeds: the queue's retries deliver it, with one idempotency key, and its receipt is recorded once", async () => {
    const requestId = await erased("u-7101");
    webhook.answer = (_r, n) => (n < 2 ? { status: 503 } : { status: 200, body: receipt(requestId, SEARCH, "rcpt-7101"), signWith: SEARCH_KEY() });
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`)).toEqual(["RETRY:HTTP_503", "RETRY:HTTP_503", "ACKNOWLEDGED"]);
    expect(webhook.received).toHaveLength(3);
    for (const r of webhook.received) {
      expect(r.headers["idempotency-key"]).toBe(idempotencyKey(requestId, SEARCH));
      // Signed with the search index's own key, over the body it received.
      const sig = String(r.headers["x-retention-signature"]);
      const t = Number(/^t=(\d+)/.exec(sig)![1]);
      expect(sign(r.body, SEARCH_KEY(), t)).toBe(sig);
      expect(sign(r.body, EMAIL_KEY(), t)).not.toBe(sig);
    }
    // No more personal data than the processor holds: the uid it knows the customer by and the entries it has.
    expect(JSON.parse(webhook.received[0]!.body)).toEqual({
      type: "erasure",
      version: 1,
      noticeId: `${requestId}~${SEARCH}`,
      idempotencyKey: idempotencyKey(requestId, SEARCH),
      processor: SEARCH,
      subject: { type: "user", id: "u-7101" },
      entries: ["profile", "directory"],
      erasedAt: new Date(AFTER_GRACE).toISOString(),
      deadline: new Date(AFTER_GRACE + 7 * DAY_MS).toISOString(),
      acknowledge: { by: "response" },
    });
    expect(await notice(requestId, SEARCH)).toMatchObject({ state: "ACKNOWLEDGED", attempts: 3, receiptId: "rcpt-7101", acknowledgedVia: "response", lastError: null });
    const acks = await actions("PROCESSOR_ACKNOWLEDGED");
    expect(acks.map((e) => [e.detail?.processor, e.detail?.receiptId, e.detail?.via])).toEqual([[SEARCH, "rcpt-7101", "response"]]);
    expect(await actions("PROCESSOR_NOTICE_SENT")).toHaveLength(1);
    expect((await processorsOf(requestId, AFTER_GRACE))[SEARCH]).toBe("acknowledged");
    await expectChainVerifies();
  });

  it("times out: each attempt fails at RETENTION_PROCESSOR_TIMEOUT_SECONDS, and the last one records it FAILED", async () => {
    process.env.RETENTION_PROCESSOR_TIMEOUT_SECONDS = "1";
    const requestId = await erased("u-7102");
    webhook.answer = () => ({ status: 200, body: receipt(requestId, SEARCH, "too-late"), signWith: SEARCH_KEY(), delayMs: 2_500 });
    const started = Date.now();
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`, 3)).toEqual(["RETRY:TIMEOUT", "RETRY:TIMEOUT", "FAILED:TIMEOUT"]);
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(await notice(requestId, SEARCH)).toMatchObject({ state: "FAILED", lastError: "TIMEOUT", attempts: 3 });
    const failed = await actions("PROCESSOR_DELIVERY_FAILED");
    expect(failed.map((e) => [e.detail?.processor, e.decision.reason, e.counts?.attempts])).toEqual([[SEARCH, "TIMEOUT", 3]]);
    expect(await actions("PROCESSOR_ACKNOWLEDGED")).toEqual([]);
    expect((await processorsOf(requestId, AFTER_GRACE))[SEARCH]).toBe("failed");
    // A failed processor is still open: past its deadline the audit flags it.
    const audit = await scanRetention({ nowMs: AFTER_GRACE + 8 * DAY_MS, skipSubjects: true });
    expect(audit.findings.filter((f) => f.code === "PROCESSOR_OVERDUE").map((f) => f.path)).toContain(`processorNotices/${requestId}~${SEARCH}`);

    // Staff send it again once the endpoint answers in time: PENDING, due at once for the relay, with evidence.
    const officer = { type: "staff" as const, id: "c-2001" };
    const resentAt = AFTER_GRACE + 9 * DAY_MS;
    await expect(resendFailedNotice({ requestId, processor: DESK, reason: "The desk's ticket system is back." }, officer, resentAt)).rejects.toMatchObject({ reason: "MANUAL_PROCESSOR_NOT_SENT" });
    await resendFailedNotice({ requestId, processor: SEARCH, reason: "The search index is answering in time again." }, officer, resentAt);
    const pending = await notice(requestId, SEARCH);
    expect(pending).toMatchObject({ state: "PENDING", resentBy: "staff:c-2001" });
    expect((pending.queuedUntil as Timestamp).toMillis()).toBe(resentAt);
    const resent = await actions("PROCESSOR_NOTICE_RESENT");
    expect(resent.map((e) => [e.actor.id, e.detail?.processor, e.detail?.reasonText, e.detail?.lastError])).toEqual([["c-2001", SEARCH, "The search index is answering in time again.", "TIMEOUT"]]);
    await expect(resendFailedNotice({ requestId, processor: SEARCH, reason: "Sending it a second time." }, officer, resentAt)).rejects.toMatchObject({ reason: "NOTICE_NOT_FAILED" });
    webhook.answer = () => ({ status: 200, body: receipt(requestId, SEARCH, "after-resend"), signWith: SEARCH_KEY() });
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`)).toEqual(["ACKNOWLEDGED"]);
    expect(await notice(requestId, SEARCH)).toMatchObject({ state: "ACKNOWLEDGED", receiptId: "after-resend" });
    await expectChainVerifies();
  });

  it("answers twice (its answer, then the same receipt by callback, then a duplicate delivery): recorded once", async () => {
    const requestId = await erased("u-7103");
    const body = receipt(requestId, SEARCH, "rcpt-7103");
    webhook.answer = () => ({ status: 200, body, signWith: SEARCH_KEY() });
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`)).toEqual(["ACKNOWLEDGED"]);
    const again = await handleAckCallback(body, sign(body, SEARCH_KEY(), Date.now()), AFTER_GRACE + 60_000);
    expect(again).toEqual({ status: 200, body: { recorded: false, reason: "ALREADY_ACKNOWLEDGED" } });
    // Two callbacks at once, another receipt each: still one acknowledgement.
    const other = receipt(requestId, SEARCH, "rcpt-other");
    const both = await Promise.all([0, 1].map(() => handleAckCallback(other, sign(other, SEARCH_KEY(), Date.now()), AFTER_GRACE + 120_000)));
    expect(both.map((a) => a.body.reason)).toEqual(["ALREADY_ACKNOWLEDGED", "ALREADY_ACKNOWLEDGED"]);
    expect((await deliverNotice(`${requestId}~${SEARCH}`)).outcome).toBe("NOTHING_TO_DO");
    expect(webhook.received).toHaveLength(1);
    expect(await actions("PROCESSOR_ACKNOWLEDGED")).toHaveLength(1);
    expect(await notice(requestId, SEARCH)).toMatchObject({ receiptId: "rcpt-7103" });
  });

  it("a forged acknowledgement is refused and changes nothing: a receipt signed with another key, a stale or missing signature, another notice's key", async () => {
    const requestId = await erased("u-7104");
    // In the webhook's own answer: signed with the email platform's key, unsigned, or for another notice.
    webhook.answer = (_r, n) =>
      n === 0
        ? { status: 200, body: receipt(requestId, SEARCH, "forged"), signWith: EMAIL_KEY() }
        : n === 1
          ? { status: 200, body: receipt(requestId, SEARCH, "unsigned") }
          : { status: 200, body: receipt(requestId, EMAIL, "misdirected"), signWith: SEARCH_KEY() };
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`, 3)).toEqual(["RETRY:RECEIPT_FORGED", "RETRY:RECEIPT_UNSIGNED", "FAILED:RECEIPT_FOR_ANOTHER_NOTICE"]);
    expect(await actions("PROCESSOR_ACKNOWLEDGED")).toEqual([]);
    // By callback, for the email platform's notice.
    const before = await notice(requestId, EMAIL);
    const entries = (await evidence()).length;
    const body = receipt(requestId, EMAIL, "forged-callback");
    const forged = [
      await handleAckCallback(body, sign(body, SEARCH_KEY(), Date.now()), AFTER_GRACE),
      await handleAckCallback(body, sign(body, EMAIL_KEY(), Date.now() - 6 * 60_000), AFTER_GRACE),
      await handleAckCallback(body, undefined, AFTER_GRACE),
      await handleAckCallback(body.replace("forged-callback", "edited"), sign(body, EMAIL_KEY(), Date.now()), AFTER_GRACE),
      await handleAckCallback(JSON.stringify({ ...JSON.parse(body), idempotencyKey: "erase-guess" }), sign(JSON.stringify({ ...JSON.parse(body), idempotencyKey: "erase-guess" }), EMAIL_KEY(), Date.now()), AFTER_GRACE),
      await handleAckCallback(receipt("no-such-request", EMAIL, "x"), sign(receipt("no-such-request", EMAIL, "x"), EMAIL_KEY(), Date.now()), AFTER_GRACE),
    ];
    expect(forged.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 401]);
    expect(await handleAckCallback("not json", undefined, AFTER_GRACE)).toEqual({ status: 400, body: { recorded: false, reason: "MALFORMED_ACKNOWLEDGEMENT" } });
    // A manual processor has no key: no callback can acknowledge it.
    const desk = receipt(requestId, DESK, "desk");
    expect((await handleAckCallback(desk, sign(desk, SEARCH_KEY(), Date.now()), AFTER_GRACE)).status).toBe(401);
    expect(await notice(requestId, EMAIL)).toEqual(before);
    expect((await evidence()).length).toBe(entries);
  });

  it("a callback's signature is checked before the notice is read: a forged one reads nothing, a valid one reads it", async () => {
    const requestId = await erased("u-7106");
    const body = receipt(requestId, EMAIL, "rcpt-7106");
    const refusals: { status: number }[] = [];
    const forged = await noticeAccessDuring(async () => {
      refusals.push(await handleAckCallback(body, sign(body, SEARCH_KEY(), Date.now()), AFTER_GRACE));
      refusals.push(await handleAckCallback(body, sign(body, EMAIL_KEY(), Date.now() - 6 * 60_000), AFTER_GRACE));
      refusals.push(await handleAckCallback(body, "t=1,v1=00", AFTER_GRACE));
      // A guessed notice id (of a processor the registry has, or not): no read tells the caller whether it exists.
      const guess = receipt("r-guess", EMAIL, "x");
      refusals.push(await handleAckCallback(guess, sign(guess, SEARCH_KEY(), Date.now()), AFTER_GRACE));
      const unknown = JSON.stringify({ noticeId: `${requestId}~no-such-processor`, idempotencyKey: "erase-x", receiptId: "x" });
      refusals.push(await handleAckCallback(unknown, sign(unknown, EMAIL_KEY(), Date.now()), AFTER_GRACE));
    });
    expect(refusals.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    expect(forged).toEqual([]);
    // The control: a valid receipt is read (and recorded), so the spy does see a read when there is one.
    const valid = await noticeAccessDuring(async () => expect((await handleAckCallback(body, sign(body, EMAIL_KEY(), Date.now()), AFTER_GRACE)).status).toBe(200));
    expect(valid).toContain("processorNotices");
    expect((await notice(requestId, EMAIL)).state).toBe("ACKNOWLEDGED");
  });

  it("a hold on what the processor receives stops its delivery; after the release the relay delivers it", async () => {
    const requestId = await erased("u-7105");
    // After the erasure, litigation holds the customer's tenant (its profile's ancestor): the search index keeps its copy too.
    const holdId = await hold("tenants/t-acme", AFTER_GRACE);
    webhook.answer = () => ({ status: 200, body: receipt(requestId, SEARCH, "rcpt-7105"), signWith: SEARCH_KEY() });
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`)).toEqual(["HELD"]);
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`)).toEqual(["HELD"]);
    expect(webhook.received).toEqual([]);
    expect(await notice(requestId, SEARCH)).toMatchObject({ state: "HELD", heldBy: holdId, attempts: 0 });
    expect((await actions("PROCESSOR_DELIVERY_HELD")).map((e) => [e.holdId, e.detail?.processor])).toEqual([[holdId, SEARCH]]);
    expect((await processorsOf(requestId, AFTER_GRACE))[SEARCH]).toBe("held");
    await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs: AFTER_GRACE + DAY_MS });
    const queued: string[] = [];
    await sweepProcessorNotices({ nowMs: AFTER_GRACE + 2 * DAY_MS, enqueue: (t) => Promise.resolve(void queued.push(t.noticeId)) });
    expect(queued).toContain(`${requestId}~${SEARCH}`);
    expect(await deliverAsTheQueueDoes(`${requestId}~${SEARCH}`)).toEqual(["ACKNOWLEDGED"]);
  });
});

describe("a Pub/Sub processor that acknowledges by callback", () => {
  it("gets the signed notice on its topic; never answering, it is flagged past its deadline, and ERASURE_COMPLETE names it open", async () => {
    const requestId = await erased("u-7201");
    expect(await deliverAsTheQueueDoes(`${requestId}~${EMAIL}`)).toEqual(["SENT"]);
    const mine = [await received(`${requestId}~${EMAIL}`)];
    const body = mine[0]!.data.toString();
    const t = Number(/^t=(\d+)/.exec(mine[0]!.attributes.signature!)![1]);
    expect(sign(body, EMAIL_KEY(), t)).toBe(mine[0]!.attributes.signature);
    expect(mine[0]!.attributes.idempotencyKey).toBe(idempotencyKey(requestId, EMAIL));
    expect(JSON.parse(body)).toMatchObject({ subject: { type: "user", id: "u-7201" }, entries: ["profile", "orders"], acknowledge: { by: "callback" } });
    expect(await notice(requestId, EMAIL)).toMatchObject({ state: "SENT" });
    // It never answers. Within its 30 days it is "sent"; after them, "overdue", and the audit flags it.
    expect((await processorsOf(requestId, AFTER_GRACE + 29 * DAY_MS))[EMAIL]).toBe("sent");
    const late = AFTER_GRACE + 31 * DAY_MS;
    expect((await processorsOf(requestId, late))[EMAIL]).toBe("overdue");
    const audit = await scanRetention({ nowMs: late, skipSubjects: true });
    const flagged = audit.findings.filter((f) => f.code === "PROCESSOR_OVERDUE");
    expect(flagged.map((f) => f.path).sort()).toEqual([`processorNotices/${requestId}~${EMAIL}`, `processorNotices/${requestId}~${DESK}`, `processorNotices/${requestId}~${SEARCH}`].sort());
    expect(flagged.find((f) => f.path.endsWith(EMAIL))!.detail).toContain("processor email-platform has not confirmed the deletion (SENT)");
    // The staff confirm the payment provider; the date passes with the email platform still open.
    await confirmProcessorNoticeHandler({ requestId, processor: DESK, receiptId: "TICKET-88" }, staff, late);
    await recordErasureCompletions(runOptions({ nowMs: AFTER_GRACE + 36 * DAY_MS, asOfMs: AFTER_GRACE + 36 * DAY_MS }));
    const complete = await actions("ERASURE_COMPLETE");
    expect(complete.map((e) => [e.detail?.processorsOpen, e.detail?.processorsAcknowledged])).toEqual([[`${EMAIL}:overdue,${SEARCH}:overdue`, 1]]);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("processorsOpenAtCompletion")).toEqual([`${EMAIL}:overdue`, `${SEARCH}:overdue`]);
  });

  it("its signed callback is recorded as its acknowledgement", async () => {
    const requestId = await erased("u-7202");
    expect(await deliverAsTheQueueDoes(`${requestId}~${EMAIL}`)).toEqual(["SENT"]);
    const body = receipt(requestId, EMAIL, "em-7202");
    expect(await handleAckCallback(body, sign(body, EMAIL_KEY(), Date.now()), AFTER_GRACE + DAY_MS)).toEqual({ status: 200, body: { recorded: true, reason: "RECORD" } });
    expect(await notice(requestId, EMAIL)).toMatchObject({ state: "ACKNOWLEDGED", receiptId: "em-7202", acknowledgedVia: "callback", acknowledgedBy: `system:processor:${EMAIL}` });
    expect((await processorsOf(requestId, AFTER_GRACE + 40 * DAY_MS))[EMAIL]).toBe("acknowledged");
  });
});

describe("a manual processor", () => {
  it("is confirmed by a compliance officer with the vendor's ticket, once; a webhook cannot be confirmed by hand", async () => {
    const requestId = await erased("u-7301");
    const first = await confirmProcessorNoticeHandler({ requestId, processor: DESK, receiptId: "TICKET-7301" }, staff, AFTER_GRACE + DAY_MS);
    expect(first).toEqual({ requestId, processor: DESK, recorded: true, acknowledgedAt: new Date(AFTER_GRACE + DAY_MS).toISOString() });
    const again = await confirmProcessorNoticeHandler({ requestId, processor: DESK, receiptId: "TICKET-OTHER" }, { ...staff, uid: "c-2002" }, AFTER_GRACE + 2 * DAY_MS);
    expect(again).toMatchObject({ recorded: false, acknowledgedAt: new Date(AFTER_GRACE + DAY_MS).toISOString() });
    const acks = await actions("PROCESSOR_ACKNOWLEDGED");
    expect(acks.map((e) => [e.actor, e.detail?.receiptId, e.decision.reason])).toEqual([[{ type: "staff", id: "c-2001" }, "TICKET-7301", "STAFF_CONFIRMED"]]);
    await expect(confirmProcessorNoticeHandler({ requestId, processor: SEARCH, receiptId: "x" }, staff, AFTER_GRACE)).rejects.toMatchObject({ reason: "NOT_A_MANUAL_PROCESSOR" });
    await expect(confirmProcessorNoticeHandler({ requestId: "no-such", processor: DESK, receiptId: "x" }, staff, AFTER_GRACE)).rejects.toMatchObject({ reason: "PROCESSOR_NOTICE_NOT_FOUND" });
    await expect(confirmProcessorNoticeHandler({ requestId, processor: DESK, receiptId: "x" }, { uid: "r-1", tenantId: null, roles: ["retention-admin" as const] }, AFTER_GRACE)).rejects.toMatchObject({ details: { reason: "NOT_COMPLIANCE" } });
  });
});
