/**
 * The retention audit over the social example's data (an app without scopes, with a TTL-managed collection): clean
 * after seeding, and each planted problem found with exactly its code at its path, then clean again once repaired,
 * as test/integration/audit/failure-matrix.test.ts does for AtlasMart. Left out: the findings the example's data
 * cannot have (it archives nothing, and no class of it has a business end for EXPIRED_BUT_VISIBLE).
 */
import { getAuth } from "firebase-admin/auth";
import { FieldValue, Timestamp } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { placeHold } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { openDeletionRequest } from "../../../functions/src/requests/index";
import { SOCIAL_DATABASE } from "../../../examples/social/registry";
import { NO_SCOPE, seedSocial } from "../../../examples/social/seed";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { onSocialExample } from "../../helpers/social";
import { audit, expectClean, lines } from "../audit/helpers";

onSocialExample();

const DANA = { type: "staff" as const, id: "s-dana" };

describe("retention audit on the social example", () => {
  beforeEach(async () => {
    expect(db().databaseId).toBe(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_DATABASE);
    await clearAuth();
    await seedSocial({ nowMs: Date.now() });
    await expectClean();
  });

  it("a held notification that gets a TTL value back: HOLD_WITH_TTL", async () => {
    const path = "notifications/n-ana-1";
    await placeHold({ targetPath: path, reasonCode: "ABUSE_INVESTIGATION", releaseAfterMs: null, actor: DANA, nowMs: Date.now() });
    await expectClean();
    await db().doc(path).update({ expireAt: Timestamp.fromMillis(Date.now() + 30 * DAY_MS) });
    expect(lines((await audit()).findings)).toEqual([`HOLD_WITH_TTL ${path}`]);
    await db().doc(path).update({ expireAt: null });
    await expectClean();
  });

  it("a post deleted without the comments under it: ORPHANED_SUBCOLLECTION for each comment", async () => {
    const post = db().doc("posts/p-ana-1");
    const saved = (await post.get()).data()!;
    await post.delete();
    expect(lines((await audit()).findings)).toEqual(["ORPHANED_SUBCOLLECTION posts/p-ana-1/comments/c-ana-1", "ORPHANED_SUBCOLLECTION posts/p-ana-1/comments/c-bo-1", "ORPHANED_SUBCOLLECTION posts/p-ana-1/comments/c-cy-1"]);
    await post.set(saved);
    await expectClean();
  });

  it("a soft-deleted message still served: SOFT_DELETE_QUERY_LEAK", async () => {
    const path = "chats/ch-trio/messages/m-04";
    await db().doc(path).update({ softDeletedAt: Timestamp.now(), deletionRequestId: "req-leak", preDeleteState: "ACTIVE" });
    expect(lines((await audit()).findings)).toEqual([`SOFT_DELETE_QUERY_LEAK ${path}`]);
    await db().doc(path).update({ lifecycleState: "SOFT_DELETED" });
    await expectClean();
  });

  it("a notification without its TTL value: MISSING_TTL; one the sweeper left days past it: TTL_OVERDUE", async () => {
    const path = "notifications/n-bo-1";
    const ttl = (await db().doc(path).get()).get("expireAt") as Timestamp;
    await db().doc(path).update({ expireAt: FieldValue.delete() });
    expect(lines((await audit()).findings)).toEqual([`MISSING_TTL ${path}`]);
    await db().doc(path).update({ expireAt: ttl });
    await expectClean();
    const late = await audit(ttl.toMillis() + 4 * DAY_MS);
    expect(lines(late.findings)).toEqual(["TTL_OVERDUE notifications/n-ana-1", "TTL_OVERDUE notifications/n-ana-2", `TTL_OVERDUE ${path}`]);
  });

  it("an unknown class, and a collection the registry does not govern: UNKNOWN_CLASS", async () => {
    await db().doc("posts/p-cy-1").update({ retentionClass: "forever" });
    await db().doc("drafts/d-1").set({ text: "nobody classified this" });
    expect(lines((await audit()).findings)).toEqual(["UNKNOWN_CLASS drafts", "UNKNOWN_CLASS posts/p-cy-1"]);
    await db().doc("posts/p-cy-1").update({ retentionClass: "user-delete" });
    await db().doc("drafts/d-1").delete();
    await expectClean();
  });

  it("a policy version the app never published: STALE_POLICY_VERSION; v1 is not stale where v2 kept its retention, and is where v2 added it", async () => {
    await db().doc("posts/p-bo-1").update({ policyVersion: "v9" });
    expect(lines((await audit()).findings)).toEqual(["STALE_POLICY_VERSION posts/p-bo-1"]);
    await db().doc("posts/p-bo-1").update({ policyVersion: "v1" });
    await expectClean();
    // v1 had no notifications: a notification stamped v1 was never judged by the retention it carries.
    await db().doc("notifications/n-bo-1").update({ policyVersion: "v1" });
    expect(lines((await audit()).findings)).toEqual(["STALE_POLICY_VERSION notifications/n-bo-1"]);
  });

  it("a member's Auth account deleted while their data stays: ORPHANED_SUBJECT, until an erasure is under way", async () => {
    await getAuth(adminApp()).deleteUser("u-cy");
    // Found wherever the data map locates the member's uid and erasure would take it away: the profile and what is
    // under it, their posts, comments and messages, who follows them, and the chats that still list them.
    expect(lines((await audit()).findings)).toEqual([
      "ORPHANED_SUBJECT chats/ch-bo-cy",
      "ORPHANED_SUBJECT chats/ch-trio",
      "ORPHANED_SUBJECT chats/ch-trio/messages/m-03",
      "ORPHANED_SUBJECT posts/p-ana-1/comments/c-cy-1",
      "ORPHANED_SUBJECT posts/p-bo-1/comments/c-cy-2",
      "ORPHANED_SUBJECT posts/p-cy-1",
      "ORPHANED_SUBJECT users/u-ana/following/u-cy",
      "ORPHANED_SUBJECT users/u-cy",
    ]);
    await openDeletionRequest({ subject: { type: "user", uid: "u-cy", tenantId: NO_SCOPE }, source: "auth-backstop", actor: { type: "system", id: "test-backstop" }, nowMs: Date.now() });
    await expectClean();
  });

  it("a chat that lists more members without an account than one Auth lookup takes: one finding per member, each naming its uid", async () => {
    const seed = (await db().doc("chats/ch-trio").get()).data()!;
    const gone = Array.from({ length: 150 }, (_, i) => `u-gone-${String(i).padStart(3, "0")}`);
    // A value Auth would refuse as a uid (over 128 characters) is no member's, and must not fail the lookup.
    await db().doc("chats/ch-crowd").set({ ...seed, memberIds: ["u-ana", ...gone, "x".repeat(129)] });
    const r = await audit();
    const orphans = r.findings.filter((f) => f.code === "ORPHANED_SUBJECT");
    expect(r.byCode.ORPHANED_SUBJECT).toBe(gone.length);
    expect(new Set(orphans.map((f) => f.path))).toEqual(new Set(["chats/ch-crowd"]));
    expect(orphans.map((f) => /^data of uid (\S+),/.exec(f.detail)?.[1]).sort()).toEqual(gone);
    await db().doc("chats/ch-crowd").delete();
    await expectClean();
  });

  it("an unfinished erasure past its due date: OVERDUE_REQUEST", async () => {
    const { request } = await openDeletionRequest({ subject: { type: "user", uid: "u-bo", tenantId: NO_SCOPE }, source: "user", actor: { type: "user", id: "u-bo" }, nowMs: Date.now() });
    await expectClean();
    const r = await audit((request.dueAtMs ?? Number.NaN) + DAY_MS);
    expect(r.findings.filter((f) => f.code === "OVERDUE_REQUEST").map((f) => f.path)).toEqual([`${COLLECTIONS.deletionRequests}/${request.requestId}`]);
  });
});
