import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import {
  classifyTtlDelete,
  markerExpireAtMs,
  purgeBatchExplains,
  purgeMarkOf,
  ttlChildrenEvidenceBody,
  ttlDeletePlan,
  ttlEvidenceBody,
  ttlTriggerTargets,
  versionBefore,
  versionString,
  type PurgeBatchWitness,
} from "../../../functions/src/ttl/rules";
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

  it("PURGE_ELIGIBLE alone explains nothing: without a committed batch, a marked document's delete is classed like any other", () => {
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE", expireAtMs: T + DAY_MS }), T)).toBe("UNEXPLAINED");
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE", expireAtMs: null }), T)).toBe("UNEXPLAINED");
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE" }), T)).toBe("SWEEPER");
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE", expireAtMs: null }), T, [{ holdId: "h", targetPath: "events/e-1", reasonCode: "LITIGATION" }])).toBe("HELD_DELETE_INCIDENT");
  });

  it("a delete a committed batch explains is the workflow's, even under a hold placed after it", () => {
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE", expireAtMs: T + DAY_MS }), T, [], true)).toBe("WORKFLOW");
    expect(classifyTtlDelete(doc({ lifecycleState: "PURGE_ELIGIBLE" }), T, [{ holdId: "h", targetPath: "events/e-1", reasonCode: "LITIGATION" }], true)).toBe("WORKFLOW");
  });

  it("a held document with a TTL value is an incident, whatever its state; without one it is a held-delete incident", () => {
    expect(classifyTtlDelete(doc({ legalHold: true }), T)).toBe("HELD_TTL_INCIDENT");
    expect(classifyTtlDelete(doc({ lifecycleState: "LEGAL_HOLD" }), T)).toBe("HELD_TTL_INCIDENT");
    // A hold placed mid-purge, on a document no batch deleted: the flag wins over PURGE_ELIGIBLE.
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
      childrenRemoved: 5,
      childrenKept: 0,
      childPaths: ["sessions/s1/tokens/t4", "sessions/s1/tokens/t5"],
      childPages: 1,
      parentRecreated: false,
      holdId: null,
      mark: null,
    });
    expect(body).toMatchObject({
      action: "TTL_DELETE",
      eventId: "ev-1",
      // The deleted document first, then the children this commit removed.
      paths: ["sessions/s1", "sessions/s1/tokens/t4", "sessions/s1/tokens/t5"],
      counts: { childrenRemoved: 5, childrenKept: 0, childrenNamed: 2, childPages: 1 },
      decision: { reason: "SWEEPER", retentionClass: "session-30d" },
      policyVersion: "v1",
      detail: { deletionLagMs: 1000 },
    });
    expect(Object.keys(body).sort()).toEqual(["action", "actor", "atMs", "counts", "decision", "detail", "eventId", "holdId", "paths", "policyVersion"]);
  });
});

describe("a committed purge batch explains a delete", () => {
  const mark = { unitKey: "sweep-sessions", batch: "p1xabc-own-d01-000000" };
  const deleted = { path: "sessions/s1", version: "1796000000.000100000", mark };
  const entry = (over: Partial<PurgeBatchWitness> = {}): PurgeBatchWitness => ({
    action: "PURGE_BATCH",
    paths: ["sessions/s0", "sessions/s1"],
    detail: { batch: mark.batch, unitKey: mark.unitKey },
    signed: true,
    committedVersion: "1796000000.000200000",
    ...over,
  });

  it("when its signed PURGE_BATCH entry names the path, and it committed after the deleted version", () => {
    expect(purgeBatchExplains(deleted, entry())).toBe(true);
  });

  it("never when the entry is unsigned, of another kind, another batch or unit, or does not name the path", () => {
    expect(purgeBatchExplains(deleted, entry({ signed: false }))).toBe(false);
    expect(purgeBatchExplains(deleted, entry({ action: "PURGE_OBSERVED_GONE" }))).toBe(false);
    expect(purgeBatchExplains(deleted, entry({ detail: { batch: "p1xabc-own-d01-000001", unitKey: mark.unitKey } }))).toBe(false);
    expect(purgeBatchExplains(deleted, entry({ detail: { batch: mark.batch, unitKey: "sweep-events" } }))).toBe(false);
    expect(purgeBatchExplains(deleted, entry({ paths: ["sessions/s0"] }))).toBe(false);
  });

  it("never for a version written at or after the batch's commit (a copy re-created after the purge), nor without a version", () => {
    expect(purgeBatchExplains({ ...deleted, version: "1796000000.000200000" }, entry())).toBe(false);
    expect(purgeBatchExplains({ ...deleted, version: "1796000001.000000000" }, entry())).toBe(false);
    expect(purgeBatchExplains({ ...deleted, version: null }, entry())).toBe(false);
  });

  it("a path the batch decided again is explained only for the version it decided", () => {
    const redecided = (v: string) => entry({ detail: { batch: mark.batch, unitKey: mark.unitKey, redecided: `sessions/s0@1.000000001\nsessions/s1@${v}` } });
    expect(purgeBatchExplains(deleted, redecided(deleted.version))).toBe(true);
    // The batch deleted a version written after the marked one: the marked version's delete was someone else's.
    expect(purgeBatchExplains(deleted, redecided("1796000000.000150000"))).toBe(false);
  });

  it("the mark names the unit and batch, or there is none", () => {
    expect(purgeMarkOf({ lifecycleState: "PURGE_ELIGIBLE", purgeDecision: { unitKey: "u-1", batch: "b-1", round: 1 } })).toEqual({ unitKey: "u-1", batch: "b-1" });
    expect(purgeMarkOf({ lifecycleState: "PURGE_ELIGIBLE" })).toBeNull();
    expect(purgeMarkOf({ purgeDecision: { unitKey: "u-1" } })).toBeNull();
    expect(purgeMarkOf(undefined)).toBeNull();
  });

  it("versions order by seconds, then nanoseconds", () => {
    expect(versionString({ seconds: 12, nanoseconds: 3400 })).toBe("12.000003400");
    expect(versionBefore("12.000003400", "12.000003401")).toBe(true);
    expect(versionBefore("12.999999999", "13.000000000")).toBe(true);
    expect(versionBefore("13.000000000", "12.999999999")).toBe(false);
    expect(versionBefore("12.000003400", "12.000003400")).toBe(false);
    expect(versionBefore("12.34", "13.000000000")).toBe(false);
  });
});

describe("evidence of the children a delete removes", () => {
  it("a page before the last names its children in an entry of its own, bounded by the page", () => {
    const body = ttlChildrenEvidenceBody({
      cls: "UNEXPLAINED",
      actor: { type: "system", id: "ttlDeleted-sessions" },
      eventId: "ev-2",
      parentPath: "sessions/s2",
      retentionClass: "session-30d",
      policyVersion: "v1",
      nowMs: T,
      childPaths: ["sessions/s2/tokens/a", "sessions/s2/tokens/b"],
      kept: 1,
      page: 0,
      fenceGeneration: 4,
    });
    expect(body).toEqual({
      action: "TTL_CHILDREN_DELETED",
      actor: { type: "system", id: "ttlDeleted-sessions" },
      decision: { reason: "UNEXPLAINED", retentionClass: "session-30d" },
      policyVersion: "v1",
      atMs: T,
      eventId: "ev-2",
      paths: ["sessions/s2/tokens/a", "sessions/s2/tokens/b"],
      counts: { childrenRemoved: 2, childrenKept: 1, page: 0 },
      detail: { parentPath: "sessions/s2", fenceGeneration: 4 },
    });
  });
});
