/**
 * The callables behind the compliance console, over HTTP on the emulators: listDeletionRequests,
 * listRetentionHolds, listBrakeRuns, explainDeletion, getRetentionReport, and getDeletionStatus without a
 * requestId. Happy paths (each answer parsed with the contract's output schema), paging, every refusal, and
 * what each role may not see.
 */
import { Timestamp } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { CALLABLES, type CallableName, type CallableOutput } from "../../../../functions/src/contract";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { policy } from "../../../../functions/src/platform/registry";
import { approveTenantClosure, openDeletionRequest } from "../../../../functions/src/requests/index";
import { call, db } from "../../../helpers/emulator";
import { callExpect, expectRefused, freshDemo, snapshotDatabase, type Tokens } from "./support";

/** Calls, expects success, and checks the answer against the contract's output schema. */
async function ok<N extends CallableName>(name: N, data: unknown, token: string): Promise<CallableOutput<N>> {
  const result = await callExpect<unknown>(name, data, token);
  return CALLABLES[name].output.parse(result) as CallableOutput<N>;
}

async function expectNothingWritten(action: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await action();
  expect(await snapshotDatabase()).toEqual(before);
}

describe("console callables", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  }, 120_000);

  it("getDeletionStatus without a requestId answers for the caller's latest request; staff see whose it is, the subject does not", async () => {
    expectRefused(await call("getDeletionStatus", {}, t.ada), "NOT_FOUND", "REQUEST_NOT_FOUND");
    const opened = await ok("requestAccountDeletion", {}, t.ada);
    // An older, finished request of Ada's: the latest is the open one.
    await db().doc("deletionRequests/old-one").set({ subjectType: "user", uid: "u-1001", tenantId: "t-acme", requestedBy: "u-1001", state: "CANCELLED", source: "user", requestedAt: Timestamp.fromMillis(Date.now() - 40 * DAY_MS), graceEndsAt: Timestamp.fromMillis(Date.now() - 33 * DAY_MS), dueAt: Timestamp.fromMillis(Date.now() - 10 * DAY_MS), timeline: [], policyVersion: "v1", softDeleted: 0 });
    const mine = await ok("getDeletionStatus", {}, t.ada);
    expect(mine).toMatchObject({ requestId: opened.requestId, state: "PENDING" });
    expect(mine.staff).toBeUndefined();
    expect(await ok("getDeletionStatus", { requestId: opened.requestId }, t.ada)).toEqual(mine);
    const staff = await ok("getDeletionStatus", { requestId: opened.requestId }, t.clara);
    // A customer is never named: the people map names staff only.
    expect(staff.staff).toEqual({
      subject: { type: "user", uid: "u-1001", tenantId: "t-acme" },
      subjectRef: { type: "user", uid: "u-1001", scope: "t-acme" },
      requestedBy: "u-1001",
      source: "user",
      blockedReason: null,
      retainedUnderHold: null,
      people: {},
    });
    // Ben has none; staff have none of their own.
    expectRefused(await call("getDeletionStatus", {}, t.ben), "NOT_FOUND", "REQUEST_NOT_FOUND");
    expectRefused(await call("getDeletionStatus", {}, t.clara), "NOT_FOUND", "REQUEST_NOT_FOUND");
    expectRefused(await call("getDeletionStatus", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
    // "Fully gone by": none while the erasure is not finished, none for a cancelled request; a PURGED one reports
    // the date its purge stored and when ERASURE_COMPLETE was recorded.
    expect(mine).toMatchObject({ fullyGoneBy: null, fullyGoneByUnknown: "NOT_ERASED_YET", erasureCompleteAt: null });
    expect(await ok("getDeletionStatus", { requestId: "old-one" }, t.ada)).toMatchObject({ state: "CANCELLED", fullyGoneBy: null, fullyGoneByUnknown: "CANCELLED", erasureCompleteAt: null });
    const goneBy = Date.parse("2026-03-01T00:00:00Z");
    await db().doc("deletionRequests/old-one").update({ state: "PURGED", fullyGoneBy: Timestamp.fromMillis(goneBy), erasureComplete: true, erasureCompleteAt: Timestamp.fromMillis(goneBy + DAY_MS) });
    expect(await ok("getDeletionStatus", { requestId: "old-one" }, t.ada)).toMatchObject({
      state: "PURGED",
      fullyGoneBy: "2026-03-01T00:00:00.000Z",
      fullyGoneByUnknown: null,
      erasureCompleteAt: "2026-03-02T00:00:00.000Z",
    });
  });

  it("listDeletionRequests: most urgent first, by state, only the overdue, paged; compliance only", async () => {
    const ada = await ok("requestAccountDeletion", {}, t.ada);
    const ben = await ok("requestAccountDeletion", { reason: "moving away" }, t.ben);
    // Ben's is overdue: due yesterday.
    await db().doc(`deletionRequests/${ben.requestId}`).update({ dueAt: Timestamp.fromMillis(Date.now() - DAY_MS) });
    const all = await ok("listDeletionRequests", {}, t.clara);
    expect(all.items.map((i) => i.requestId)).toEqual([ben.requestId, ada.requestId]);
    expect(all.items[0]).toMatchObject({ subject: { type: "user", uid: "u-1002", tenantId: "t-acme" }, requestedBy: "u-1002", state: "PENDING", overdue: true, blockedReason: null, retainedUnderHold: null });
    expect(all.items[1]).toMatchObject({ overdue: false });
    expect(all.items[0]!.softDeleted).toBeGreaterThan(0);
    // Never the subject's own words.
    expect(JSON.stringify(all)).not.toContain("moving away");
    expect(all.nextCursor).toBeNull();
    expect((await ok("listDeletionRequests", { overdueOnly: true }, t.clara)).items.map((i) => i.requestId)).toEqual([ben.requestId]);
    expect((await ok("listDeletionRequests", { overdueOnly: true, state: "PENDING" }, t.clara)).items.map((i) => i.requestId)).toEqual([ben.requestId]);
    expect((await ok("listDeletionRequests", { overdueOnly: true, state: "PURGED" }, t.clara)).items).toEqual([]);
    expect((await ok("listDeletionRequests", { state: "PENDING" }, t.clara)).items).toHaveLength(2);
    expect((await ok("listDeletionRequests", { state: "CANCELLED" }, t.clara)).items).toEqual([]);
    const first = await ok("listDeletionRequests", { pageSize: 1 }, t.clara);
    expect(first.items.map((i) => i.requestId)).toEqual([ben.requestId]);
    const second = await ok("listDeletionRequests", { pageSize: 1, cursor: first.nextCursor }, t.clara);
    expect(second.items.map((i) => i.requestId)).toEqual([ada.requestId]);
    expect(second.nextCursor).toBeNull();
    await expectNothingWritten(async () => {
      expectRefused(await call("listDeletionRequests", { pageSize: 1, state: "PENDING", cursor: first.nextCursor }, t.clara), "INVALID_ARGUMENT", "INVALID_CURSOR");
      expectRefused(await call("listDeletionRequests", { cursor: "not-a-cursor" }, t.clara), "INVALID_ARGUMENT", "INVALID_CURSOR");
      expectRefused(await call("listDeletionRequests", {}, t.ada), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("listDeletionRequests", {}, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("listDeletionRequests", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("listDeletionRequests", { pageSize: 101 }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("listDeletionRequests", { state: "DONE" }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("a tenant's closure is listed and shown with its tenant subject and the staff member who opened it", async () => {
    const user = await ok("requestAccountDeletion", {}, t.ada);
    const { request: closure } = await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-zeta" }, source: "staff", actor: { type: "staff", id: "r-3001" }, nowMs: Date.now() });
    // Awaiting its second approval, a closure has no due date yet: it is listed under AWAITING_APPROVAL, oldest first.
    const awaiting = await ok("listDeletionRequests", { state: "AWAITING_APPROVAL" }, t.clara);
    expect(awaiting.items.map((i) => i.requestId)).toEqual([closure.requestId]);
    expect(awaiting.items[0]).toMatchObject({ subject: { type: "tenant", tenantId: "t-zeta" }, state: "AWAITING_APPROVAL", graceEndsAt: null, dueAt: null, overdue: false });
    expect((await ok("listDeletionRequests", {}, t.clara)).items.map((i) => i.requestId)).toEqual([user.requestId]);
    await approveTenantClosure(closure.requestId, { type: "staff", id: "c-2001" }, Date.now());
    const all = await ok("listDeletionRequests", {}, t.clara);
    // The user's request is due first (30 days against the closure's 60, counted from its approval).
    expect(all.items.map((i) => i.requestId)).toEqual([user.requestId, closure.requestId]);
    expect(all.items[1]).toMatchObject({ subject: { type: "tenant", tenantId: "t-zeta" }, requestedBy: "r-3001", source: "staff", state: "PENDING" });
    expect(all.items[1]!.subject).not.toHaveProperty("uid");
    expect(all.people).toEqual({ "r-3001": { name: "Rita (retention-admin)", email: "rita.admin@atlasmart.test" } });
    const shown = await ok("getDeletionStatus", { requestId: closure.requestId }, t.clara);
    expect(shown.staff).toEqual({
      subject: { type: "tenant", tenantId: "t-zeta" },
      subjectRef: { type: "scope", id: "t-zeta" },
      requestedBy: "r-3001",
      source: "staff",
      blockedReason: null,
      retainedUnderHold: null,
      // The staff who opened it and who approved it, by name.
      people: {
        "r-3001": { name: "Rita (retention-admin)", email: "rita.admin@atlasmart.test" },
        "c-2001": { name: "Clara (compliance)", email: "clara.compliance@atlasmart.test" },
      },
    });
    // The staff member who opened it owns it and is answered as its owner; a customer of another tenant is not.
    expect((await ok("getDeletionStatus", { requestId: closure.requestId }, t.rita)).staff).toBeUndefined();
    expectRefused(await call("getDeletionStatus", { requestId: closure.requestId }, t.ada), "PERMISSION_DENIED", "NOT_OWNER");
  });

  it("listRetentionHolds: active and past holds, every filter combination, releaseAfter flagged, the two-person rule per caller, paged", async () => {
    const finance = await ok("placeRetentionHold", { targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION", note: "tax year 2026" }, t.clara);
    const past = new Date(Date.now() - DAY_MS).toISOString();
    const fraud = await ok("placeRetentionHold", { targetPath: "events/e-001", reasonCode: "FRAUD_INVESTIGATION", releaseAfter: past }, t.dev);
    const lit = await ok("placeRetentionHold", { targetPath: "auditRecords/ar-001", reasonCode: "LITIGATION" }, t.clara);

    const active = await ok("listRetentionHolds", {}, t.clara);
    expect(active.items.map((h) => h.holdId)).toEqual([lit.holdId, fraud.holdId, finance.holdId]);
    const f = active.items.find((h) => h.holdId === finance.holdId)!;
    expect(f).toMatchObject({ state: "ACTIVE", targetType: "document", tenantId: "t-acme", reasonCode: "FINANCE_RETENTION", twoPersonRelease: true, placedBy: "c-2001", note: "tax year 2026", pastReleaseAfter: false, releaseRefusal: "TWO_PERSON_RULE" });
    expect(active.items.find((h) => h.holdId === fraud.holdId)).toMatchObject({ pastReleaseAfter: true, releaseAfter: past, releaseRefusal: null });
    // The second officer may release Clara's finance hold.
    expect((await ok("listRetentionHolds", { reasonCode: "FINANCE_RETENTION" }, t.dev)).items).toEqual([expect.objectContaining({ holdId: finance.holdId, releaseRefusal: null })]);

    // Every combination of the three filters (each has its own index).
    const filters = { reasonCode: "LITIGATION", placedBy: "c-2001", targetPath: "auditRecords/ar-001" } as const;
    const keys = Object.keys(filters) as (keyof typeof filters)[];
    for (let mask = 1; mask < 8; mask++) {
      const input = Object.fromEntries(keys.filter((_, i) => mask & (1 << i)).map((k) => [k, filters[k]]));
      const expected = active.items.filter((h) => Object.entries(input).every(([k, v]) => h[k as keyof typeof h] === v)).map((h) => h.holdId);
      expect(expected.length).toBeGreaterThan(0);
      expect((await ok("listRetentionHolds", input, t.clara)).items.map((h) => h.holdId), JSON.stringify(input)).toEqual(expected);
    }
    expect((await ok("listRetentionHolds", { placedBy: "c-2002", reasonCode: "LITIGATION" }, t.clara)).items).toEqual([]);

    const page1 = await ok("listRetentionHolds", { pageSize: 2 }, t.clara);
    expect(page1.items.map((h) => h.holdId)).toEqual([lit.holdId, fraud.holdId]);
    const page2 = await ok("listRetentionHolds", { pageSize: 2, cursor: page1.nextCursor }, t.clara);
    expect(page2.items.map((h) => h.holdId)).toEqual([finance.holdId]);
    expect(page2.nextCursor).toBeNull();

    await ok("releaseRetentionHold", { holdId: finance.holdId, reason: "year closed" }, t.dev);
    const history = await ok("listRetentionHolds", { state: "RELEASED" }, t.clara);
    expect(history.items).toEqual([expect.objectContaining({ holdId: finance.holdId, state: "RELEASED", releasedBy: "c-2002", releaseReason: "year closed", releaseRefusal: "HOLD_NOT_ACTIVE" })]);
    expect((await ok("listRetentionHolds", { state: "RELEASED", reasonCode: "FINANCE_RETENTION", placedBy: "c-2001", targetPath: "tenants/t-acme/orders/o-1002" }, t.clara)).items).toHaveLength(1);
    expect((await ok("listRetentionHolds", {}, t.clara)).items.map((h) => h.holdId)).toEqual([lit.holdId, fraud.holdId]);

    await expectNothingWritten(async () => {
      expectRefused(await call("listRetentionHolds", { cursor: page1.nextCursor, reasonCode: "LITIGATION" }, t.clara), "INVALID_ARGUMENT", "INVALID_CURSOR");
      expectRefused(await call("listRetentionHolds", {}, t.ada), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("listRetentionHolds", {}, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("listRetentionHolds", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("listRetentionHolds", { targetPath: "a/../b" }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("listRetentionHolds", { state: "PENDING" }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("listBrakeRuns: the deletion sets the brake holds back, with units, manifest hashes and counts; staff only", async () => {
    const at = (ms: number) => Timestamp.fromMillis(ms);
    const now = Date.now();
    const record = (runKey: string, state: string, trippedMs: number) => ({
      runKey,
      state,
      units: ["sweep-events"],
      kind: "sweep",
      requestId: null,
      collection: "events",
      manifestHashes: [{ unitKey: "sweep-events", manifestHash: "f".repeat(64) }],
      countsByClass: { "event-90d": 60 },
      wouldDelete: 60,
      violations: [{ kind: "SHARE_OF_CLASS", retentionClass: "event-90d", share: 1 }],
      policyVersion: "v1",
      firstTrippedAt: at(trippedMs),
      lastTrippedAt: at(trippedMs),
      lastApprovalProblem: "NONE",
      trips: 1,
      decision: null,
    });
    await db().doc(`retentionJobs/brake-${"a".repeat(32)}`).set(record("a".repeat(32), "WAITING", now - 1000));
    await db().doc(`retentionJobs/brake-${"b".repeat(32)}`).set(record("b".repeat(32), "USED", now - 500));
    await db().doc(`retentionJobs/brake-${"c".repeat(32)}`).set(record("c".repeat(32), "DENIED", now));
    const open = await ok("listBrakeRuns", {}, t.rita);
    expect(open.items.map((r) => r.runKey)).toEqual(["c".repeat(32), "a".repeat(32)]);
    expect(open.items[1]).toMatchObject({ state: "WAITING", kind: "sweep", collection: "events", units: [{ unitKey: "sweep-events", manifestHash: "f".repeat(64) }], countsByClass: { "event-90d": 60 }, wouldDelete: 60, trips: 1, decision: null });
    expect((await ok("listBrakeRuns", {}, t.clara)).items).toHaveLength(2);
    expect((await ok("listBrakeRuns", { state: "USED" }, t.rita)).items.map((r) => r.runKey)).toEqual(["b".repeat(32)]);
    const p1 = await ok("listBrakeRuns", { pageSize: 1 }, t.rita);
    expect((await ok("listBrakeRuns", { pageSize: 1, cursor: p1.nextCursor }, t.rita)).items.map((r) => r.runKey)).toEqual(["a".repeat(32)]);
    await expectNothingWritten(async () => {
      expectRefused(await call("listBrakeRuns", { state: "USED", cursor: p1.nextCursor }, t.rita), "INVALID_ARGUMENT", "INVALID_CURSOR");
      expectRefused(await call("listBrakeRuns", {}, t.ada), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      expectRefused(await call("listBrakeRuns", {}, t.stranger), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      expectRefused(await call("listBrakeRuns", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("listBrakeRuns", { pageSize: 0 }, t.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("explainDeletion: a purged path, its request and its subject, who allowed it, and whether the chain verifies", async () => {
    const opened = await ok("requestAccountDeletion", {}, t.ada);
    const asOf = new Date(Date.now() + 8 * DAY_MS).toISOString();
    await callExpect("runRetentionJob", { job: "nightlyPurge", asOf }, t.rita);
    expect((await db().doc("userDirectory/u-1001").get()).exists).toBe(false);

    const byPath = await ok("explainDeletion", { path: "userDirectory/u-1001" }, t.clara);
    const actions = byPath.entries.filter((e) => e.role === "match").map((e) => e.action);
    expect(actions).toContain("PURGE_BATCH");
    const batch = byPath.entries.find((e) => e.action === "PURGE_BATCH")!;
    expect(batch).toMatchObject({ actor: { type: "system", id: "nightlyPurge" }, requestId: opened.requestId, paths: ["userDirectory/u-1001"], verified: true });
    expect(batch.pathCount).toBeGreaterThanOrEqual(1);
    // Who allowed it: the subject's own request and the run an operator started.
    const context = byPath.entries.filter((e) => e.role === "context");
    expect(context).toEqual(expect.arrayContaining([
      expect.objectContaining({ action: "DELETION_REQUESTED", actor: { type: "user", id: "u-1001" } }),
      expect.objectContaining({ action: "JOB_RUN", actor: { type: "staff", id: "r-3001" } }),
    ]));
    // About a path, other paths an entry names are not shown.
    for (const e of byPath.entries) for (const p of e.paths) expect(p).toBe("userDirectory/u-1001");
    expect(byPath.summary.some((s) => s.includes("PURGE_BATCH by the system (nightlyPurge)"))).toBe(true);
    expect(byPath.summary.some((s) => s.startsWith("allowed by: ") && s.includes("DELETION_REQUESTED by user u-1001"))).toBe(true);
    expect(byPath.verification).toMatchObject({ mode: "entries", ok: true, problems: [] });

    const byRequest = await ok("explainDeletion", { requestId: opened.requestId }, t.clara);
    expect(byRequest.entries.filter((e) => e.role === "match").map((e) => e.action)).toEqual(expect.arrayContaining(["DELETION_REQUESTED", "SUBJECT_SOFT_DELETED", "PURGE_DECIDED", "PURGE_BATCH", "PURGE_VERIFIED"]));
    const bySubject = await ok("explainDeletion", { subjectUid: "u-1001", verify: "chain" }, t.clara);
    expect(bySubject.entries.filter((e) => e.role === "match").map((e) => e.id)).toEqual(byRequest.entries.filter((e) => e.role === "match").map((e) => e.id));
    expect(bySubject.verification.mode).toBe("chain");
    expect(bySubject.verification.ok).toBe(true);
    // The whole ledger was walked: at least every entry this subject's request appended.
    expect(bySubject.verification.checked).toBeGreaterThanOrEqual(byRequest.entries.filter((e) => e.role === "match").length);
    expect((await ok("explainDeletion", { subjectUid: "u-9999" }, t.clara)).entries).toEqual([]);

    const page1 = await ok("explainDeletion", { requestId: opened.requestId, pageSize: 2 }, t.clara);
    const page2 = await ok("explainDeletion", { requestId: opened.requestId, pageSize: 2, cursor: page1.nextCursor }, t.clara);
    // Pages follow ledger ids: the next page starts after the last id of the one before, and repeats none of it.
    const firstIds = page1.entries.filter((e) => e.role === "match").map((e) => e.id);
    expect(page2.entries.length).toBeGreaterThan(0);
    for (const e of page2.entries) expect(firstIds).not.toContain(e.id);
    expect(page2.entries.map((e) => e.id).sort()[0]! > [...firstIds].sort()[1]!).toBe(true);
    expect(page2.entries.every((e) => e.role === "match")).toBe(true);

    // An edited entry no longer verifies, and the answer says which.
    await db().doc(`deletionAudits/${batch.id}`).update({ "decision.reason": "EDITED_BY_HAND" });
    const tampered = await ok("explainDeletion", { path: "userDirectory/u-1001" }, t.clara);
    expect(tampered.verification.ok).toBe(false);
    expect(tampered.verification.problems).toEqual(expect.arrayContaining([expect.objectContaining({ id: batch.id, chain: batch.chain, seq: batch.seq, problem: "EDITED" })]));
    expect(tampered.entries.find((e) => e.id === batch.id)!.verified).toBe(false);

    await expectNothingWritten(async () => {
      expectRefused(await call("explainDeletion", { subjectUid: "u-1001", cursor: page1.nextCursor, pageSize: 2 }, t.clara), "INVALID_ARGUMENT", "INVALID_CURSOR");
      expectRefused(await call("explainDeletion", { path: "userDirectory/u-1001" }, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("explainDeletion", { path: "userDirectory/u-1001" }, t.ada), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("explainDeletion", { path: "userDirectory/u-1001" }, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("explainDeletion", { path: "userDirectory/u-1001", requestId: opened.requestId }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("explainDeletion", {}, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("getRetentionReport: the dashboard's data, live, for compliance only", async () => {
    await ok("placeRetentionHold", { targetPath: "events/e-001", reasonCode: "FRAUD_INVESTIGATION" }, t.clara);
    await ok("requestAccountDeletion", {}, t.ada);
    await expectNothingWritten(async () => {
      const report = await ok("getRetentionReport", { skipSubjects: true }, t.clara);
      expect(report.audit.documents).toBeGreaterThan(10);
      expect(report.audit.activeHoldRecords).toBe(1);
      expect(report.audit.requests.unfinished).toBe(1);
      expect(report.evidence).toMatchObject({ ok: true, problems: [] });
      expect(report.evidence.checked).toBeGreaterThan(0);
      expect(report.policyVersion).toBe(policy().version);
      expectRefused(await call("getRetentionReport", {}, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("getRetentionReport", {}, t.ben), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("getRetentionReport", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("getRetentionReport", { skipSubjects: "yes" }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("getRetentionRegistry: the registry the functions enforce, for staff only, and nothing written", async () => {
    await expectNothingWritten(async () => {
      for (const token of [t.clara, t.rita]) {
        const enforced = await ok("getRetentionRegistry", {}, token);
        expect(enforced.version).toBe(policy().version);
        expect(enforced.registry).toEqual(policy().registry);
      }
      expectRefused(await call("getRetentionRegistry", {}, t.ada), "PERMISSION_DENIED", "NOT_STAFF");
      expectRefused(await call("getRetentionRegistry", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("getRetentionRegistry", { version: "v1" }, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });
});
