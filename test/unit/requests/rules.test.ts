import { describe, expect, it } from "vitest";
import {
  approveDecision,
  assertNoCooldown,
  assertRequestMove,
  canMoveRequest,
  cancelDecision,
  ERASURE_OWED_STATES,
  HANDLED_REQUEST_STATES,
  isOpenRequest,
  mayCancel,
  needsApproval,
  newDeletionRequest,
  OPEN_REQUEST_STATES,
  parseRequestState,
  purgeMayTake,
  REQUEST_STATES,
  requestCooldownUntil,
  requestOwner,
  restoreOutcome,
  softDeleteOutcome,
  softDeletedTimeline,
  type SoftDeleteMarks,
} from "../../../functions/src/requests/rules/requests";
import { describePath, describeRetained, summaryIsFresh } from "../../../functions/src/requests/rules/status";
import { DomainError } from "../../../functions/src/kernel/errors";
import { isHeld } from "../../../functions/src/kernel/held";
import type { GovernedFields } from "../../../functions/src/kernel/governed";
import { DAY_MS, PolicyIndex } from "../../../functions/src/kernel/policy";
import { loadV1, policyV1 } from "../../helpers/policy";

const policy = policyV1();
const T0 = Date.parse("2026-11-30T10:00:00Z");
const NO_MARKS: SoftDeleteMarks = { softDeletedAtMs: null, preDeleteState: null, deletionRequestId: null };

function doc(over: Partial<GovernedFields> = {}): GovernedFields {
  return {
    retentionClass: "user-delete",
    lifecycleState: "ACTIVE",
    tenantId: "t-acme",
    policyVersion: "v1",
    createdAtMs: T0 - 10 * DAY_MS,
    expireAtMs: null,
    retainUntilMs: null,
    legalHold: false,
    holdIds: [],
    preHold: null,
    ...over,
  };
}

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return `${e.kind}/${e.reason}`;
    throw e;
  }
  return "no error";
}

describe("newDeletionRequest", () => {
  it("takes grace and due periods from the user-delete class and records the policy version", () => {
    const r = newDeletionRequest({ requestId: "r1", subject: { type: "user", uid: "u-1", tenantId: "t" }, requestedBy: "u-1", source: "user", reason: "bye", nowMs: T0 }, policy);
    expect(r).toEqual({
      requestId: "r1",
      subject: { type: "user", uid: "u-1", tenantId: "t" },
      requestedBy: "u-1",
      state: "PENDING",
      source: "user",
      reason: "bye",
      requestedAtMs: T0,
      graceEndsAtMs: T0 + 7 * DAY_MS,
      dueAtMs: T0 + 30 * DAY_MS,
      policyVersion: "v1",
      timeline: [{ atMs: T0, event: "REQUESTED", detail: "source user" }],
      softDeleted: 0,
    });
    expect(newDeletionRequest({ requestId: "r2", subject: { type: "user", uid: "u", tenantId: "t" }, requestedBy: "authBackstop", source: "auth-backstop", reason: "", nowMs: T0 }, policy).reason).toBeUndefined();
  });

  it("follows a different registry's periods, and refuses a registry without the class's due date", () => {
    const reg = loadV1();
    const changed = new PolicyIndex({ ...reg, version: "v9", classes: reg.classes.map((c) => (c.id === "user-delete" ? { ...c, graceDays: 14, dueDays: 28 } : c)) });
    const r = newDeletionRequest({ requestId: "r", subject: { type: "user", uid: "u", tenantId: "t" }, requestedBy: "c-1", source: "staff", nowMs: T0 }, changed);
    expect([(r.graceEndsAtMs ?? 0) - T0, (r.dueAtMs ?? 0) - T0, r.policyVersion]).toEqual([14 * DAY_MS, 28 * DAY_MS, "v9"]);
    const broken = new PolicyIndex({ ...reg, classes: reg.classes.map((c) => (c.id === "user-delete" ? { ...c, dueDays: undefined } : c)) });
    expect(() => newDeletionRequest({ requestId: "r", subject: { type: "user", uid: "u", tenantId: "t" }, requestedBy: "u", source: "user", nowMs: T0 }, broken)).toThrow(/dueDays/);
  });

  it("a tenant's closure is the same model: it opens awaiting a second staff member's approval, with no periods yet", () => {
    const r = newDeletionRequest({ requestId: "r3", subject: { type: "tenant", tenantId: "t-acme" }, requestedBy: "ra-3001", source: "staff", nowMs: T0 }, policy);
    expect(r).toMatchObject({ subject: { type: "tenant", tenantId: "t-acme" }, requestedBy: "ra-3001", state: "AWAITING_APPROVAL", graceEndsAtMs: null, dueAtMs: null });
    expect(needsApproval(r.subject)).toBe(true);
    expect(needsApproval({ type: "user", uid: "u", tenantId: "t" })).toBe(false);
    expect(requestOwner(r)).toBe("ra-3001");
    // Nothing takes it: not the purge, and not an open grace clock.
    expect(purgeMayTake({ state: r.state, graceEndsAtMs: r.graceEndsAtMs, heldAtGeneration: null }, T0 + 365 * DAY_MS, 0)).toBe(false);
  });
});

