/**
 * Legal clocks, pure (functions/src/requests/rules/legal-clock.ts): calendar months as the EU counts them, which law a
 * rule assigns, the one extension within the law's limit (refused without a reason, twice, or beyond the limit), and
 * whether a request was answered in time.
 */
import { describe, expect, it } from "vitest";
import { LegalClocksSchema, RegistrySchema } from "../../../functions/src/kernel/policy-schema";
import { addPeriod, answeredAtMs, clockView, deadlineOutcome, daysLeft, extensionDecision, groupExtension, lawFor, startClock } from "../../../functions/src/requests/rules/legal-clock";
import { DomainError } from "../../../functions/src/kernel/errors";
import { socialRegistry } from "../../../examples/social/registry";
import { loadCurrent } from "../../helpers/policy";

const at = (iso: string) => Date.parse(iso);
const DAY = 86_400_000;

/**
 * AtlasMart's published laws (registry v7) plus what it does not use: a scope rule (t-ca is in California) and a law
 * without an extension.
 */
const CLOCKS = LegalClocksSchema.parse({
  laws: [...loadCurrent().legalClocks!.laws, { id: "strict", name: "No extension", period: { days: 30 } }],
  rules: [{ law: "ccpa", via: "scope", scopes: ["t-ca"] }, ...loadCurrent().legalClocks!.rules],
  default: "gdpr",
});

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return `${err.kind}/${err.reason}`;
    throw err;
  }
  return "none";
};

