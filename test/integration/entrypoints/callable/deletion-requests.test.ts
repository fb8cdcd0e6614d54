import { getAuth } from "firebase-admin/auth";
import { beforeEach, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { policy } from "../../../../functions/src/platform/registry";
import { handleAuthUserDeleted } from "../../../../functions/src/entrypoints/auth/on-auth-user-deleted";
import { toMs } from "../../../../functions/src/platform/governed-doc";
import { addPeriod } from "../../../../functions/src/requests/rules/legal-clock";
import { adminApp, call, db, waitFor } from "../../../helpers/emulator";
import { callExpect, docData, evidenceActions, expectRefused, freshDemo, readChain, snapshotDatabase, verifyStoredChain, type Tokens } from "./support";

interface Opened {
  requestId: string;
  state: string;
  graceEndsAt: string;
}
interface Status {
  requestId: string;
  state: string;
  graceEndsAt: string;
  dueAt: string;
  timeline: { at: string; event: string; detail?: string }[];
  retained: { path: string; reasonCode: string; reason: string; until?: string; text: string }[];
}

/** What Ada's data map reaches and a request soft-deletes (delete and mask entries, nested and external). */
const ADA_SOFT_DELETED = [
  "activity/a-001",
  "sessions/s-1001",
  "sessions/s-1001/tokens/tk-1001",
  "tenants/t-acme/orders/o-1001",
  "tenants/t-acme/orders/o-1001/messages/m-001",
  "tenants/t-acme/orders/o-1002",
  "tenants/t-acme/users/u-1001",
  "userDirectory/u-1001",
];
const UNTOUCHED = ["auditRecords/ar-001", "tenants/t-acme/orders/o-1001/messages/m-002", "tenants/t-acme/users/u-1002", "activity/a-002"];

async function expectNothingWritten(action: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await action();
  expect(await snapshotDatabase()).toEqual(before);
}

describe("account deletion requests", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });

  it("requestAccountDeletion: opens one request with grace and due dates from policy and soft-deletes the data map at once", async () => {
    const before = Date.now();
    const opened = await callExpect<Opened>("requestAccountDeletion", { reason: "Please forget me, Ada" }, t.ada);
    expect(opened.state).toBe("PENDING");
    const req = await docData(`deletionRequests/${opened.requestId}`);
    expect(req).toMatchObject({
      requestId: opened.requestId,
      subjectType: "user",
      uid: "u-1001",
      tenantId: "t-acme",
      state: "PENDING",
      source: "user",
      reason: "Please forget me, Ada",
      policyVersion: policy().version,
      softDeleted: ADA_SOFT_DELETED.length,
    });
    const requestedAt = toMs(req.requestedAt)!;
    expect(requestedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(toMs(req.graceEndsAt)).toBe(requestedAt + 7 * DAY_MS);
    // Ada's directory entry names no region: her request runs on the registry's default law, GDPR's month.
    expect(toMs(req.dueAt)).toBe(addPeriod(requestedAt, { months: 1 }));
    expect(req.legalClock).toMatchObject({ law: "gdpr", extension: null });
    expect(opened.graceEndsAt).toBe(new Date(requestedAt + 7 * DAY_MS).toISOString());
    expect((req.timeline as { event: string }[]).map((e) => e.event)).toEqual(["REQUESTED", "SOFT_DELETED"]);

    for (const p of ADA_SOFT_DELETED) {
      const d = await docData(p);
      expect(d, p).toMatchObject({ lifecycleState: "SOFT_DELETED", preDeleteState: "ACTIVE", deletionRequestId: opened.requestId });
      expect(toMs(d.softDeletedAt), p).toBe(toMs(d.softDeletedAt));
    }
    for (const p of UNTOUCHED) expect((await docData(p)).lifecycleState, p).toBe("ACTIVE");
    // Product reads leave the subject's data out at once.
    const orders = await db().collection("tenants/t-acme/orders").where("lifecycleState", "==", "ACTIVE").get();
    expect(orders.empty).toBe(true);

    // Evidence: the request and the soft delete, with paths, and none of the user's words or names.
    const { entries } = await readChain();
    const actions = entries.map((e) => e.entry.action);
    expect(actions).toEqual(["DELETION_REQUESTED", "SUBJECT_SOFT_DELETED"]);
    expect(entries[0]!.entry).toMatchObject({ actor: { type: "user", id: "u-1001" }, requestId: opened.requestId, policyVersion: policy().version });
    expect(entries[1]!.entry.paths).toEqual(ADA_SOFT_DELETED);
    const evidenceText = JSON.stringify(entries);
    for (const secret of ["forget me", "Ada Lovelace", "Analytical", "Where is my parcel"]) expect(evidenceText).not.toContain(secret);
  });

  it("requestAccountDeletion: is idempotent while open, also under concurrent calls", async () => {
    const first = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    const again = await callExpect<Opened>("requestAccountDeletion", { reason: "again" }, t.ada);
    expect(again).toEqual(first);
    const parallel = await Promise.all(Array.from({ length: 6 }, () => callExpect<Opened>("requestAccountDeletion", {}, t.ben)));
    expect(new Set(parallel.map((p) => p.requestId)).size).toBe(1);
    const all = await db().collection("deletionRequests").get();
    expect(all.docs.map((d) => d.get("uid") as string).sort()).toEqual(["u-1001", "u-1002"]);
    expect((await docData(`deletionRequests/${first.requestId}`)).softDeleted).toBe(ADA_SOFT_DELETED.length);
    expect((await evidenceActions()).filter((a) => a === "DELETION_REQUESTED")).toHaveLength(2);
    // A request the purge is processing is still open: the same id comes back.
    await db().doc(`deletionRequests/${first.requestId}`).update({ state: "PROCESSING" });
    expect((await callExpect<Opened>("requestAccountDeletion", {}, t.ada)).requestId).toBe(first.requestId);
  });

  it("requestAccountDeletion: held documents stay as they are; the subject is told only of a legal obligation, compliance sees the hold's reason", async () => {
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION" }, t.clara);
    const opened = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    const held = await docData("tenants/t-acme/orders/o-1002");
    expect(held).toMatchObject({ lifecycleState: "LEGAL_HOLD", legalHold: true, holdIds: [holdId] });
    expect(held.deletionRequestId).toBeUndefined();
    expect((await docData(`deletionRequests/${opened.requestId}`)).softDeleted).toBe(ADA_SOFT_DELETED.length - 1);
    const status = await callExpect<Status>("getDeletionStatus", { requestId: opened.requestId }, t.ada);
    expect(status.retained.find((r) => r.path === "tenants/t-acme/orders/o-1002")).toEqual({
      path: "tenants/t-acme/orders/o-1002",
      reasonCode: "LEGAL_OBLIGATION",
      reason: "Retained for a legal obligation.",
      text: "order o-1002: retained for a legal obligation",
    });
    const staff = await callExpect<Status>("getDeletionStatus", { requestId: opened.requestId }, t.clara);
    expect(staff.retained.find((r) => r.path === "tenants/t-acme/orders/o-1002")).toEqual({
      path: "tenants/t-acme/orders/o-1002",
      reasonCode: "FINANCE_RETENTION",
      reason: "Finance or tax record retention.",
      text: "order o-1002: finance or tax record retention",
    });
  });

  it("requestAccountDeletion: refuses the unauthenticated, callers without a tenant, and bad payloads, writing nothing", async () => {
    await expectNothingWritten(async () => {
      expectRefused(await call("requestAccountDeletion", {}, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("requestAccountDeletion", {}, t.stranger), "PERMISSION_DENIED", "NO_TENANT_CLAIM");
      expectRefused(await call("requestAccountDeletion", {}, t.clara), "PERMISSION_DENIED", "NO_TENANT_CLAIM");
      expectRefused(await call("requestAccountDeletion", { reason: "x".repeat(501) }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("requestAccountDeletion", { reason: 42 }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("requestAccountDeletion", { uid: "u-1002" }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("requestAccountDeletion", ["x"], t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("getDeletionStatus: the owner and compliance see the timeline and what is retained, with reasons", async () => {
    const opened = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    const status = await callExpect<Status>("getDeletionStatus", { requestId: opened.requestId }, t.ada);
    expect(status).toMatchObject({ requestId: opened.requestId, state: "PENDING", graceEndsAt: opened.graceEndsAt });
    // Nothing is erased yet: no "fully gone by" date, and no ERASURE_COMPLETE.
    expect(status).toMatchObject({ fullyGoneBy: null, fullyGoneByUnknown: "NOT_ERASED_YET", erasureCompleteAt: null });
    expect(status.timeline.map((e) => e.event)).toEqual(["REQUESTED", "SOFT_DELETED"]);
    for (const e of status.timeline) expect(new Date(e.at).toISOString()).toBe(e.at);
    const order = status.retained.find((r) => r.path === "tenants/t-acme/orders/o-1001");
    const until = new Date(toMs((await docData("tenants/t-acme/orders/o-1001")).retainUntil)!).toISOString().slice(0, 10);
    expect(order).toMatchObject({ reasonCode: "FINANCE_RETENTION", until, text: `order o-1001: finance retention until ${until}` });
    expect(status.retained.find((r) => r.path === "auditRecords/ar-001")).toMatchObject({ reasonCode: "AUDIT_RETENTION" });
    // Compliance gets the same answer, plus whose request it is and why it is blocked or retained; `people` names
    // staff only, so the customer who asked is not named.
    const { staff, ...asStaff } = await callExpect<Status & { staff?: unknown }>("getDeletionStatus", { requestId: opened.requestId }, t.clara);
    expect(asStaff).toEqual(status);
    expect(staff).toEqual({
      subject: { type: "user", uid: "u-1001", tenantId: "t-acme" },
      // The same subject in the general form, beside the documented one.
      subjectRef: { type: "user", uid: "u-1001", scope: "t-acme" },
      requestedBy: "u-1001",
      source: "user",
      blockedReason: null,
      retainedUnderHold: null,
      people: {},
    });
  });

  it("getDeletionStatus: refuses another user, a non-compliance staff member, unknown ids, bad payloads and the unauthenticated", async () => {
    const opened = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    await expectNothingWritten(async () => {
      expectRefused(await call("getDeletionStatus", { requestId: opened.requestId }, null), "UNAUTHENTICATED");
      expectRefused(await call("getDeletionStatus", { requestId: opened.requestId }, t.ben), "PERMISSION_DENIED", "NOT_OWNER");
      expectRefused(await call("getDeletionStatus", { requestId: opened.requestId }, t.rita), "PERMISSION_DENIED", "NOT_OWNER");
      expectRefused(await call("getDeletionStatus", { requestId: "no-such-request" }, t.clara), "NOT_FOUND", "REQUEST_NOT_FOUND");
      expectRefused(await call("getDeletionStatus", { requestId: "a/b" }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("getDeletionStatus", { requestId: "" }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("getDeletionStatus", { requestId: opened.requestId, extra: 1 }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
  });

  it("cancelAccountDeletion: the owner cancels before the grace ends and everything comes back; a retry is idempotent", async () => {
    await callExpect("placeRetentionHold", { targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION" }, t.clara);
    const before = await snapshotDatabase();
    const opened = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    // A hold placed after the soft delete: the cancel must also fix what its release will restore.
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "activity/a-001", reasonCode: "LITIGATION" }, t.clara);
    expect((await docData("activity/a-001")).preHold).toMatchObject({ lifecycleState: "SOFT_DELETED" });

    expect(await callExpect("cancelAccountDeletion", { requestId: opened.requestId }, t.ada)).toEqual({ requestId: opened.requestId, state: "CANCELLED" });
    for (const p of ADA_SOFT_DELETED.filter((p) => p !== "tenants/t-acme/orders/o-1002" && p !== "activity/a-001")) {
      expect((await snapshotDatabase()).get(p), p).toEqual(before.get(p));
    }
    expect(await docData("activity/a-001")).toMatchObject({ lifecycleState: "LEGAL_HOLD", preHold: { lifecycleState: "ACTIVE" } });
    await callExpect("releaseRetentionHold", { holdId, reason: "case closed" }, t.dev);
    expect((await snapshotDatabase()).get("activity/a-001")).toEqual(before.get("activity/a-001"));

    const req = await docData(`deletionRequests/${opened.requestId}`);
    expect(req.state).toBe("CANCELLED");
    // CANCELLED comes only once everything is restored.
    expect((req.timeline as { event: string }[]).map((e) => e.event)).toEqual(["REQUESTED", "SOFT_DELETED", "CANCEL_REQUESTED", "RESTORED", "CANCELLED"]);
    expect(await callExpect("cancelAccountDeletion", { requestId: opened.requestId }, t.ada)).toEqual({ requestId: opened.requestId, state: "CANCELLED" });
    expect((await evidenceActions()).filter((a) => a === "DELETION_CANCELLED")).toHaveLength(1);
    // A request/cancel loop gets a cooldown: asking again at once is refused, and nothing is written.
    await expectNothingWritten(async () => {
      const refused = await call("requestAccountDeletion", {}, t.ada);
      expectRefused(refused, "RESOURCE_EXHAUSTED", "REQUEST_COOLDOWN");
      if (!refused.ok) expect(Date.parse(String(refused.error.details?.retryAfter))).toBeGreaterThan(Date.now());
    });
    // Once it has passed, asking again opens a new request.
    await db().doc(`deletionRequests/${opened.requestId}`).update({ cancelledAt: new Date(Date.now() - 2 * 3_600_000) });
    const next = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    expect(next.requestId).not.toBe(opened.requestId);
    expect((await verifyStoredChain()).ok).toBe(true);
  });

  it("cancelAccountDeletion: refuses another user, a request the purge has taken, an expired grace, unknown ids, bad payloads and the unauthenticated", async () => {
    const opened = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    const ref = db().doc(`deletionRequests/${opened.requestId}`);
    await expectNothingWritten(async () => {
      expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId }, null), "UNAUTHENTICATED");
      expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId }, t.ben), "PERMISSION_DENIED", "NOT_OWNER");
      expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId }, t.clara), "PERMISSION_DENIED", "NOT_OWNER");
      expectRefused(await call("cancelAccountDeletion", { requestId: "nope" }, t.ada), "NOT_FOUND", "REQUEST_NOT_FOUND");
      expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId, force: true }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("cancelAccountDeletion", { requestId: "" }, t.ada), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    });
    await ref.update({ graceEndsAt: new Date(Date.now() - 1000) });
    await expectNothingWritten(async () => {
      expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId }, t.ada), "FAILED_PRECONDITION", "GRACE_EXPIRED");
    });
    for (const state of ["PROCESSING", "PURGED", "BLOCKED", "RETAINED_UNDER_HOLD"]) {
      await ref.update({ state, graceEndsAt: new Date(Date.now() + DAY_MS) });
      await expectNothingWritten(async () => {
        expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId }, t.ada), "FAILED_PRECONDITION", "ALREADY_PROCESSING");
      });
    }
    // Still PENDING, but a purge run holds its lease: the cancel loses too.
    await ref.update({ state: "PENDING", lease: { owner: "nightlyPurge:test", expiresAt: new Date(Date.now() + 60_000) } });
    await expectNothingWritten(async () => {
      expectRefused(await call("cancelAccountDeletion", { requestId: opened.requestId }, t.ada), "FAILED_PRECONDITION", "ALREADY_PROCESSING");
    });
    for (const p of ADA_SOFT_DELETED) expect((await docData(p)).lifecycleState, p).toBe("SOFT_DELETED");
  });
});