describe("approveDecision: the two-person rule of a tenant's closure", () => {
  const closure = { subject: { type: "tenant" as const, tenantId: "t-acme" }, requestedBy: "r-3001", state: "AWAITING_APPROVAL" as const };
  it("a second staff member approves: the tenant-account class's grace (30 days) and due (60 days) periods start then", () => {
    expect(approveDecision(closure, "c-2001", T0, policy)).toEqual({ kind: "approve", graceEndsAtMs: T0 + 30 * DAY_MS, dueAtMs: T0 + 60 * DAY_MS });
  });
  it("the requester can never approve, whatever the state", () => {
    for (const state of ["AWAITING_APPROVAL", "PENDING", "CANCELLED"] as const) {
      expect(reasonOf(() => approveDecision({ ...closure, state, approvedBy: "c-2001" }, "r-3001", T0, policy))).toBe("permission-denied/TWO_PERSON_RULE");
    }
  });
  it("approving again as the same approver is idempotent; anything else that is not awaiting approval is refused", () => {
    expect(approveDecision({ ...closure, state: "PENDING", approvedBy: "c-2001" }, "c-2001", T0, policy)).toEqual({ kind: "already-approved" });
    expect(approveDecision({ ...closure, state: "PROCESSING", approvedBy: "c-2001" }, "c-2001", T0, policy)).toEqual({ kind: "already-approved" });
    expect(reasonOf(() => approveDecision({ ...closure, state: "PENDING", approvedBy: "c-2001" }, "c-2002", T0, policy))).toBe("failed-precondition/NOT_AWAITING_APPROVAL");
    expect(reasonOf(() => approveDecision({ ...closure, state: "CANCELLED" }, "c-2002", T0, policy))).toBe("failed-precondition/NOT_AWAITING_APPROVAL");
  });
});

describe("who may cancel", () => {
  const closure = { subject: { type: "tenant" as const, tenantId: "t-acme" }, requestedBy: "r-3001", state: "PENDING" as const, graceEndsAtMs: T0 + 30 * DAY_MS };
  it("a tenant's closure: any retention-admin, not only its requester; nobody else", () => {
    expect(mayCancel(closure, { uid: "r-3001", retentionAdmin: true })).toBe(true);
    expect(mayCancel(closure, { uid: "r-3002", retentionAdmin: true })).toBe(true);
    expect(mayCancel(closure, { uid: "r-3001", retentionAdmin: false })).toBe(false);
    expect(reasonOf(() => cancelDecision(closure, { uid: "u-1", retentionAdmin: false }, T0, false))).toBe("permission-denied/NOT_OWNER");
    expect(cancelDecision(closure, { uid: "r-3002", retentionAdmin: true }, T0, false)).toBe("cancel");
    expect(reasonOf(() => cancelDecision(closure, { uid: "r-3002", retentionAdmin: true }, T0 + 30 * DAY_MS, false))).toBe("failed-precondition/GRACE_EXPIRED");
  });
  it("a closure awaiting approval is withdrawn (nothing was hidden), at any time", () => {
    expect(cancelDecision({ ...closure, state: "AWAITING_APPROVAL", graceEndsAtMs: null }, { uid: "r-3001", retentionAdmin: true }, T0 + 365 * DAY_MS, false)).toBe("withdraw");
  });
  it("a user's erasure: only the user, whatever the caller's role", () => {
    const mine = { subject: { type: "user" as const, uid: "u-1", tenantId: "t" }, requestedBy: "u-1" };
    expect(mayCancel(mine, { uid: "u-1", retentionAdmin: false })).toBe(true);
    expect(mayCancel(mine, { uid: "r-3001", retentionAdmin: true })).toBe(false);
  });
});

