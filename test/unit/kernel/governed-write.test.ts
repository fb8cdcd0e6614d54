import { describe, expect, it } from "vitest";
import { DomainError } from "../../../functions/src/kernel/errors";
import { prepareGovernedWrite } from "../../../functions/src/kernel/governed-write";
import { applyHold } from "../../../functions/src/kernel/retention";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { policyV1 } from "../../helpers/policy";

const policy = policyV1();
const T0 = Date.parse("2026-11-01T00:00:00Z");

describe("the one write helper", () => {
  it("a new TTL document gets its class, ACTIVE state and expireAt from policy", () => {
    const g = prepareGovernedWrite({ path: "sessions/s1", data: { uid: "u" }, tenantId: "t", existing: null, nowMs: T0 }, policy);
    expect(g).toMatchObject({ retentionClass: "session-30d", lifecycleState: "ACTIVE", createdAtMs: T0, expireAtMs: T0 + 30 * DAY_MS, policyVersion: "v1" });
  });

  it("a rewrite neither drops nor resets the TTL value", () => {
    const first = prepareGovernedWrite({ path: "sessions/s1", data: {}, tenantId: "t", existing: null, nowMs: T0 }, policy);
    const later = prepareGovernedWrite({ path: "sessions/s1", data: { uid: "u" }, tenantId: "t", existing: first, nowMs: T0 + 10 * DAY_MS }, policy);
    expect(later.expireAtMs).toBe(first.expireAtMs);
    expect(later.createdAtMs).toBe(T0);
  });

  it("a rewrite of a held document keeps it without TTL", () => {
    const first = prepareGovernedWrite({ path: "events/e1", data: {}, tenantId: "t", existing: null, nowMs: T0 }, policy);
    const held = applyHold(first, "h1");
    const rewritten = prepareGovernedWrite({ path: "events/e1", data: { type: "x" }, tenantId: "t", existing: held, nowMs: T0 + DAY_MS }, policy);
    expect(rewritten).toMatchObject({ legalHold: true, expireAtMs: null, lifecycleState: "LEGAL_HOLD", holdIds: ["h1"] });
  });

  it("children copy the parent's expiry", () => {
    const g = prepareGovernedWrite(
      { path: "sessions/s1/tokens/t1", data: {}, tenantId: "t", existing: null, parentExpireAtMs: T0 + 7, nowMs: T0 },
      policy,
    );
    expect(g).toMatchObject({ retentionClass: "session-child-inherit", expireAtMs: T0 + 7 });
  });

  it("the class comes from the registry by path; payloads cannot smuggle retention fields", () => {
    for (const field of ["retentionClass", "lifecycleState", "expireAt", "legalHold", "policyVersion"]) {
      expect(() =>
        prepareGovernedWrite({ path: "auditRecords/a1", data: { [field]: "x" }, tenantId: "t", existing: null, nowMs: T0 }, policy),
      ).toThrowError(DomainError);
    }
  });

  it("refuses paths no class governs", () => {
    expect(() => prepareGovernedWrite({ path: "mystery/x", data: {}, tenantId: "t", existing: null, nowMs: T0 }, policy)).toThrow(/No retention class/);
  });
});
