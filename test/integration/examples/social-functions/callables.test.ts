/**
 * The social example's callables over HTTP, on the Functions emulator with its registry in force (its own demo
 * project, demo-social, whose functions/.env.demo-social names the registry bundle): a member asks for her
 * erasure, sees where it stands and another member can neither see nor cancel it; a member cancels his; compliance
 * plans Ana's erasure, holds a chat under the two-person rule and releases it; a retention-admin runs the purge
 * (time moved past the grace) and the erasure keeps the held chat until the release; the evidence explains it. A
 * call made the way an app with tenants makes it (a tenant's plan or closure) is refused with NO_SCOPE_KIND, and
 * refused calls write nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { CallableName, CallableOutput } from "../../../../functions/src/contract";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { policy } from "../../../../functions/src/platform/registry";
import { seedSocial } from "../../../../examples/social/seed";
import { socialRegistry } from "../../../../examples/social/registry";
import { call, clearAuth, clearFirestore, db, idTokenFor } from "../../../helpers/emulator";
import { expectRefused, snapshotDatabase } from "../../entrypoints/callable/support";

async function ok<N extends CallableName>(name: N, data: unknown, token: string): Promise<CallableOutput<N>> {
  const r = await call<CallableOutput<N>>(name, data, token);
  if (!r.ok) throw new Error(`${name} failed: ${JSON.stringify(r.error)}`);
  return r.data;
}

/** Runs `refusals` and checks that nothing in the database changed. */
async function expectNothingWritten(refusals: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await refusals();
  expect(await snapshotDatabase()).toEqual(before);
}

const exists = async (path: string): Promise<boolean> => (await db().doc(path).get()).exists;

interface Tokens {
  ana: string;
  bo: string;
  dana: string;
  eli: string;
  /** A retention-admin: the social demo has none among its seeded users, so the suite mints one. */
  ops: string;
}

