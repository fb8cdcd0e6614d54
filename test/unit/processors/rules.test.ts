import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { RegistrySchema, type Processor } from "../../../functions/src/kernel/policy-schema";
import { OPEN_NOTICE_STATES } from "../../../functions/src/kernel/processor-states";
import {
  ackDecision,
  authenticateCallback,
  idempotencyKey,
  newNotice,
  notifiedRequestIds,
  openProcessors,
  parseAcknowledgement,
  payloadOf,
  processorNameOf,
  processorsDeadlineMs,
  processorStatus,
  resendRefusal,
  sign,
  SIGNATURE_TOLERANCE_MS,
  verifySignature,
} from "../../../functions/src/processors/rules";
import { withProcessorsDeadline, purgedGoneBy } from "../../../functions/src/requests/rules/gone-by";
import { loadCurrent } from "../../helpers/policy";

const T0 = Date.parse("2026-12-02T10:00:00Z");
const KEY = "k".repeat(40);
const webhook: Processor = { name: "search-index", description: "d", kind: "webhook", url: "https://search.example/erase", receives: { user: ["profile"], tenant: [] }, deadlineDays: 7, acknowledges: "response", secret: "RETENTION_PROCESSOR_SEARCH_KEY" };
const manual: Processor = { name: "payment-provider", description: "d", kind: "manual", instructions: "ask them", receives: { user: ["orders"], tenant: [] }, deadlineDays: 30, acknowledges: "staff" };

/** The current registry with `processors` instead of its own: the schema's verdict, as its messages. */
function verdict(processors: unknown[], over: Record<string, unknown> = {}): string[] {
  const r = RegistrySchema.safeParse({ ...loadCurrent(), processors, ...over });
  return r.success ? [] : r.error.issues.map((i) => i.message);
}

describe("processors in the registry", () => {
  it("AtlasMart's current version names a webhook, a topic and a manual processor, and they validate", () => {
    const kinds = loadCurrent().processors.map((p) => `${p.name}:${p.kind}:${p.acknowledges}`);
    expect(kinds).toEqual(["search-index:webhook:response", "email-platform:pubsub:callback", "payment-provider:manual:staff"]);
    expect(verdict(loadCurrent().processors)).toEqual([]);
  });

  it("refuses each broken processor with a message that names it and what to fix", () => {
    const cases: [unknown, string][] = [
      [{ ...webhook, url: undefined }, "processors.search-index: kind webhook needs url"],
      [{ ...webhook, url: "http://search.example/erase" }, "processors.search-index: url http://search.example/erase must be https:// (http:// only on 127.0.0.1 or localhost)"],
      [{ ...webhook, url: "https://user:pw@search.example/" }, "must be https://"],
      [{ ...webhook, topic: "t-1" }, "processors.search-index: topic is not for kind webhook"],
      [{ ...webhook, secret: undefined }, "processors.search-index: kind webhook needs secret"],
      [{ ...webhook, acknowledges: "staff" }, "processors.search-index: a webhook processor acknowledges by response or callback, not staff"],
      [{ ...webhook, kind: "pubsub", url: undefined, topic: "erasures", acknowledges: "response" }, "a pubsub processor acknowledges by callback, not response"],
      [{ ...manual, secret: "RETENTION_PROCESSOR_X_KEY" }, "processors.payment-provider: secret is not for kind manual"],
      [{ ...manual, instructions: undefined }, "processors.payment-provider: kind manual needs instructions"],
      [{ ...webhook, receives: { user: ["no-such-entry"] } }, "processors.search-index: receives.user names no-such-entry, which dataMap.user does not have"],
      [{ ...webhook, receives: { user: [], tenant: [] } }, "processors.search-index: receives names no data-map entry"],
      [{ ...webhook, receives: { user: ["profile", "profile"] } }, "receives.user names an entry twice"],
      [{ ...webhook, secret: "MY_KEY" }, "a secret name starting with RETENTION_PROCESSOR_"],
      [{ ...webhook, deadlineDays: 0 }, "deadlineDays"],
      [{ ...webhook, extra: true }, "extra"],
    ];
    for (const [p, message] of cases) {
      const found = verdict([p]);
      expect(found.join("\n"), JSON.stringify(p)).toContain(message.replace(/^deadlineDays$/, ""));
      expect(found.length, JSON.stringify(p)).toBeGreaterThan(0);
    }
  });

  it("refuses two processors with one name or one secret, and an outbox missing from the control plane", () => {
    expect(verdict([webhook, { ...webhook, url: "https://other.example/" }])).toContain("duplicate processor search-index");
    expect(verdict([webhook, { ...webhook, name: "other-index" }])).toContain("processors.other-index: secret RETENTION_PROCESSOR_SEARCH_KEY is also search-index's; each processor signs with its own key");
    const controlPlane = loadCurrent().controlPlane.filter((c) => c.collection !== "processorNotices");
    expect(verdict([webhook], { controlPlane })).toContain("processors: the registry's controlPlane must list processorNotices, the processors' outbox, with its retention class");
    expect(verdict([], { controlPlane })).toEqual([]);
  });

  it("allows plain http on the loopback only", () => {
    expect(verdict([{ ...webhook, url: "http://127.0.0.1:8790/erase" }])).toEqual([]);
    expect(verdict([{ ...webhook, url: "http://localhost/erase" }])).toEqual([]);
    expect(verdict([{ ...webhook, url: "http://10.0.0.1/erase" }]).length).toBe(1);
  });
});

