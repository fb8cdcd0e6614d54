import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import {
  decideExecute,
  decideMark,
  evaluateForPurge,
  stepsToPurgeEligible,
  type PurgeDocFacts,
} from "../../../../functions/src/purge/rules/decide";
import { sweepTargets } from "../../../../functions/src/purge/rules/sweep";
import { policyV1 } from "../../../helpers/policy";

const NOW = Date.parse("2026-12-10T00:00:00Z");
const policy = policyV1();
const unit = { unitKey: "req-1", round: 2, policyVersion: "v1" };
const ctx = (over: Partial<Parameters<typeof evaluateForPurge>[1]> = {}) => ({ holds: [], workflowEligible: true, policy, nowMs: NOW, ...over });

function doc(over: Partial<PurgeDocFacts> = {}): PurgeDocFacts {
  return {
    path: "tenants/t-acme/users/u-1001",
    exists: true,
    retentionClass: "user-delete",
    lifecycleState: "SOFT_DELETED",
    legalHold: false,
    holdIds: [],
    expireAtMs: null,
    retainUntilMs: null,
    claim: null,
    ...over,
  };
}

describe("stepsToPurgeEligible", () => {
  it("routes every state through the machine", () => {
    expect(stepsToPurgeEligible("SOFT_DELETED", false)).toEqual(["PURGE_ELIGIBLE"]);
    expect(stepsToPurgeEligible("ACTIVE", false)).toEqual(["SOFT_DELETED", "PURGE_ELIGIBLE"]);
    expect(stepsToPurgeEligible("ACTIVE", true)).toEqual(["SOFT_DELETED", "ARCHIVED", "PURGE_ELIGIBLE"]);
    expect(stepsToPurgeEligible("ARCHIVED", true)).toEqual(["PURGE_ELIGIBLE"]);
    expect(stepsToPurgeEligible("PURGE_ELIGIBLE", false)).toEqual([]);
    expect(() => stepsToPurgeEligible("LEGAL_HOLD", false)).toThrow(expect.objectContaining({ reason: "INVALID_LIFECYCLE_LEGAL_HOLD_TO_PURGE_ELIGIBLE" }));
    expect(() => stepsToPurgeEligible("PURGED", false)).toThrow(expect.objectContaining({ reason: "INVALID_LIFECYCLE_PURGED_TO_PURGE_ELIGIBLE" }));
  });
});

describe("evaluateForPurge", () => {
  it("lets the workflow delete a soft-deleted user document", () => {
    expect(evaluateForPurge(doc(), ctx(), "pending")).toEqual({ path: doc().path, verdict: "delete", retentionClass: "user-delete", needsArchive: false });
  });

  it("puts holds first: flag, LEGAL_HOLD state, or a record on an ancestor", () => {
    expect(evaluateForPurge(doc({ legalHold: true, holdIds: ["h-1"] }), ctx(), "pending")).toMatchObject({ verdict: "held", holdId: "h-1" });
    expect(evaluateForPurge(doc({ lifecycleState: "LEGAL_HOLD", retentionClass: null }), ctx(), "pending")).toMatchObject({ verdict: "held" });
    const holds = [{ holdId: "h-t", targetPath: "tenants/t-acme", reasonCode: "LITIGATION" }];
    expect(evaluateForPurge(doc(), ctx({ holds }), "pending")).toEqual({ path: doc().path, verdict: "held", holdId: "h-t", reasonCode: "LITIGATION" });
  });

  it("refuses unknown classes, corrupted states and unexpired data without the workflow", () => {
    expect(evaluateForPurge(doc({ retentionClass: "nope" }), ctx(), "pending")).toMatchObject({ verdict: "blocked", reason: "UNKNOWN_POLICY" });
    expect(evaluateForPurge(doc({ lifecycleState: "WEIRD" }), ctx(), "pending")).toMatchObject({ verdict: "blocked", reason: "INVALID_STATE" });
    expect(evaluateForPurge(doc({ lifecycleState: "ACTIVE" }), ctx({ workflowEligible: false }), "pending")).toMatchObject({
      verdict: "blocked",
      reason: "NOT_EXPIRED",
    });
    expect(evaluateForPurge(doc({ exists: false }), ctx(), "pending")).toEqual({ path: doc().path, verdict: "gone" });
  });

  it("asks for an archive for audit records, and refuses them without a verified one", () => {
    const audit = doc({ path: "auditRecords/ar-1", retentionClass: "audit-7y", lifecycleState: "ACTIVE", retainUntilMs: NOW - DAY_MS });
    expect(evaluateForPurge(audit, ctx({ workflowEligible: false }), "pending")).toMatchObject({ verdict: "delete", needsArchive: true });
    expect(evaluateForPurge(audit, ctx({ workflowEligible: false }), false)).toMatchObject({ verdict: "blocked", reason: "ARCHIVE_NOT_VERIFIED" });
    expect(evaluateForPurge(audit, ctx({ workflowEligible: false }), true)).toMatchObject({ verdict: "delete", needsArchive: false });
  });
});

