/**
 * The tenant-closure callables over HTTP (the functions emulator, Auth-emulator tokens): requestTenantDeletion
 * (retention-admin), approveTenantDeletion (a second staff member) and cancelTenantDeletion (a retention-admin),
 * their happy paths and every refusal they document, each refusal writing nothing.
 */
import { Timestamp } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { toMs } from "../../../../functions/src/platform/governed-doc";
import { call, db, idTokenFor } from "../../../helpers/emulator";
import { callExpect, docData, expectRefused, freshDemo, readChain, snapshotDatabase, verifyStoredChain, type Tokens } from "./support";

interface Requested {
  requestId: string;
  state: string;
  requestedBy: string;
  created: boolean;
  graceEndsAt: string | null;
}
interface Approved {
  requestId: string;
  state: string;
  approvedBy: string | null;
  graceEndsAt: string | null;
  dueAt: string | null;
}

/** Every document of t-acme's data map that a closure soft-deletes (its audit record is kept, not soft-deleted). */
const ACME_SOFT_DELETED = [
  "activity/a-001",
  "activity/a-002",
  "events/e-001",
  "events/e-002",
  "sessions/s-1001",
  "sessions/s-1001/tokens/tk-1001",
  "sessions/s-1002",
  "sessions/s-1002/tokens/tk-1002",
  "tenants/t-acme",
  "tenants/t-acme/orders/o-1001",
  "tenants/t-acme/orders/o-1001/messages/m-001",
  "tenants/t-acme/orders/o-1001/messages/m-002",
  "tenants/t-acme/orders/o-1002",
  "tenants/t-acme/users/u-1001",
  "tenants/t-acme/users/u-1002",
  "userDirectory/u-1001",
  "userDirectory/u-1002",
];

async function expectNothingWritten(action: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await action();
  expect(await snapshotDatabase()).toEqual(before);
}

const states = async (paths: readonly string[]) => Promise.all(paths.map(async (p) => [p, (await docData(p)).lifecycleState] as const));

