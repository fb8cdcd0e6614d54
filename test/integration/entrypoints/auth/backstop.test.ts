/**
 * The Auth-delete backstop's handler, in-process (the trigger's retry setting is checked on its endpoint in
 * test/unit/deployed-functions.test.ts). A retried or duplicated delivery must neither open a second request
 * nor leave the first one's work unfinished.
 */
import { FieldValue } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { handleAuthUserDeleted } from "../../../../functions/src/entrypoints/auth/on-auth-user-deleted";
import { seedDemo } from "../../../../examples/atlasmart/seed";
import { clearAuth, clearFirestore, db } from "../../../helpers/emulator";

const UID = "u-1002";
const requestsOf = async (uid: string) => (await db().collection("deletionRequests").where("uid", "==", uid).get()).docs;
const opened = async () => (await db().collection("deletionAudits").where("action", "==", "BACKSTOP_REQUEST_OPENED").get()).size;

describe("the Auth-delete backstop under retries", () => {
  beforeEach(async () => {
    await clearFirestore();
    await clearAuth();
    await seedDemo({ nowMs: Date.now() });
  });

  it("two concurrent deliveries of the same event open one request", async () => {
    const [a, b] = await Promise.all([
      handleAuthUserDeleted({ uid: UID, customClaims: { tenantId: "t-acme" } }, "evt-1", Date.now()),
      handleAuthUserDeleted({ uid: UID, customClaims: { tenantId: "t-acme" } }, "evt-1", Date.now()),
    ]);
    expect(a.requestId).toBe(b.requestId);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    expect((await requestsOf(UID)).map((d) => d.id)).toEqual([a.requestId]);
    expect(await opened()).toBe(1);
  });

  it("a retry after a delivery that failed part-way finishes its soft delete without a second request", async () => {
    const first = await handleAuthUserDeleted({ uid: UID, customClaims: { tenantId: "t-acme" } }, "evt-2", Date.now());
    // As if the first delivery had died before its soft delete reached the profile.
    const profile = db().doc(`tenants/t-acme/users/${UID}`);
    expect((await profile.get()).get("lifecycleState")).toBe("SOFT_DELETED");
    await profile.update({ lifecycleState: "ACTIVE", softDeletedAt: FieldValue.delete(), preDeleteState: FieldValue.delete(), deletionRequestId: FieldValue.delete() });
    const retry = await handleAuthUserDeleted({ uid: UID, customClaims: { tenantId: "t-acme" } }, "evt-2", Date.now());
    expect(retry).toEqual({ requestId: first.requestId, created: false });
    expect((await profile.get()).data()).toMatchObject({ lifecycleState: "SOFT_DELETED", deletionRequestId: first.requestId });
    expect((await requestsOf(UID)).length).toBe(1);
    expect(await opened()).toBe(1);
  });
});