describe("decideMark and decideExecute", () => {
  it("marks once, whoever marked before", () => {
    expect(decideMark(doc(), unit, ctx(), false)).toEqual({ kind: "mark", from: "SOFT_DELETED", route: ["PURGE_ELIGIBLE"] });
    expect(decideMark(doc({ lifecycleState: "PURGE_ELIGIBLE", claim: unit }), unit, ctx(), false)).toEqual({ kind: "already" });
    const other = { unitKey: "sweep-sessions", round: 1, policyVersion: "v1" };
    expect(decideMark(doc({ lifecycleState: "PURGE_ELIGIBLE", claim: other }), unit, ctx(), false)).toMatchObject({ kind: "mark" });
    expect(decideMark(doc({ legalHold: true }), unit, ctx(), false)).toEqual({ kind: "skip", why: "HELD" });
    expect(decideMark(doc({ exists: false }), unit, ctx(), false)).toEqual({ kind: "skip", why: "GONE" });
  });

  it("marks again a document this round marked in another batch, so the mark names the batch that deletes it", () => {
    const claim = { ...unit, batch: "p1-own-d00-000000" };
    expect(decideMark(doc({ lifecycleState: "PURGE_ELIGIBLE", claim }), unit, ctx(), false, false, "p1-own-d00-000000")).toEqual({ kind: "already" });
    expect(decideMark(doc({ lifecycleState: "PURGE_ELIGIBLE", claim }), unit, ctx(), false, false, "p1-late-d00-000000")).toMatchObject({ kind: "mark", from: "PURGE_ELIGIBLE" });
    expect(decideMark(doc({ lifecycleState: "PURGE_ELIGIBLE", claim: unit }), unit, ctx(), false, false, "p1-late-d00-000000")).toMatchObject({ kind: "mark" });
  });

  it("deletes a trigger-collection document only under the mark of the batch that deletes it, else defers it", () => {
    const opts = { recorded: false, archiveVerified: false, descendantsRemain: false, markedBy: "p1-own-d00-000000" };
    const mine = doc({ lifecycleState: "PURGE_ELIGIBLE", claim: { ...unit, batch: "p1-own-d00-000000" } });
    expect(decideExecute(mine, unit, ctx(), opts)).toEqual({ path: mine.path, outcome: "delete", redecided: false });
    // Written afresh since the mark (no claim), marked by another batch, or by a mark that named no batch.
    for (const claim of [null, { ...unit, batch: "p1-own-d01-000000" }, unit]) {
      const d = doc({ lifecycleState: claim ? "PURGE_ELIGIBLE" : "SOFT_DELETED", claim });
      expect(decideExecute(d, unit, ctx(), opts)).toEqual({ path: d.path, outcome: "deferred" });
    }
  });

  const marked = (over: Partial<PurgeDocFacts> = {}) => doc({ lifecycleState: "PURGE_ELIGIBLE", claim: unit, ...over });
  const exec = (d: PurgeDocFacts, over: Partial<Parameters<typeof decideExecute>[3]> = {}, c = ctx()) =>
    decideExecute(d, unit, c, { recorded: true, archiveVerified: false, descendantsRemain: false, ...over });

  it("deletes the version its batch decided on, or this round's own mark, when nothing is left under it", () => {
    expect(exec(doc())).toEqual({ path: doc().path, outcome: "delete", redecided: false });
    expect(exec(marked(), { recorded: false })).toEqual({ path: doc().path, outcome: "delete", redecided: false });
    expect(exec(doc(), { descendantsRemain: true })).toEqual({ path: doc().path, outcome: "deferred" });
    expect(exec(doc({ exists: false }))).toEqual({ path: doc().path, outcome: "gone" });
  });

  it("judges a document that changed since its plan afresh: a delete then is a new decision", () => {
    expect(exec(doc(), { recorded: false })).toEqual({ path: doc().path, outcome: "delete", redecided: true });
    // Changed back to ACTIVE, outside any workflow, and not expired: no longer deletable.
    expect(exec(doc({ lifecycleState: "ACTIVE", path: "events/e-1", retentionClass: "event-90d", expireAtMs: NOW + DAY_MS }), { recorded: false }, ctx({ workflowEligible: false }))).toMatchObject({
      outcome: "blocked",
      reason: "NOT_EXPIRED",
    });
    // Another round's mark, or this round's under an earlier policy version, is no authority of its own.
    const stale = doc({ path: "events/e-1", retentionClass: "event-90d", lifecycleState: "PURGE_ELIGIBLE", expireAtMs: NOW + DAY_MS, claim: { ...unit, policyVersion: "v0" } });
    expect(exec(stale, { recorded: false }, ctx({ workflowEligible: false }))).toMatchObject({ outcome: "blocked", reason: "NOT_EXPIRED" });
    expect(exec({ ...stale, claim: { unitKey: "sweep-events", round: 1, policyVersion: "v1" } }, { recorded: false }, ctx({ workflowEligible: false }))).toMatchObject({ outcome: "blocked" });
    expect(exec({ ...stale, claim: unit }, { recorded: false }, ctx({ workflowEligible: false }))).toEqual({ path: "events/e-1", outcome: "delete", redecided: false });
  });

  it("treats an older decision as no authority when planning either", () => {
    expect(decideMark(doc({ lifecycleState: "PURGE_ELIGIBLE", claim: { ...unit, policyVersion: "v0" } }), unit, ctx(), false)).toMatchObject({ kind: "mark" });
    // A sweep judging a PURGE_ELIGIBLE document that is not expired, marked by a round that is over: not eligible.
    const stale = doc({ path: "events/e-1", retentionClass: "event-90d", lifecycleState: "PURGE_ELIGIBLE", expireAtMs: NOW + DAY_MS, claim: { unitKey: "sweep-events", round: 1, policyVersion: "v1" } });
    expect(evaluateForPurge(stale, ctx({ workflowEligible: false }), "pending")).toMatchObject({ verdict: "blocked", reason: "NOT_EXPIRED" });
    expect(evaluateForPurge({ ...stale, expireAtMs: NOW - 1 }, ctx({ workflowEligible: false }), "pending")).toMatchObject({ verdict: "delete" });
  });

  it("stops at a hold, flag or record, whatever the batch decided", () => {
    expect(exec(marked({ legalHold: true, holdIds: ["h-9"] }))).toEqual({ path: doc().path, outcome: "held", holdId: "h-9", reasonCode: "LEGAL_HOLD" });
    const holds = [{ holdId: "h-2", targetPath: doc().path, reasonCode: "FRAUD_INVESTIGATION" }];
    expect(exec(doc(), {}, ctx({ holds }))).toEqual({ path: doc().path, outcome: "held", holdId: "h-2", reasonCode: "FRAUD_INVESTIGATION" });
    const ancestor = [{ holdId: "h-3", targetPath: "tenants/t-acme", reasonCode: "LITIGATION" }];
    expect(exec(doc(), { descendantsRemain: true }, ctx({ holds: ancestor }))).toMatchObject({ outcome: "held", holdId: "h-3" });
  });

  it("re-verifies the archive at execution", () => {
    const audit = marked({ path: "auditRecords/ar-1", retentionClass: "audit-7y", retainUntilMs: NOW - DAY_MS });
    expect(exec(audit, { archiveVerified: false }, ctx({ workflowEligible: false }))).toMatchObject({ outcome: "blocked", reason: "ARCHIVE_NOT_VERIFIED" });
    expect(exec(audit, { archiveVerified: true }, ctx({ workflowEligible: false }))).toMatchObject({ outcome: "delete" });
  });
});