describe("cancelDecision", () => {
  const req = { subject: { type: "user" as const, uid: "u-1", tenantId: "t" }, requestedBy: "u-1", state: "PENDING" as const, graceEndsAtMs: T0 + 7 * DAY_MS };
  it("lets the owner cancel a pending, unleased request before the grace ends", () => {
    expect(cancelDecision(req, { uid: "u-1", retentionAdmin: false }, T0, false)).toBe("cancel");
    expect(cancelDecision(req, { uid: "u-1", retentionAdmin: false }, T0 + 7 * DAY_MS - 1, false)).toBe("cancel");
  });
  it("is idempotent: a cancelled request reports so, and one still restoring resumes", () => {
    expect(cancelDecision({ ...req, state: "CANCELLED" }, { uid: "u-1", retentionAdmin: false }, T0 + 30 * DAY_MS, false)).toBe("already-cancelled");
    expect(cancelDecision({ ...req, state: "CANCELLING" }, { uid: "u-1", retentionAdmin: false }, T0 + 30 * DAY_MS, true)).toBe("resume");
  });
  it("refuses another user, a request the purge has taken, and an expired grace, with stable codes", () => {
    expect(reasonOf(() => cancelDecision(req, { uid: "u-2", retentionAdmin: false }, T0, false))).toBe("permission-denied/NOT_OWNER");
    expect(reasonOf(() => cancelDecision({ ...req, state: "CANCELLED" }, { uid: "u-2", retentionAdmin: false }, T0, false))).toBe("permission-denied/NOT_OWNER");
    // The purge holds the lease, or has started a round: the cancel loses, even inside the caller's grace.
    expect(reasonOf(() => cancelDecision(req, { uid: "u-1", retentionAdmin: false }, T0, true))).toBe("failed-precondition/ALREADY_PROCESSING");
    for (const state of ["PROCESSING", "PURGED", "BLOCKED", "RETAINED_UNDER_HOLD"] as const) {
      expect(reasonOf(() => cancelDecision({ ...req, state }, { uid: "u-1", retentionAdmin: false }, T0, false))).toBe("failed-precondition/ALREADY_PROCESSING");
      expect(reasonOf(() => cancelDecision({ ...req, state }, { uid: "u-1", retentionAdmin: false }, T0 + 7 * DAY_MS, false))).toBe("failed-precondition/GRACE_EXPIRED");
    }
    expect(reasonOf(() => cancelDecision(req, { uid: "u-1", retentionAdmin: false }, T0 + 7 * DAY_MS, false))).toBe("failed-precondition/GRACE_EXPIRED");
  });
});