describe("the social example's callables, on its own functions", () => {
  let t: Tokens;
  let anaRequest: string;

  beforeAll(async () => {
    expect(policy().version).toBe(socialRegistry().version);
    await clearFirestore();
    await clearAuth();
    await seedSocial({ nowMs: Date.now() });
    const [ana, bo, dana, eli, ops] = await Promise.all([
      idTokenFor({ uid: "u-ana" }),
      idTokenFor({ uid: "u-bo" }),
      idTokenFor({ uid: "s-dana", claims: { roles: ["compliance"] } }),
      idTokenFor({ uid: "s-eli", claims: { roles: ["compliance"] } }),
      idTokenFor({ uid: "s-ops", claims: { roles: ["retention-admin"] } }),
    ]);
    t = { ana, bo, dana, eli, ops };
  }, 180_000);

  it("the functions enforce the social registry, and staff read it from getRetentionRegistry", async () => {
    const enforced = await ok("getRetentionRegistry", {}, t.dana);
    expect(enforced.version).toBe(socialRegistry().version);
    expect(enforced.registry).toEqual(socialRegistry());
    expect(enforced.registry.subjects?.scope).toBeUndefined();
    expectRefused(await call("getRetentionRegistry", {}, t.ana), "PERMISSION_DENIED", "NOT_STAFF");
  });

  it("a member with no tenant asks for her erasure and sees it; another member can neither see nor cancel it", async () => {
    const opened = await ok("requestAccountDeletion", { reason: "leaving the app" }, t.ana);
    anaRequest = opened.requestId;
    expect(opened.state).toBe("PENDING");
    // Asking again returns the open request.
    expect((await ok("requestAccountDeletion", {}, t.ana)).requestId).toBe(anaRequest);
    const status = await ok("getDeletionStatus", {}, t.ana);
    expect(status).toMatchObject({ requestId: anaRequest, state: "PENDING" });
    // Her data is soft-deleted at once: her post and her notification are out of the app's sight.
    expect((await db().doc("posts/p-ana-1").get()).get("lifecycleState")).toBe("SOFT_DELETED");
    expect((await db().doc("notifications/n-ana-1").get()).get("lifecycleState")).toBe("SOFT_DELETED");
    await expectNothingWritten(async () => {
      expectRefused(await call("getDeletionStatus", { requestId: anaRequest }, t.bo), "PERMISSION_DENIED", "NOT_OWNER");
      expectRefused(await call("cancelAccountDeletion", { requestId: anaRequest }, t.bo), "PERMISSION_DENIED", "NOT_OWNER");
      expectRefused(await call("requestAccountDeletion", {}, null), "UNAUTHENTICATED");
    });
    // Compliance sees it as staff.
    expect((await ok("getDeletionStatus", { requestId: anaRequest }, t.dana)).state).toBe("PENDING");
  });

  it("a member cancels his own request inside the grace period: everything it soft-deleted comes back", async () => {
    const { requestId } = await ok("requestAccountDeletion", {}, t.bo);
    expect((await db().doc("users/u-bo").get()).get("lifecycleState")).toBe("SOFT_DELETED");
    const cancelled = await ok("cancelAccountDeletion", { requestId }, t.bo);
    expect(cancelled.state).toBe("CANCELLED");
    for (const path of ["users/u-bo", "posts/p-bo-1", "chats/ch-bo-cy/messages/m-06", "notifications/n-bo-1"]) {
      expect((await db().doc(path).get()).get("lifecycleState"), path).toBe("ACTIVE");
    }
    expect((await ok("getDeletionStatus", { requestId }, t.bo)).state).toBe("CANCELLED");
  });

  it("compliance plans Ana's erasure; a tenant's plan or closure is refused: the app has no scope kind", async () => {
    const plan = await ok("planDeletion", { subjectUid: "u-ana" }, t.dana);
    expect(plan.policyVersion).toBe(socialRegistry().version);
    expect(plan.delete).toEqual(expect.arrayContaining(["users/u-ana", "posts/p-ana-1", "posts/p-ana-1/comments/c-bo-1", "chats/ch-trio/messages/m-04", "notifications/n-ana-1", "notifications/n-ana-2"]));
    expect(plan.delete).not.toContain("notifications/n-bo-1");
    expect(plan.delete).not.toContain("chats/ch-trio");
    await expectNothingWritten(async () => {
      expectRefused(await call("planDeletion", { tenantId: "t-any" }, t.dana), "FAILED_PRECONDITION", "NO_SCOPE_KIND");
      expectRefused(await call("requestTenantDeletion", { tenantId: "t-any", reason: "closing" }, t.ops), "FAILED_PRECONDITION", "NO_SCOPE_KIND");
      expectRefused(await call("planDeletion", { subjectUid: "u-ana" }, t.ana), "PERMISSION_DENIED", "NOT_COMPLIANCE");
    });
  });

  it("a hold on a chat keeps it and its messages through the purge; released by a second officer, the erasure finishes", async () => {
    await expectNothingWritten(async () => {
      expectRefused(await call("placeRetentionHold", { targetPath: "chats/ch-trio", reasonCode: "LITIGATION" }, t.ana), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("placeRetentionHold", { targetPath: "tenants/t-acme", reasonCode: "LITIGATION" }, t.dana), "INVALID_ARGUMENT", "NOT_GOVERNED_PATH");
    });
    const { holdId } = await ok("placeRetentionHold", { targetPath: "chats/ch-trio", reasonCode: "LITIGATION", note: "dispute over the trip" }, t.dana);
    const listed = await ok("listRetentionHolds", {}, t.eli);
    expect(listed.items.map((h) => ({ holdId: h.holdId, targetPath: h.targetPath, reasonCode: h.reasonCode }))).toEqual([{ holdId, targetPath: "chats/ch-trio", reasonCode: "LITIGATION" }]);
    expectRefused(await call("releaseRetentionHold", { holdId, reason: "mine" }, t.dana), "PERMISSION_DENIED", "TWO_PERSON_RULE");

    // Past Ana's grace, a retention-admin runs the nightly purge now: all of her erasure but the held chat.
    const asOf = new Date(Date.now() + 8 * DAY_MS).toISOString();
    expectRefused(await call("runRetentionJob", { job: "nightlyPurge", asOf }, t.dana), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
    await ok("runRetentionJob", { job: "nightlyPurge", asOf }, t.ops);
    expect((await ok("getDeletionStatus", { requestId: anaRequest }, t.dana)).state).toBe("RETAINED_UNDER_HOLD");
    for (const gone of ["users/u-ana", "posts/p-ana-1", "posts/p-ana-1/comments/c-bo-1", "chats/ch-ana-bo/messages/m-01", "notifications/n-ana-1", "users/u-bo/following/u-ana"]) expect(await exists(gone), gone).toBe(false);
    expect(await exists("chats/ch-trio/messages/m-04")).toBe(true);
    expect((await db().doc("chats/ch-trio").get()).get("memberIds")).toContain("u-ana");
    expect((await db().doc("chats/ch-ana-bo").get()).get("memberIds")).toEqual(["u-bo"]);
    expect(await exists("notifications/n-bo-1")).toBe(true);

    // Why was her post deleted, and who allowed it: the evidence, which verifies.
    const why = await ok("explainDeletion", { path: "posts/p-ana-1", verify: "chain" }, t.eli);
    expect(why.entries.map((e) => e.action)).toContain("PURGE_BATCH");
    expect(why.verification.ok).toBe(true);

    await ok("releaseRetentionHold", { holdId, reason: "dispute settled" }, t.eli);
    await ok("runRetentionJob", { job: "nightlyPurge", asOf }, t.ops);
    expect((await ok("getDeletionStatus", { requestId: anaRequest }, t.dana)).state).toBe("PURGED");
    expect(await exists("chats/ch-trio/messages/m-04")).toBe(false);
    expect((await db().doc("chats/ch-trio").get()).get("memberIds")).toEqual(["u-bo", "u-cy"]);
    expect(await exists("chats/ch-trio/messages/m-05")).toBe(true);
  });
});