describe("sweepTargets", () => {
  it("sweeps the top-level collections whose class has a duration, by the right field", () => {
    expect(sweepTargets(policy)).toEqual([
      { collection: "auditRecords", field: "retainUntil" },
      { collection: "events", field: "expireAt" },
      { collection: "sessions", field: "expireAt" },
    ]);
  });
});

describe("records the plan archives (the data map's archive action)", () => {
  const order = (over: Partial<PurgeDocFacts> = {}) =>
    doc({ path: "tenants/t-acme/orders/o-1", retentionClass: "finance-7y", retainUntilMs: NOW + 365 * DAY_MS, ...over });

  it("evaluation: a finance record is deleted only when the plan archives it, and then needs its archive first", () => {
    expect(evaluateForPurge(order(), ctx(), "pending")).toMatchObject({ verdict: "blocked", reason: "NOT_EXPIRED" });
    expect(evaluateForPurge(order(), ctx(), "pending", false, true)).toEqual({ path: order().path, verdict: "delete", retentionClass: "finance-7y", needsArchive: true });
    expect(evaluateForPurge(order(), ctx(), false, false, true)).toMatchObject({ verdict: "blocked", reason: "ARCHIVE_NOT_VERIFIED" });
  });

  it("marking: a record the data map archives, with a verified archive in its batch, passes through ARCHIVED; without one it is not marked", () => {
    expect(decideMark(order(), unit, ctx(), true, true)).toEqual({ kind: "mark", from: "SOFT_DELETED", route: ["ARCHIVED", "PURGE_ELIGIBLE"] });
    expect(decideMark(order({ lifecycleState: "ACTIVE" }), unit, ctx(), true, true)).toEqual({ kind: "mark", from: "ACTIVE", route: ["SOFT_DELETED", "ARCHIVED", "PURGE_ELIGIBLE"] });
    expect(decideMark(order(), unit, ctx(), false, true)).toEqual({ kind: "skip", why: "NOT_ALLOWED" });
    // Not archived by the data map, a finance record under retention is never marked.
    expect(decideMark(order(), unit, ctx(), true)).toEqual({ kind: "skip", why: "NOT_ALLOWED" });
  });

  it("execution: a record the batch archives by the data map deletes only while its archive re-verifies, whatever the class says", () => {
    const exec = (archiveVerified: boolean, archivedByDataMap = true) =>
      decideExecute(order(), unit, ctx(), { recorded: true, archiveVerified, descendantsRemain: false, archivedByDataMap });
    expect(exec(true)).toEqual({ path: order().path, outcome: "delete", redecided: false });
    expect(exec(false)).toEqual({ path: order().path, outcome: "blocked", reason: "ARCHIVE_NOT_VERIFIED" });
    expect(exec(true, false)).toEqual({ path: order().path, outcome: "blocked", reason: "NOT_EXPIRED" });
    // A user document decided without an archive is unaffected.
    expect(decideExecute(doc(), unit, ctx(), { recorded: true, archiveVerified: false, descendantsRemain: false })).toEqual({ path: doc().path, outcome: "delete", redecided: false });
  });
});