describe("the request state machine", () => {
  it("lets each writer move only along its edges, and never out of a terminal state", () => {
    expect(canMoveRequest("PENDING", "CANCELLING")).toBe(true);
    expect(canMoveRequest("PENDING", "PROCESSING")).toBe(true);
    expect(canMoveRequest("CANCELLING", "CANCELLED")).toBe(true);
    expect(canMoveRequest("PROCESSING", "RETAINED_UNDER_HOLD")).toBe(true);
    expect(canMoveRequest("RETAINED_UNDER_HOLD", "PROCESSING")).toBe(true);
    // A closure is approved (PENDING) or withdrawn (CANCELLED); nothing else leaves AWAITING_APPROVAL, and nothing returns to it.
    expect(canMoveRequest("AWAITING_APPROVAL", "PENDING")).toBe(true);
    expect(canMoveRequest("AWAITING_APPROVAL", "CANCELLED")).toBe(true);
    for (const to of ["CANCELLING", "PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD", "PURGED"] as const) expect(canMoveRequest("AWAITING_APPROVAL", to)).toBe(false);
    for (const from of REQUEST_STATES) expect(canMoveRequest(from, "AWAITING_APPROVAL")).toBe(false);
    // A cancel and the purge cannot both win.
    expect(canMoveRequest("CANCELLING", "PROCESSING")).toBe(false);
    expect(canMoveRequest("CANCELLED", "PROCESSING")).toBe(false);
    expect(canMoveRequest("PROCESSING", "CANCELLING")).toBe(false);
    for (const to of REQUEST_STATES) {
      expect(canMoveRequest("PURGED", to)).toBe(false);
      expect(canMoveRequest("CANCELLED", to)).toBe(false);
    }
    expect(reasonOf(() => assertRequestMove("CANCELLED", "PROCESSING"))).toBe("failed-precondition/REQUEST_STATE_CHANGED");
  });
  it("names the open states once: in progress, including awaiting approval and retained under a hold", () => {
    expect([...OPEN_REQUEST_STATES].sort()).toEqual(["AWAITING_APPROVAL", "BLOCKED", "PENDING", "PROCESSING", "RETAINED_UNDER_HOLD"]);
    // No due date while awaiting approval: the periods start when a closure is approved.
    expect(ERASURE_OWED_STATES).not.toContain("AWAITING_APPROVAL");
    expect(isOpenRequest("CANCELLING")).toBe(false);
    expect(isOpenRequest("PURGED")).toBe(false);
    expect(HANDLED_REQUEST_STATES).toContain("PURGED");
  });
});

describe("the request/cancel cooldown", () => {
  const base = 60 * 60_000;
  it("lets a first request through, and waits after a cancel, doubling per cancel in 30 days up to 7 days", () => {
    expect(requestCooldownUntil([], base, T0)).toBeNull();
    expect(requestCooldownUntil([{ cancelledAtMs: T0 }], base, T0 + 1)).toBe(T0 + base);
    expect(requestCooldownUntil([{ cancelledAtMs: T0 }], base, T0 + base)).toBeNull();
    const three = [{ cancelledAtMs: T0 - 2 * DAY_MS }, { cancelledAtMs: T0 - DAY_MS }, { cancelledAtMs: T0 }];
    expect(requestCooldownUntil(three, base, T0 + 1)).toBe(T0 + 4 * base);
    const many = Array.from({ length: 20 }, (_, i) => ({ cancelledAtMs: T0 - i * 60_000 }));
    expect(requestCooldownUntil(many, base, T0 + 1)).toBe(T0 + 7 * DAY_MS);
    // Cancels older than 30 days no longer count; a base of 0 turns the cooldown off.
    expect(requestCooldownUntil([{ cancelledAtMs: T0 - 31 * DAY_MS }], base, T0)).toBeNull();
    expect(requestCooldownUntil([{ cancelledAtMs: T0 }], 0, T0 + 1)).toBeNull();
    expect(reasonOf(() => assertNoCooldown([{ cancelledAtMs: T0 }], base, T0 + 1))).toBe("resource-exhausted/REQUEST_COOLDOWN");
  });
});

describe("softDeletedTimeline: one entry per soft-delete pass", () => {
  const opened = { atMs: T0 - 1000, event: "REQUESTED" };
  it("the pass's first batch adds an entry counting its own documents", () => {
    const r = softDeletedTimeline([opened], 0, 200, T0);
    expect(r.merged).toBe(false);
    expect(r.timeline).toEqual([opened, { atMs: T0, event: "SOFT_DELETED", detail: "200 documents" }]);
  });
  it("a later batch brings the pass's entry up to date instead of adding one", () => {
    const first = softDeletedTimeline([opened], 0, 200, T0).timeline;
    const r = softDeletedTimeline(first, 200, 42, T0);
    expect(r.merged).toBe(true);
    expect(r.timeline).toEqual([opened, { atMs: T0, event: "SOFT_DELETED", detail: "242 documents" }]);
  });
  it("an entry another writer added since ends the pass's entry: the batch starts a new one with its own count", () => {
    const first = softDeletedTimeline([opened], 0, 200, T0).timeline;
    const extended = [...first, { atMs: T0, event: "DEADLINE_EXTENDED" }];
    const r = softDeletedTimeline(extended, 200, 42, T0);
    expect(r.merged).toBe(false);
    expect(r.timeline.at(-1)).toEqual({ atMs: T0, event: "SOFT_DELETED", detail: "42 documents" });
    expect(r.timeline).toHaveLength(4);
  });
  it("an earlier pass's entry (another time, or another count) is never taken over", () => {
    const earlier = [opened, { atMs: T0 - 5, event: "SOFT_DELETED", detail: "200 documents" }];
    expect(softDeletedTimeline(earlier, 200, 1, T0).merged).toBe(false);
    const otherCount = [opened, { atMs: T0, event: "SOFT_DELETED", detail: "199 documents" }];
    const r = softDeletedTimeline(otherCount, 200, 1, T0);
    expect(r.merged).toBe(false);
    expect(r.timeline).toHaveLength(3);
  });
});