describe("a processor's notice", () => {
  it("carries no more than the id the processor knows the subject by, the entries it holds and how to answer", () => {
    const n = newNotice(webhook, { requestId: "r-1", subject: { type: "user", id: "u-1" } }, T0);
    expect(n).toMatchObject({ noticeId: "r-1~search-index", state: "PENDING", deadlineAtMs: T0 + 7 * DAY_MS, entries: ["profile"], attempts: 0 });
    expect(payloadOf(n)).toEqual({
      type: "erasure",
      version: 1,
      noticeId: "r-1~search-index",
      idempotencyKey: idempotencyKey("r-1", "search-index"),
      processor: "search-index",
      subject: { type: "user", id: "u-1" },
      entries: ["profile"],
      erasedAt: "2026-12-02T10:00:00.000Z",
      deadline: "2026-12-09T10:00:00.000Z",
      acknowledge: { by: "response" },
    });
    // One key per request and processor, and nothing personal in it.
    expect(idempotencyKey("r-1", "search-index")).toBe(idempotencyKey("r-1", "search-index"));
    expect(idempotencyKey("r-1", "search-index")).not.toBe(idempotencyKey("r-2", "search-index"));
    expect(idempotencyKey("r-1", "search-index")).not.toContain("u-1");
    // A manual processor's notice is on staff's list from the start.
    expect(newNotice(manual, { requestId: "r-1", subject: { type: "user", id: "u-1" } }, T0)).toMatchObject({ state: "SENT", sentAtMs: T0 });
  });

  it("is overdue once open past its deadline, whatever else it is; acknowledged never is", () => {
    const d = T0 + DAY_MS;
    expect(processorStatus({ state: "SENT", deadlineAtMs: d }, d)).toBe("sent");
    expect(processorStatus({ state: "SENT", deadlineAtMs: d }, d + 1)).toBe("overdue");
    expect(processorStatus({ state: "FAILED", deadlineAtMs: d }, T0)).toBe("failed");
    expect(processorStatus({ state: "HELD", deadlineAtMs: d }, d + 1)).toBe("overdue");
    expect(processorStatus({ state: "PENDING", deadlineAtMs: d }, T0)).toBe("pending");
    expect(processorStatus({ state: "ACKNOWLEDGED", deadlineAtMs: d }, d + 99 * DAY_MS)).toBe("acknowledged");
    expect(openProcessors([{ processor: "b", state: "SENT", deadlineAtMs: d }, { processor: "a", state: "ACKNOWLEDGED", deadlineAtMs: d }, { processor: "c", state: "FAILED", deadlineAtMs: d }], d + 1)).toEqual(["b:overdue", "c:overdue"]);
  });

  it("'fully gone by' waits for the latest deadline of the processors an erasure notifies, and no date stays no date", () => {
    const windows = { pitrDays: 7, backupRetentionDays: 0 };
    const base = purgedGoneBy(T0, { any: false, latestRetainUntilMs: null, held: false }, windows);
    expect(base.atMs).toBe(T0 + 7 * DAY_MS);
    const deadline = processorsDeadlineMs([webhook, manual], "user", T0);
    expect(deadline).toBe(T0 + 30 * DAY_MS);
    expect(withProcessorsDeadline(base, deadline)).toEqual({ atMs: T0 + 30 * DAY_MS, basis: { ...(base as { basis: object }).basis, processorsDeadlineMs: T0 + 30 * DAY_MS } });
    expect(processorsDeadlineMs([webhook, manual], "tenant", T0)).toBeNull();
    expect(withProcessorsDeadline(base, null)).toBe(base);
    expect(withProcessorsDeadline({ atMs: null, unknown: "ARCHIVE_UNDER_HOLD" }, deadline)).toEqual({ atMs: null, unknown: "ARCHIVE_UNDER_HOLD" });
  });
});

