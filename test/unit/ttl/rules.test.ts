import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { classifyTtlDelete, markerExpireAtMs, ttlDeletePlan, ttlEvidenceBody, ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import { policyV1 } from "../../helpers/policy";

const policy = policyV1();
const T = Date.parse("2026-12-01T00:00:00Z");
const doc = (over: Partial<{ lifecycleState: string | null; legalHold: boolean; expireAtMs: number | null }> = {}) => ({
  path: "events/e-1",
  lifecycleState: "ACTIVE",
  legalHold: false,
  expireAtMs: T - 1,
  ...over,
});

describe("classifying a delete of a TTL-managed document", () => {
  it("an expiry at or before the delete is the sweeper", () => {
    expect(classifyTtlDelete(doc({ expireAtMs: T }), T)).toBe("SWEEPER");
    expect(classifyTtlDelete(doc({ expireAtMs: T - DAY_MS }), T)).toBe("SWEEPER");
  });

  it("a delete before expiry, or of a document without a TTL value, is unexplained", () => {
    expect(classifyTtlDelete(doc({ expireAtMs: T + 1 }), T)).toBe("UNEXPLAINED");
    expect(classifyTtlDelete(doc({ expireAtMs: null }), T)).toBe("UNEXPLAINED");
  });

  it("PURGE_ELIGIBLE is the purge workflow, expired or not", () => {
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE", expireAtMs: T + DAY_MS }), T)).toBe("WORKFLOW");
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE" }), T)).toBe("WORKFLOW");
  });

  it("a held document with a TTL value is an incident, whatever its state; without one it is a held-delete incident", () => {
    expect(classifyTtlDelete(doc({ legalHold: true }), T)).toBe("HELD_TTL_INCIDENT");
    expect(classifyTtlDelete(doc({ lifecycleState: "LEGAL_HOLD" }), T)).toBe("HELD_TTL_INCIDENT");
    // A hold placed mid-purge: the flag wins over PURGE_ELIGIBLE.
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE", legalHold: true }), T)).toBe("HELD_TTL_INCIDENT");
    expect(classifyTtlDelete(doc({ legalHold: true, expireAtMs: null }), T)).toBe("HELD_DELETE_INCIDENT");
    // Held by a record on an ancestor, with no mark on the document itself: held all the same.
    expect(classifyTtlDelete({ ...doc(), path: "tenants/t/orders/o/messages/m" }, T, [{ holdId: "h", targetPath: "tenants/t", reasonCode: "LITIGATION" }])).toBe("HELD_TTL_INCIDENT");
  });

  it("each class has its action: workflow deletes write nothing, held deletes never touch children", () => {
    expect(ttlDeletePlan("SWEEPER")).toEqual({ action: "TTL_DELETE", removeChildren: true, severity: "info" });
    expect(ttlDeletePlan("WORKFLOW")).toEqual({ action: null, removeChildren: false, severity: "info" });
    expect(ttlDeletePlan("HELD_TTL_INCIDENT")).toEqual({ action: "TTL_DELETE_HELD_INCIDENT", removeChildren: false, severity: "error" });
    expect(ttlDeletePlan("HELD_DELETE_INCIDENT")).toEqual({ action: "HELD_DELETE_INCIDENT", removeChildren: false, severity: "error" });
    expect(ttlDeletePlan("UNEXPLAINED")).toEqual({ action: "UNEXPLAINED_DELETE", removeChildren: true, severity: "warn" });
  });
});

describe("triggers generated from the registry", () => {
  it("one per TTL collection that owns its expiry; inherited children are handled by their parent", () => {
    expect(ttlTriggerTargets(policy)).toEqual([
      { name: "events", pattern: "events/{eventId}", childCollections: [] },
      { name: "sessions", pattern: "sessions/{sessionId}", childCollections: ["tokens"] },
    ]);
  });

  it("markers live for the registry's redelivery window", () => {
    expect(markerExpireAtMs(T, policy)).toBe(T + 7 * DAY_MS);
  });
});

describe("TTL delete evidence", () => {
  it("names paths, counts, class and versions, and carries no document content", () => {
    const body = ttlEvidenceBody({
      action: "TTL_DELETE",
      cls: "SWEEPER",
      actor: { type: "system", id: "ttlDeleted-sessions" },
      eventId: "ev-1",
      path: "sessions/s1",
      retentionClass: "session-30d",
      policyVersion: "v1",
      docPolicyVersion: null,
      expireAtMs: T - 1000,
      eventTimeMs: T,
      nowMs: T + 50,
      childrenRemoved: 2,
      childrenKept: 0,
      parentRecreated: false,
      holdId: null,
    });
    expect(body).toMatchObject({
      action: "TTL_DELETE",
      eventId: "ev-1",
      paths: ["sessions/s1"],
      counts: { childrenRemoved: 2, childrenKept: 0 },
      decision: { reason: "SWEEPER", retentionClass: "session-30d" },
      policyVersion: "v1",
      detail: { deletionLagMs: 1000 },
    });
    expect(Object.keys(body).sort()).toEqual(["action", "actor", "atMs", "counts", "decision", "detail", "eventId", "holdId", "paths", "policyVersion"]);
  });
});
