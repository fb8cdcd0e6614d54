import { describe, expect, it } from "vitest";
import { backfillPhases, planBackfillFix, type BackfillDocFacts } from "../../../functions/src/backfill/rules";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { policyV1 } from "../../helpers/policy";

const policy = policyV1();
const T0 = Date.parse("2026-11-01T00:00:00Z");
const facts = (path: string, over: Partial<BackfillDocFacts> = {}): BackfillDocFacts => ({
  path,
  legalHold: false,
  lifecycleState: "ACTIVE",
  expireAtMs: null,
  anchorMs: T0,
  ...over,
});

describe("planning backfill fixes", () => {
  it("a TTL document without expireAt gets one from its class and anchor", () => {
    expect(planBackfillFix(facts("sessions/s1"), undefined, policy, [])).toEqual({ kind: "SET_EXPIRE_AT", expireAtMs: T0 + 30 * DAY_MS });
    expect(planBackfillFix(facts("events/e1"), undefined, policy, [])).toEqual({ kind: "SET_EXPIRE_AT", expireAtMs: T0 + 90 * DAY_MS });
  });

  it("an existing TTL value is never moved, and a second plan of a fixed document is NONE", () => {
    expect(planBackfillFix(facts("sessions/s1", { expireAtMs: T0 + 5 }), undefined, policy, [])).toEqual({ kind: "NONE", reason: "HAS_EXPIRE_AT" });
  });

  it("held documents never get a TTL value: by flag, by state, or by a hold record on an ancestor", () => {
    expect(planBackfillFix(facts("events/e1", { legalHold: true }), undefined, policy, [])).toEqual({ kind: "NONE", reason: "HELD" });
    expect(planBackfillFix(facts("events/e1", { lifecycleState: "LEGAL_HOLD" }), undefined, policy, [])).toEqual({ kind: "NONE", reason: "HELD" });
    const hold = { holdId: "h1", targetPath: "sessions/s1", reasonCode: "LITIGATION" };
    expect(planBackfillFix(facts("sessions/s1/tokens/t1"), facts("sessions/s1", { expireAtMs: T0 }), policy, [hold])).toEqual({ kind: "NONE", reason: "HELD" });
  });

  it("non-TTL classes are left alone; a document with no anchor is reported, not guessed", () => {
    expect(planBackfillFix(facts("tenants/t/users/u"), undefined, policy, [])).toEqual({ kind: "NONE", reason: "NOT_TTL" });
    expect(planBackfillFix(facts("events/e1", { anchorMs: null }), undefined, policy, [])).toEqual({ kind: "NONE", reason: "NO_ANCHOR" });
  });

  it("a child copies its living parent's expiry, or the expiry the parent is about to get", () => {
    const child = facts("sessions/s1/tokens/t1");
    expect(planBackfillFix(child, facts("sessions/s1", { expireAtMs: T0 + 7 }), policy, [])).toEqual({ kind: "INHERIT_EXPIRE_AT", expireAtMs: T0 + 7 });
    expect(planBackfillFix(child, facts("sessions/s1", { anchorMs: T0 + DAY_MS }), policy, [])).toEqual({
      kind: "INHERIT_EXPIRE_AT",
      expireAtMs: T0 + 31 * DAY_MS,
    });
    expect(planBackfillFix(child, facts("sessions/s1", { legalHold: true }), policy, [])).toEqual({ kind: "NONE", reason: "PARENT_HAS_NO_EXPIRY" });
  });

  it("a child whose parent is gone is an orphan to delete, unless it is held", () => {
    expect(planBackfillFix(facts("sessions/gone/tokens/t1"), null, policy, [])).toEqual({ kind: "DELETE_ORPHAN" });
    expect(planBackfillFix(facts("sessions/gone/tokens/t1", { expireAtMs: T0 }), null, policy, [])).toEqual({ kind: "DELETE_ORPHAN" });
    expect(planBackfillFix(facts("sessions/gone/tokens/t1", { legalHold: true }), null, policy, [])).toEqual({ kind: "NONE", reason: "ORPHAN_HELD" });
  });
});

describe("the pass order", () => {
  it("parents before children, in a fixed order", () => {
    expect(backfillPhases(policy).map((p) => [p.pattern, p.inherits, p.topLevel])).toEqual([
      ["events/{eventId}", false, true],
      ["sessions/{sessionId}", false, true],
      ["sessions/{sessionId}/tokens/{tokenId}", true, false],
    ]);
  });
});