describe("softDeleteOutcome and restoreOutcome", () => {
  it("moves ACTIVE data to SOFT_DELETED with the marks a cancel needs", () => {
    const out = softDeleteOutcome(doc(), NO_MARKS, "r1", false, T0);
    expect(out).toEqual({
      kind: "move",
      fields: doc({ lifecycleState: "SOFT_DELETED" }),
      marks: { softDeletedAtMs: T0, preDeleteState: "ACTIVE", deletionRequestId: "r1" },
    });
  });
  it("leaves held data, data already moved by this request, and data elsewhere in its lifecycle", () => {
    // `held` is the one definition of "held" (holds/rules.ts#isHeld), decided by the caller with the hold records.
    const flagged = doc({ legalHold: true, lifecycleState: "LEGAL_HOLD", holdIds: ["h"] });
    expect(softDeleteOutcome(flagged, NO_MARKS, "r1", isHeld({ path: "userDirectory/u", ...flagged }, []), T0)).toEqual({ kind: "held" });
    expect(softDeleteOutcome(doc(), NO_MARKS, "r1", isHeld({ path: "tenants/t/users/u", ...doc() }, [{ holdId: "h", targetPath: "tenants/t", reasonCode: "LITIGATION" }]), T0)).toEqual({ kind: "held" });
    expect(softDeleteOutcome(doc({ lifecycleState: "SOFT_DELETED" }), { ...NO_MARKS, deletionRequestId: "r1" }, "r1", false, T0)).toEqual({ kind: "already" });
    expect(softDeleteOutcome(doc({ lifecycleState: "SOFT_DELETED" }), NO_MARKS, "r1", false, T0)).toEqual({ kind: "not-active", state: "SOFT_DELETED" });
    expect(softDeleteOutcome(doc({ lifecycleState: "ARCHIVED" }), NO_MARKS, "r1", false, T0)).toEqual({ kind: "not-active", state: "ARCHIVED" });
  });
  it("restores exactly what the request moved, including a hold's parked state", () => {
    const marks: SoftDeleteMarks = { softDeletedAtMs: T0, preDeleteState: "ACTIVE", deletionRequestId: "r1" };
    expect(restoreOutcome(doc({ lifecycleState: "SOFT_DELETED" }), marks, "r1")).toEqual({ kind: "restore", fields: doc() });
    expect(restoreOutcome(doc({ lifecycleState: "SOFT_DELETED" }), marks, "r2")).toEqual({ kind: "skip", why: "OTHER_REQUEST" });
    const heldAfter = doc({ lifecycleState: "LEGAL_HOLD", legalHold: true, holdIds: ["h"], preHold: { lifecycleState: "SOFT_DELETED", expireAtMs: null } });
    expect(restoreOutcome(heldAfter, marks, "r1")).toEqual({ kind: "restore", fields: { ...heldAfter, preHold: { lifecycleState: "ACTIVE", expireAtMs: null } } });
    expect(restoreOutcome(doc({ lifecycleState: "PURGE_ELIGIBLE" }), marks, "r1")).toEqual({ kind: "skip", why: "MOVED_ON" });
  });
});