describe("signatures and acknowledgements", () => {
  const body = JSON.stringify({ noticeId: "r-1~search-index", idempotencyKey: "erase-x", receiptId: "rcpt-1" });

  it("a signature verifies with the key that made it, within five minutes, and with no other key, time or body", () => {
    const sig = sign(body, KEY, T0);
    expect(verifySignature(body, sig, [KEY], T0)).toBe("VALID");
    expect(verifySignature(body, sig, ["x".repeat(40), KEY], T0 + SIGNATURE_TOLERANCE_MS)).toBe("VALID");
    expect(verifySignature(body, sig, [KEY], T0 + SIGNATURE_TOLERANCE_MS + 1)).toBe("STALE");
    expect(verifySignature(body, sig, ["x".repeat(40)], T0)).toBe("MISMATCH");
    expect(verifySignature(`${body} `, sig, [KEY], T0)).toBe("MISMATCH");
    expect(verifySignature(body, sig.replace(`t=${T0}`, `t=${T0 + 1}`), [KEY], T0)).toBe("MISMATCH");
    expect(verifySignature(body, undefined, [KEY], T0)).toBe("MALFORMED");
    expect(verifySignature(body, "v1=abc", [KEY], T0)).toBe("MALFORMED");
  });

  it("reads an acknowledgement, refusing what is not one", () => {
    expect(parseAcknowledgement(body)).toEqual({ noticeId: "r-1~search-index", idempotencyKey: "erase-x", receiptId: "rcpt-1" });
    for (const bad of ["", "null", "[]", "{}", JSON.stringify({ noticeId: "n", idempotencyKey: "k", receiptId: "" }), JSON.stringify({ noticeId: "n", idempotencyKey: "k", receiptId: "x".repeat(201) }), JSON.stringify({ noticeId: "n", idempotencyKey: "k", receiptId: "a\nb" })]) {
      expect(parseAcknowledgement(bad), bad).toBeNull();
    }
  });

  it("records an acknowledgement once, and only for the notice's own idempotency key", () => {
    const ack = { idempotencyKey: "erase-x" };
    expect(ackDecision(null, ack)).toBe("NOT_FOUND");
    expect(ackDecision({ state: "SENT", idempotencyKey: "erase-y" }, ack)).toBe("WRONG_KEY");
    expect(ackDecision({ state: "SENT", idempotencyKey: "erase-x" }, ack)).toBe("RECORD");
    expect(ackDecision({ state: "FAILED", idempotencyKey: "erase-x" }, ack)).toBe("RECORD");
    expect(ackDecision({ state: "ACKNOWLEDGED", idempotencyKey: "erase-x" }, ack)).toBe("ALREADY_ACKNOWLEDGED");
  });
});