describe("tenant closure callables", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });

  it("request, a second person's approval, then everything hidden and soft-deleted with the reason TENANT_CLOSURE", async () => {
    const opened = await callExpect<Requested>("requestTenantDeletion", { tenantId: "t-acme", reason: "Contract ended 2027-01-31" }, t.rita);
    expect(opened).toMatchObject({ state: "AWAITING_APPROVAL", requestedBy: "r-3001", created: true, graceEndsAt: null });
    expect(await docData(`deletionRequests/${opened.requestId}`)).toMatchObject({ subjectType: "tenant", tenantId: "t-acme", state: "AWAITING_APPROVAL", reason: "Contract ended 2027-01-31" });
    // Nothing is hidden before the approval; asking again returns the same request.
    expect((await states(ACME_SOFT_DELETED)).every(([, s]) => s === "ACTIVE")).toBe(true);
    expect(await callExpect<Requested>("requestTenantDeletion", { tenantId: "t-acme", reason: "again" }, t.rita)).toMatchObject({ requestId: opened.requestId, created: false });

    const before = Date.now();
    const approved = await callExpect<Approved>("approveTenantDeletion", { requestId: opened.requestId }, t.clara);
    expect(approved).toMatchObject({ requestId: opened.requestId, state: "PENDING", approvedBy: "c-2001" });
    const graceMs = Date.parse(approved.graceEndsAt!) - before;
    expect(graceMs).toBeGreaterThanOrEqual(30 * DAY_MS - 60_000);
    expect(graceMs).toBeLessThanOrEqual(30 * DAY_MS + 60_000);
    expect(Date.parse(approved.dueAt!) - Date.parse(approved.graceEndsAt!)).toBe(30 * DAY_MS);
    expect(await states(ACME_SOFT_DELETED)).toEqual(ACME_SOFT_DELETED.map((p) => [p, "SOFT_DELETED"]));
    expect((await docData("auditRecords/ar-001")).lifecycleState).toBe("ACTIVE");
    expect((await docData("tenants/t-acme")).closure).toMatchObject({ requestId: opened.requestId, reason: "TENANT_CLOSURE" });
    const { entries } = await readChain();
    const actions = entries.map((e) => [e.entry.action, e.entry.decision.reason]);
    expect(actions[0]).toEqual(["DELETION_REQUESTED", "TENANT_CLOSURE"]);
    expect(actions[1]).toEqual(["TENANT_CLOSURE_APPROVED", "TENANT_CLOSURE"]);
    expect(actions.slice(2).every(([a, r]) => a === "SUBJECT_SOFT_DELETED" && r === "TENANT_CLOSURE")).toBe(true);
    expect(entries[1]!.entry.actor).toEqual({ type: "staff", id: "c-2001" });
    // The staff member's words are kept on the request; evidence holds only their hash.
    expect(JSON.stringify(entries.map((e) => e.entry))).not.toContain("Contract ended");
    expect((await verifyStoredChain()).ok).toBe(true);
    // The requester reads the closure's status like an owner (compliance too).
    const status = await callExpect<{ state: string; graceEndsAt: string }>("getDeletionStatus", { requestId: opened.requestId }, t.rita);
    expect(status).toMatchObject({ state: "PENDING", graceEndsAt: approved.graceEndsAt });
  });

  it("cancel: any retention-admin, before approval (withdrawn) or within grace (everything restored, the closure lifted)", async () => {
    const first = await callExpect<Requested>("requestTenantDeletion", { tenantId: "t-acme", reason: "r" }, t.rita);
    const otherAdmin = await idTokenFor({ uid: "r-3002", claims: { roles: ["retention-admin"] } });
    expect(await callExpect("cancelTenantDeletion", { requestId: first.requestId, reason: "customer stays" }, otherAdmin)).toEqual({ requestId: first.requestId, state: "CANCELLED" });
    expect(await docData(`deletionRequests/${first.requestId}`)).toMatchObject({ state: "CANCELLED", cancelReason: "customer stays" });

    const second = await callExpect<Requested>("requestTenantDeletion", { tenantId: "t-acme", reason: "r" }, t.rita);
    expect(second.requestId).not.toBe(first.requestId);
    await callExpect("approveTenantDeletion", { requestId: second.requestId }, t.dev);
    expect((await docData("tenants/t-acme")).closure).toBeDefined();
    expect(await callExpect("cancelTenantDeletion", { requestId: second.requestId, reason: "changed our mind" }, t.rita)).toEqual({ requestId: second.requestId, state: "CANCELLED" });
    expect(await states(ACME_SOFT_DELETED)).toEqual(ACME_SOFT_DELETED.map((p) => [p, "ACTIVE"]));
    const tenant = await docData("tenants/t-acme");
    expect(tenant.closure).toBeUndefined();
    expect(tenant.softDeletedAt).toBeUndefined();
    // Cancelling again is idempotent.
    expect(await callExpect("cancelTenantDeletion", { requestId: second.requestId, reason: "again" }, t.rita)).toEqual({ requestId: second.requestId, state: "CANCELLED" });
    expect((await verifyStoredChain()).ok).toBe(true);
  });

  it("requestTenantDeletion refuses: no token, no retention-admin role, bad payloads, an unknown tenant; nothing is written", async () => {
    await expectNothingWritten(async () => {
      const ok = { tenantId: "t-acme", reason: "r" };
      expectRefused(await call("requestTenantDeletion", ok, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      for (const token of [t.ada, t.clara, t.stranger]) expectRefused(await call("requestTenantDeletion", ok, token), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      for (const bad of [{}, { tenantId: "t-acme" }, { ...ok, reason: "" }, { ...ok, tenantId: "t/acme" }, { ...ok, tenantId: "" }, { ...ok, extra: 1 }, { ...ok, reason: "x".repeat(501) }]) {
        expectRefused(await call("requestTenantDeletion", bad, t.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("requestTenantDeletion", { tenantId: "t-nowhere", reason: "r" }, t.rita), "NOT_FOUND", "SUBJECT_NOT_FOUND");
      // An app user learns nothing about which tenants exist: the role is checked before any read.
      expectRefused(await call("requestTenantDeletion", { tenantId: "t-nowhere", reason: "r" }, t.ada), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
    });
  });

  it("approveTenantDeletion refuses: no token, no staff role, bad payloads, unknown or user requests, the requester, a closure not awaiting approval; nothing is written", async () => {
    const { requestId } = await callExpect<Requested>("requestTenantDeletion", { tenantId: "t-acme", reason: "r" }, t.rita);
    const { requestId: userRequestId } = await callExpect<{ requestId: string }>("requestAccountDeletion", {}, t.ben);
    await expectNothingWritten(async () => {
      expectRefused(await call("approveTenantDeletion", { requestId }, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      for (const token of [t.ada, t.ben, t.stranger]) expectRefused(await call("approveTenantDeletion", { requestId }, token), "PERMISSION_DENIED", "NOT_STAFF");
      for (const bad of [{}, { requestId: "" }, { requestId: "a/b" }, { requestId, extra: true }, { requestId: 7 }]) {
        expectRefused(await call("approveTenantDeletion", bad, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("approveTenantDeletion", { requestId: "no-such-request" }, t.clara), "NOT_FOUND", "REQUEST_NOT_FOUND");
      expectRefused(await call("approveTenantDeletion", { requestId: userRequestId }, t.clara), "NOT_FOUND", "REQUEST_NOT_FOUND");
      expectRefused(await call("approveTenantDeletion", { requestId }, t.rita), "PERMISSION_DENIED", "TWO_PERSON_RULE");
    });
    await callExpect("approveTenantDeletion", { requestId }, t.clara);
    await expectNothingWritten(async () => {
      expectRefused(await call("approveTenantDeletion", { requestId }, t.dev), "FAILED_PRECONDITION", "NOT_AWAITING_APPROVAL");
      expectRefused(await call("approveTenantDeletion", { requestId }, t.rita), "PERMISSION_DENIED", "TWO_PERSON_RULE");
    });
  });

  it("cancelTenantDeletion refuses: no token, no retention-admin role, bad payloads, unknown or user requests, after the grace, once the purge has it; nothing is written", async () => {
    const { requestId } = await callExpect<Requested>("requestTenantDeletion", { tenantId: "t-acme", reason: "r" }, t.rita);
    const { requestId: userRequestId } = await callExpect<{ requestId: string }>("requestAccountDeletion", {}, t.ben);
    await callExpect("approveTenantDeletion", { requestId }, t.clara);
    await expectNothingWritten(async () => {
      const ok = { requestId, reason: "r" };
      expectRefused(await call("cancelTenantDeletion", ok, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      for (const token of [t.ada, t.clara, t.stranger]) expectRefused(await call("cancelTenantDeletion", ok, token), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      for (const bad of [{ requestId }, { ...ok, reason: "" }, { ...ok, requestId: "a b" }, { ...ok, extra: 1 }]) {
        expectRefused(await call("cancelTenantDeletion", bad, t.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("cancelTenantDeletion", { requestId: "no-such-request", reason: "r" }, t.rita), "NOT_FOUND", "REQUEST_NOT_FOUND");
      expectRefused(await call("cancelTenantDeletion", { requestId: userRequestId, reason: "r" }, t.rita), "NOT_FOUND", "REQUEST_NOT_FOUND");
      // An app user cannot cancel a closure through the user-facing cancel either.
      expectRefused(await call("cancelAccountDeletion", { requestId }, t.ada), "PERMISSION_DENIED", "NOT_OWNER");
    });
    const ref = db().doc(`deletionRequests/${requestId}`);
    const grace = toMs((await ref.get()).get("graceEndsAt"))!;
    // As if the grace had passed: the stored end moves into the past.
    await ref.update({ graceEndsAt: Timestamp.fromMillis(Date.now() - 1000) });
    await expectNothingWritten(async () => {
      expectRefused(await call("cancelTenantDeletion", { requestId, reason: "r" }, t.rita), "FAILED_PRECONDITION", "GRACE_EXPIRED");
    });
    // As if the purge had taken it inside the grace.
    await ref.update({ graceEndsAt: Timestamp.fromMillis(grace), state: "PROCESSING" });
    await expectNothingWritten(async () => {
      expectRefused(await call("cancelTenantDeletion", { requestId, reason: "r" }, t.rita), "FAILED_PRECONDITION", "ALREADY_PROCESSING");
    });
  });
});