describe("parseRequestState", () => {
  it("accepts the five states and refuses anything else as corrupt", () => {
    for (const s of ["PENDING", "CANCELLING", "CANCELLED", "PROCESSING", "PURGED", "BLOCKED", "RETAINED_UNDER_HOLD"]) expect(parseRequestState(s)).toBe(s);
    expect(reasonOf(() => parseRequestState("OPEN"))).toBe("failed-precondition/CORRUPT_REQUEST");
    expect(reasonOf(() => parseRequestState(undefined))).toBe("failed-precondition/CORRUPT_REQUEST");
  });
});

describe("deletion status texts", () => {
  it("names a path by its collection and id", () => {
    expect(describePath("tenants/t-acme/orders/o-1002")).toBe("order o-1002");
    expect(describePath("workspaces/w/docs/d-1002")).toBe("doc d-1002");
    expect(describePath("activity/a-1")).toBe("activity a-1");
    expect(describePath("auditRecords/ar-001")).toBe("auditRecord ar-001");
  });
  const finance = { path: "tenants/t/orders/o-1002", action: "mask" as const, reasonCode: "FINANCE_RETENTION", reason: "finance retention: the order is kept", fields: ["customerName"], until: "2033-09-16" };
  const litigation = { path: "tenants/t/orders/o-1003", action: "retain" as const, reasonCode: "LITIGATION", reason: "retention hold h1", holdId: "h1" };
  it("tells compliance what is kept and why, with a hold's reason code and its registry description", () => {
    expect(describeRetained([finance, litigation], policy, "staff")).toEqual([
      { path: "tenants/t/orders/o-1002", reasonCode: "FINANCE_RETENTION", reason: "finance retention: the order is kept", until: "2033-09-16", text: "order o-1002: finance retention until 2033-09-16" },
      { path: "tenants/t/orders/o-1003", reasonCode: "LITIGATION", reason: "Litigation hold ordered by counsel.", text: "order o-1003: litigation hold ordered by counsel" },
    ]);
  });
  it("never tips a subject off: every hold, whatever its reason, reads as a legal obligation, without its code, note or id", () => {
    const held = [...policy.registry.holdReasons.map((r, i) => ({ ...litigation, path: `tenants/t/orders/o-${i}`, reasonCode: r.code, reason: `retention hold h${i}`, holdId: `h${i}` }))];
    // A document flagged held without a record it could name.
    held.push({ path: "activity/a-9", action: "retain", reasonCode: "LEGAL_HOLD", reason: "document carries a legal hold" } as typeof held[number]);
    const told = describeRetained([finance, ...held], policy, "subject");
    expect(told[0]).toEqual(describeRetained([finance], policy, "staff")[0]);
    expect(told.slice(1).map((t) => [t.reasonCode, t.reason, t.text.split(": ")[1], t.until])).toEqual(held.map(() => ["LEGAL_OBLIGATION", "Retained for a legal obligation.", "retained for a legal obligation", undefined]));
    const words = JSON.stringify(told);
    for (const secret of ["LITIGATION", "FRAUD", "REGULATOR", "investigation", "counsel", "regulator", "h1", "h2", "LEGAL_HOLD\""]) expect(words).not.toContain(secret);
  });
});

describe("deletion status summary freshness", () => {
  const now = { nowMs: 1_000_000, policyVersion: "v1", holdFence: 4, refreshMs: 15 * 60_000 };
  const stored = { plannedAtMs: now.nowMs - 60_000, policyVersion: "v1", holdFence: 4 };
  it("answers from the summary within the refresh interval while holds and policy are unchanged", () => {
    expect(summaryIsFresh(stored, now)).toBe(true);
    expect(summaryIsFresh(null, now)).toBe(false);
    expect(summaryIsFresh({ ...stored, plannedAtMs: now.nowMs - now.refreshMs }, now)).toBe(false);
    expect(summaryIsFresh({ ...stored, plannedAtMs: now.nowMs + 1 }, now)).toBe(false);
    expect(summaryIsFresh({ ...stored, policyVersion: "v0" }, now)).toBe(false);
  });
  it("plans again as soon as a hold is placed or released", () => {
    // Every placement and release moves the hold fence.
    expect(summaryIsFresh(stored, { ...now, holdFence: 5 })).toBe(false);
  });
});
