import { describe, expect, it } from "vitest";
import { evaluateDestroy, type DestroyInput } from "../../../functions/src/kernel/destroy-predicate";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { policyV1 } from "../../helpers/policy";

const NOW = Date.parse("2026-11-30T12:00:00Z");
const policy = policyV1();

function input(over: Partial<Omit<DestroyInput, "doc">> & { doc?: Partial<DestroyInput["doc"]> } = {}): DestroyInput {
  return {
    path: "events/e-1",
    activeHolds: [],
    archiveVerified: false,
    workflowEligible: false,
    ...over,
    doc: {
      retentionClass: "event-90d",
      lifecycleState: "ACTIVE",
      legalHold: false,
      expireAtMs: NOW - DAY_MS,
      retainUntilMs: null,
      ...over.doc,
    },
  };
}

describe("destroy predicate", () => {
  it("AUTHORIZED_BY_POLICY when all four conditions hold, recording the policy version", () => {
    const d = evaluateDestroy(input(), policy, NOW);
    expect(d).toMatchObject({ allowed: true, reason: "AUTHORIZED_BY_POLICY", policyVersion: "v1", decidedAtMs: NOW });
  });

  it("LEGAL_HOLD when the document carries a hold flag", () => {
    expect(evaluateDestroy(input({ doc: { legalHold: true } }), policy, NOW)).toMatchObject({ allowed: false, reason: "LEGAL_HOLD" });
  });

  it("LEGAL_HOLD when an active hold record covers an ancestor (subtree hold), even if the flag is missing", () => {
    const d = evaluateDestroy(
      input({ path: "tenants/t-acme/orders/o-1/messages/m-1", doc: { retentionClass: "user-delete", lifecycleState: "PURGE_ELIGIBLE" }, activeHolds: [{ holdId: "h1", targetPath: "tenants/t-acme", reasonCode: "LITIGATION" }] }),
      policy,
      NOW,
    );
    expect(d.reason).toBe("LEGAL_HOLD");
  });

  it("a hold on a sibling prefix does not cover the path", () => {
    const d = evaluateDestroy(input({ activeHolds: [{ holdId: "h1", targetPath: "events/e-10", reasonCode: "LITIGATION" }] }), policy, NOW);
    expect(d.reason).toBe("AUTHORIZED_BY_POLICY");
  });

  it("LEGAL_HOLD wins over every other reason (held, unknown class, not expired)", () => {
    const d = evaluateDestroy(input({ doc: { legalHold: true, retentionClass: "nope", expireAtMs: NOW + DAY_MS } }), policy, NOW);
    expect(d.reason).toBe("LEGAL_HOLD");
  });

  it("UNKNOWN_POLICY when the class is missing or unknown", () => {
    expect(evaluateDestroy(input({ doc: { retentionClass: "made-up-class" } }), policy, NOW).reason).toBe("UNKNOWN_POLICY");
    expect(evaluateDestroy(input({ doc: { retentionClass: null } }), policy, NOW).reason).toBe("UNKNOWN_POLICY");
  });

  it("ARCHIVE_NOT_VERIFIED when the class requires an archive and none is verified", () => {
    const audit = { retentionClass: "audit-7y", expireAtMs: null, retainUntilMs: NOW - DAY_MS };
    expect(evaluateDestroy(input({ path: "auditRecords/a", doc: audit }), policy, NOW).reason).toBe("ARCHIVE_NOT_VERIFIED");
    expect(evaluateDestroy(input({ path: "auditRecords/a", doc: audit, archiveVerified: true }), policy, NOW).reason).toBe("AUTHORIZED_BY_POLICY");
  });

  it("NOT_EXPIRED before expiry, and at exactly the expiry instant it is expired", () => {
    expect(evaluateDestroy(input({ doc: { expireAtMs: NOW + 1 } }), policy, NOW).reason).toBe("NOT_EXPIRED");
    expect(evaluateDestroy(input({ doc: { expireAtMs: NOW } }), policy, NOW).reason).toBe("AUTHORIZED_BY_POLICY");
  });

  it("PURGE_ELIGIBLE through the workflow satisfies condition 4 without expiry only as the acting round's current decision", () => {
    const doc = { retentionClass: "user-delete", expireAtMs: null, lifecycleState: "PURGE_ELIGIBLE" as const };
    expect(evaluateDestroy(input({ path: "userDirectory/u", doc, currentDecision: true }), policy, NOW).reason).toBe("AUTHORIZED_BY_POLICY");
    // An older mark is no standing authorisation: judged on expiry and the workflow like any document.
    expect(evaluateDestroy(input({ path: "userDirectory/u", doc }), policy, NOW).reason).toBe("NOT_EXPIRED");
    expect(evaluateDestroy(input({ path: "userDirectory/u", doc, workflowEligible: true }), policy, NOW).reason).toBe("AUTHORIZED_BY_POLICY");
  });

  it("workflow eligibility only applies to user-deletable classes", () => {
    const userDoc = { retentionClass: "user-delete", expireAtMs: null, lifecycleState: "SOFT_DELETED" as const };
    expect(evaluateDestroy(input({ path: "userDirectory/u", doc: userDoc, workflowEligible: true }), policy, NOW).reason).toBe("AUTHORIZED_BY_POLICY");
    expect(evaluateDestroy(input({ path: "userDirectory/u", doc: userDoc, workflowEligible: false }), policy, NOW).reason).toBe("NOT_EXPIRED");
    const order = { retentionClass: "finance-7y", expireAtMs: null, retainUntilMs: NOW + 100 * DAY_MS, lifecycleState: "SOFT_DELETED" as const };
    expect(evaluateDestroy(input({ path: "tenants/t/orders/o", doc: order, workflowEligible: true }), policy, NOW).reason).toBe("NOT_EXPIRED");
  });
});