describe("a callback is authenticated from what it carries and the registry, before any read", () => {
  const topic: Processor = { name: "email-platform", description: "d", kind: "pubsub", topic: "erasures", receives: { user: ["profile"], tenant: [] }, deadlineDays: 30, acknowledges: "callback", secret: "RETENTION_PROCESSOR_EMAIL_KEY" };
  const OTHER = "o".repeat(40);
  const processors = [webhook, topic, manual];
  const ack = (noticeId: string) => JSON.stringify({ noticeId, idempotencyKey: "erase-x", receiptId: "rcpt-1" });
  /** The keys each processor has, and which processors' keys were asked for. */
  function keys() {
    const asked: string[] = [];
    const keysOf = (p: Processor) => {
      asked.push(p.name);
      return p.name === "email-platform" ? [KEY] : [OTHER];
    };
    return { asked, keysOf };
  }

  it("the notice id names the processor: what follows its last ~", () => {
    expect(processorNameOf("r-1~email-platform")).toBe("email-platform");
    expect(processorNameOf("a~b~email-platform")).toBe("email-platform");
    expect(processorNameOf("r-1")).toBeNull();
    expect(processorNameOf("r-1~")).toBeNull();
  });

  it("a receipt signed with the named processor's key passes, with that processor", () => {
    const { asked, keysOf } = keys();
    const body = ack("r-1~email-platform");
    expect(authenticateCallback(body, sign(body, KEY, T0), processors, keysOf, T0)).toEqual({ ok: true, ack: { noticeId: "r-1~email-platform", idempotencyKey: "erase-x", receiptId: "rcpt-1" }, processor: topic });
    expect(asked).toEqual(["email-platform"]);
  });

  it("refuses, naming why, a forged, stale or missing signature, another processor's key, an unknown or manual processor, and a body that is no acknowledgement", () => {
    const { asked, keysOf } = keys();
    const body = ack("r-1~email-platform");
    const check = (b: string, sig: string | undefined) => {
      const r = authenticateCallback(b, sig, processors, keysOf, T0);
      return r.ok ? "ok" : `${r.status}:${r.reason}`;
    };
    expect(check(body, sign(body, "f".repeat(40), T0))).toBe("401:MISMATCH");
    expect(check(body, sign(body, KEY, T0 - SIGNATURE_TOLERANCE_MS - 1))).toBe("401:STALE");
    expect(check(body, undefined)).toBe("401:MALFORMED");
    // Signed with the search index's key, for the email platform's notice: the key is the named processor's, never the signer's choice.
    expect(check(body, sign(body, OTHER, T0))).toBe("401:MISMATCH");
    // The search index's own notice, signed with the email platform's key.
    const misdirected = ack("r-1~search-index");
    expect(check(misdirected, sign(misdirected, KEY, T0))).toBe("401:MISMATCH");
    expect(asked).toEqual(["email-platform", "email-platform", "email-platform", "email-platform", "search-index"]);
    // No processor of the registry, no processor named, or a manual one: no key is even looked up.
    asked.length = 0;
    for (const id of ["r-1~no-such-processor", "r-1", "r-1~payment-provider"]) {
      const b = ack(id);
      expect(check(b, sign(b, KEY, T0)), id).toBe(id.endsWith("payment-provider") ? "401:MANUAL_PROCESSOR" : "401:UNKNOWN_PROCESSOR");
    }
    expect(check("not json", sign("not json", KEY, T0))).toBe("400:MALFORMED_ACKNOWLEDGEMENT");
    expect(asked).toEqual([]);
  });
});

describe("which notices a status reads", () => {
  it("only a PURGED request's: its notices are written with its PURGED, which is final", () => {
    const rs = [
      { requestId: "r-1", state: "PURGED" as const },
      { requestId: "r-2", state: "PENDING" as const },
      { requestId: "r-3", state: "RETAINED_UNDER_HOLD" as const },
      { requestId: "r-4", state: "PURGED" as const },
    ];
    expect(notifiedRequestIds(rs)).toEqual(["r-1", "r-4"]);
    expect(notifiedRequestIds(rs.filter((r) => r.state !== "PURGED"))).toEqual([]);
  });

  it("a notice is open in every state but ACKNOWLEDGED", () => {
    expect([...OPEN_NOTICE_STATES]).toEqual(["PENDING", "SENT", "FAILED", "HELD"]);
  });
});

describe("sending a notice again", () => {
  it("is for a FAILED notice of a webhook or topic only", () => {
    expect(resendRefusal({ kind: "webhook", state: "FAILED" })).toBeNull();
    expect(resendRefusal({ kind: "pubsub", state: "FAILED" })).toBeNull();
    expect(resendRefusal(null)).toBe("PROCESSOR_NOTICE_NOT_FOUND");
    expect(resendRefusal({ kind: "manual", state: "FAILED" })).toBe("MANUAL_PROCESSOR_NOT_SENT");
    for (const state of ["PENDING", "SENT", "ACKNOWLEDGED", "HELD"] as const) expect(resendRefusal({ kind: "webhook", state }), state).toBe("NOTICE_NOT_FAILED");
  });
});