describe("legal clocks", () => {
  it("a month ends on the same day of the next month, or that month's last day", () => {
    expect(new Date(addPeriod(at("2026-01-15T10:00:00Z"), { months: 1 })).toISOString()).toBe("2026-02-15T10:00:00.000Z");
    expect(new Date(addPeriod(at("2026-01-31T10:00:00Z"), { months: 1 })).toISOString()).toBe("2026-02-28T10:00:00.000Z");
    expect(new Date(addPeriod(at("2028-01-31T00:00:00Z"), { months: 1 })).toISOString()).toBe("2028-02-29T00:00:00.000Z");
    expect(new Date(addPeriod(at("2026-11-30T00:00:00Z"), { months: 3 })).toISOString()).toBe("2027-02-28T00:00:00.000Z");
    expect(new Date(addPeriod(at("2026-12-31T23:59:59Z"), { months: 1 })).toISOString()).toBe("2027-01-31T23:59:59.000Z");
    expect(addPeriod(at("2026-03-01T00:00:00Z"), { days: 45 }) - at("2026-03-01T00:00:00Z")).toBe(45 * DAY);
  });

  it("AtlasMart's published registry: GDPR by default, the CCPA for a customer whose directory entry says California", () => {
    const published = loadCurrent().legalClocks!;
    expect(published.laws.map((l) => [l.id, l.period, l.extension])).toEqual([
      ["gdpr", { months: 1 }, { months: 2 }],
      ["ccpa", { days: 45 }, { days: 45 }],
    ]);
    expect(published.rules).toEqual([{ law: "ccpa", via: "field", path: "userDirectory/{uid}", field: "region", values: ["US-CA"] }]);
    expect(lawFor(published, { scope: "t-acme", fieldValues: new Map([[0, "US-CA"]]) }).id).toBe("ccpa");
    expect(lawFor(published, { scope: "t-acme", fieldValues: new Map() }).id).toBe("gdpr");
  });

  it("the first matching rule decides the law, else the default", () => {
    const none = new Map<number, unknown>();
    expect(lawFor(CLOCKS, { scope: "t-ca", fieldValues: none }).id).toBe("ccpa");
    expect(lawFor(CLOCKS, { scope: "t-acme", fieldValues: new Map([[1, "US-CA"]]) }).id).toBe("ccpa");
    expect(lawFor(CLOCKS, { scope: "t-acme", fieldValues: new Map([[1, "DE"]]) }).id).toBe("gdpr");
    expect(lawFor(CLOCKS, { scope: "", fieldValues: none }).id).toBe("gdpr");
  });

  it("a group's extension extends its members still owed an answer, each within its own law's limit; answered members keep theirs", () => {
    const opened = at("2026-03-01T00:00:00Z");
    const gdpr = { state: "PENDING" as const, legalClock: startClock(CLOCKS.laws[0]!, opened) };
    const ccpaAnswered = { state: "PURGED" as const, legalClock: startClock(CLOCKS.laws[1]!, opened) };
    const reason = "Many records across three systems";
    const out = groupExtension([gdpr, ccpaAnswered], { reason });
    expect(out).toEqual([{ member: gdpr, dueAtMs: gdpr.legalClock.limitMs }]);
    // Any open member's refusal refuses the group: beyond the GDPR member's limit.
    const ccpaOpen = { state: "PROCESSING" as const, legalClock: startClock(CLOCKS.laws[1]!, opened) };
    expect(refusal(() => groupExtension([gdpr, ccpaOpen], { reason, untilMs: gdpr.legalClock.limitMs! }))).toBe("failed-precondition/BEYOND_LEGAL_LIMIT");
    expect(groupExtension([gdpr, ccpaOpen], { reason }).map((d) => d.dueAtMs)).toEqual([gdpr.legalClock.limitMs, ccpaOpen.legalClock.limitMs]);
    // Nothing owed: refused as one answered request is; no reason: refused for that first.
    expect(refusal(() => groupExtension([ccpaAnswered], { reason }))).toBe("failed-precondition/NOT_EXTENDABLE");
    expect(refusal(() => groupExtension([ccpaAnswered, gdpr], { reason: "short" }))).toBe("invalid-argument/EXTENSION_REASON_REQUIRED");
  });

  it("GDPR: one month, extendable once by two with a written reason; refused without one, twice, or beyond the limit", () => {
    const opened = at("2026-01-31T09:00:00Z");
    const clock = startClock(CLOCKS.laws[0]!, opened);
    expect(new Date(clock.originalDueAtMs).toISOString()).toBe("2026-02-28T09:00:00.000Z");
    expect(new Date(clock.limitMs!).toISOString()).toBe("2026-04-28T09:00:00.000Z");
    const req = { state: "PENDING" as const, legalClock: clock };
    expect(refusal(() => extensionDecision(req, { reason: undefined }))).toBe("invalid-argument/EXTENSION_REASON_REQUIRED");
    expect(refusal(() => extensionDecision(req, { reason: "   busy    " }))).toBe("invalid-argument/EXTENSION_REASON_REQUIRED");
    expect(refusal(() => extensionDecision(req, { reason: "Many records across three systems", untilMs: clock.limitMs! + 1 }))).toBe("failed-precondition/BEYOND_LEGAL_LIMIT");
    expect(refusal(() => extensionDecision(req, { reason: "Many records across three systems", untilMs: clock.originalDueAtMs }))).toBe("failed-precondition/EXTENSION_NOT_LATER");
    expect(extensionDecision(req, { reason: "Many records across three systems" }).dueAtMs).toBe(clock.limitMs);
    const extended = { ...clock, extension: { dueAtMs: clock.limitMs!, atMs: opened + DAY, by: "c-1", reason: "Many records across three systems" } };
    expect(refusal(() => extensionDecision({ state: "PENDING", legalClock: extended }, { reason: "Still more records to go" }))).toBe("failed-precondition/ALREADY_EXTENDED");
  });

  it("CCPA: 45 days, extendable by 45; a law without extension, a request without a clock and an answered request are refused", () => {
    const clock = startClock(CLOCKS.laws[1]!, at("2026-03-01T00:00:00Z"));
    expect(clock.originalDueAtMs - clock.startedAtMs).toBe(45 * DAY);
    expect(clock.limitMs! - clock.startedAtMs).toBe(90 * DAY);
    expect(extensionDecision({ state: "PROCESSING", legalClock: clock }, { reason: "Vendor records still outstanding", untilMs: clock.originalDueAtMs + 10 * DAY }).dueAtMs).toBe(clock.originalDueAtMs + 10 * DAY);
    expect(refusal(() => extensionDecision({ state: "PENDING", legalClock: startClock(CLOCKS.laws[2]!, 0) }, { reason: "a good long reason" }))).toBe("failed-precondition/NOT_EXTENDABLE");
    expect(refusal(() => extensionDecision({ state: "PENDING", legalClock: null }, { reason: "a good long reason" }))).toBe("failed-precondition/NO_LEGAL_CLOCK");
    expect(refusal(() => extensionDecision({ state: "PURGED", legalClock: clock }, { reason: "a good long reason" }))).toBe("failed-precondition/NOT_EXTENDABLE");
  });

  it("answered in time or late, open or overdue, and the days left", () => {
    const due = at("2026-02-28T09:00:00Z");
    expect(answeredAtMs([{ atMs: 1, event: "REQUESTED" }, { atMs: 5, event: "RETAINED_UNDER_HOLD" }, { atMs: 9, event: "PURGED" }])).toBe(5);
    expect(answeredAtMs([{ atMs: 1, event: "REQUESTED" }])).toBeNull();
    expect(deadlineOutcome({ state: "PURGED", dueAtMs: due, answeredAtMs: due }, due + DAY)).toBe("on-time");
    expect(deadlineOutcome({ state: "PURGED", dueAtMs: due, answeredAtMs: due + 1 }, due + DAY)).toBe("late");
    expect(deadlineOutcome({ state: "PENDING", dueAtMs: due, answeredAtMs: null }, due + 1)).toBe("overdue");
    expect(deadlineOutcome({ state: "PENDING", dueAtMs: due, answeredAtMs: null }, due - 1)).toBe("open");
    expect(deadlineOutcome({ state: "CANCELLED", dueAtMs: due, answeredAtMs: null }, due + 1)).toBe("none");
    expect(daysLeft(due, due - 3 * DAY - 1)).toBe(3);
    expect(daysLeft(due, due + 1)).toBe(-1);
  });

  it("a group's clock is its member due first, answered when its last member is", () => {
    const a = startClock(CLOCKS.laws[0]!, at("2026-01-10T00:00:00Z"));
    const b = startClock(CLOCKS.laws[1]!, at("2026-01-10T00:00:00Z"));
    const nowMs = at("2026-01-20T00:00:00Z");
    const view = clockView(
      [
        { state: "PURGED", legalClock: b, timeline: [{ atMs: nowMs - DAY, event: "PURGED" }] },
        { state: "PENDING", legalClock: a, timeline: [] },
      ],
      nowMs,
      "subject",
    );
    expect(view).toMatchObject({ law: "gdpr", outcome: "open", daysLeft: 21, extension: null });
    expect(clockView([{ state: "PENDING", timeline: [] }], nowMs, "staff")).toBeNull();
    const extended = { ...a, extension: { dueAtMs: a.limitMs!, atMs: nowMs, by: "c-1", reason: "a written reason" } };
    expect(clockView([{ state: "PENDING", legalClock: extended, timeline: [] }], nowMs, "subject")!.extension).toEqual({ dueAt: new Date(a.limitMs!).toISOString(), at: new Date(nowMs).toISOString(), reason: "a written reason" });
    expect(clockView([{ state: "PENDING", legalClock: extended, timeline: [] }], nowMs, "staff")!.extension?.by).toBe("c-1");
  });

  it("the registry refuses a default or a rule naming no law, and a field rule not keyed by the uid", () => {
    const base = loadCurrent();
    expect(RegistrySchema.safeParse({ ...base, legalClocks: CLOCKS }).success).toBe(true);
    const bad = (legalClocks: unknown) => RegistrySchema.safeParse({ ...base, legalClocks }).success;
    expect(bad({ ...CLOCKS, default: "hipaa" })).toBe(false);
    expect(bad({ ...CLOCKS, rules: [{ law: "lgpd", via: "scope", scopes: ["t-br"] }] })).toBe(false);
    expect(bad({ ...CLOCKS, rules: [{ law: "ccpa", via: "field", path: "tenants/{tenantId}", field: "region", values: ["US-CA"] }] })).toBe(false);
    expect(bad({ ...CLOCKS, laws: [...CLOCKS.laws, CLOCKS.laws[0]] })).toBe(false);
  });

  it("the registry refuses a scope rule in an app without a scope kind, and says why", () => {
    // The social example has no scope kind: its users are matched to a law by a field of their profile.
    const social = socialRegistry();
    expect(social.subjects?.scope).toBeUndefined();
    expect(RegistrySchema.safeParse(social).success).toBe(true);
    const clocks = social.legalClocks!;
    const r = RegistrySchema.safeParse({ ...social, legalClocks: { ...clocks, rules: [{ law: clocks.default, via: "scope", scopes: ["s-1"] }, ...clocks.rules] } });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.message)).toEqual(["legalClocks.rules: a scope rule needs a scope kind (subjects.scope); match users by a field rule instead"]);
  });
});