describe("the Auth delete backstop", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });

  it("deleting an Auth user via the Admin SDK opens exactly one request, idempotently, with source auth-backstop", async () => {
    await getAuth(adminApp()).deleteUser("u-1002");
    const opened = await waitFor(async () => {
      const snap = await db().collection("deletionRequests").where("uid", "==", "u-1002").get();
      return snap.empty ? null : snap.docs;
    }, "the backstop's deletion request");
    expect(opened).toHaveLength(1);
    expect(opened[0]!.data()).toMatchObject({ uid: "u-1002", tenantId: "t-acme", source: "auth-backstop", state: "PENDING", subjectType: "user" });
    await waitFor(async () => (await docData("userDirectory/u-1002")).lifecycleState === "SOFT_DELETED", "the backstop's soft delete");
    // Redelivery of the event (same id) and a second event for the same uid add nothing.
    const eventId = String(opened[0]!.get("sourceEventId"));
    const again = await handleAuthUserDeleted({ uid: "u-1002", customClaims: { tenantId: "t-acme" } }, eventId, Date.now());
    const other = await handleAuthUserDeleted({ uid: "u-1002" }, "another-event", Date.now());
    expect(again).toEqual({ requestId: opened[0]!.id, created: false });
    expect(other).toEqual({ requestId: opened[0]!.id, created: false });
    expect((await db().collection("deletionRequests").where("uid", "==", "u-1002").get()).size).toBe(1);
    const actions = await evidenceActions();
    expect(actions.filter((a) => a === "BACKSTOP_REQUEST_OPENED")).toHaveLength(1);
    const entry = (await readChain()).entries.find((e) => e.entry.action === "BACKSTOP_REQUEST_OPENED")!.entry;
    expect(entry).toMatchObject({ actor: { type: "system", id: "authBackstop" }, eventId, requestId: opened[0]!.id });
  });

  it("recognises a request the workflow already has (PENDING, PROCESSING, PURGED) as handled", async () => {
    const opened = await callExpect<Opened>("requestAccountDeletion", {}, t.ada);
    for (const state of ["PENDING", "PROCESSING", "PURGED"]) {
      await db().doc(`deletionRequests/${opened.requestId}`).update({ state });
      const r = await handleAuthUserDeleted({ uid: "u-1001", customClaims: { tenantId: "t-acme" } }, `evt-${state}`, Date.now());
      expect(r).toEqual({ requestId: opened.requestId, created: false });
    }
    expect((await db().collection("deletionRequests").get()).size).toBe(1);
    // After a cancel the uid is no longer covered: an Auth delete opens a fresh request.
    await db().doc(`deletionRequests/${opened.requestId}`).update({ state: "CANCELLED" });
    const fresh = await handleAuthUserDeleted({ uid: "u-1001", customClaims: { tenantId: "t-acme" } }, "evt-after-cancel", Date.now());
    expect(fresh.created).toBe(true);
    expect(fresh.requestId).not.toBe(opened.requestId);
  });

  it("finds the tenant in the user directory when the deleted account carried no claim, and skips staff without tenant data", async () => {
    const r = await handleAuthUserDeleted({ uid: "u-1002" }, "evt-directory", Date.now());
    expect(r.created).toBe(true);
    expect((await docData(`deletionRequests/${r.requestId}`)).tenantId).toBe("t-acme");
    const before = await snapshotDatabase();
    expect(await handleAuthUserDeleted({ uid: "c-2001", customClaims: { roles: ["compliance"] } }, "evt-staff", Date.now())).toEqual({ requestId: null, created: false });
    expect(await snapshotDatabase()).toEqual(before);
  });
});
