// The social example (examples/social) run by the engine: seeded through the governed write path with the
// social registry active, then planned for Ana's erasure by the read-only planner planDeletion answers with. The
// app has no scope kind, so the subject names no tenant.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOCIAL_DOCS, SOCIAL_USERS } from "../../../examples/social/data";
import { SOCIAL_DATABASE } from "../../../examples/social/registry";
import { NO_SCOPE, seedSocial, useSocialRegistry } from "../../../examples/social/seed";
import { readGoverned } from "../../../functions/src/platform/governed-doc";
import { planSubject } from "../../../functions/src/plan/index";
import type { Subject } from "../../../functions/src/plan/rules";
import { policy } from "../../../functions/src/platform/registry";
import { settings } from "../../../functions/src/platform/settings";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { getAuth } from "firebase-admin/auth";

// The example's own database (see SOCIAL_DATABASE), set before anything resolves db().
process.env.RETENTION_DATABASE_ID = SOCIAL_DATABASE;

const T0 = Date.parse("2026-12-03T09:00:00Z");
const ANA: Subject = { type: "user", uid: "u-ana", tenantId: NO_SCOPE };

/** What Ana's erasure deletes: her profile and follows, others' follow of her, her posts with every comment under them, her comments and messages elsewhere. */
const ANA_DELETED = [
  "chats/ch-ana-bo/messages/m-01",
  "chats/ch-trio/messages/m-04",
  "posts/p-ana-1",
  "posts/p-ana-1/comments/c-ana-1",
  "posts/p-ana-1/comments/c-bo-1",
  "posts/p-ana-1/comments/c-cy-1",
  "posts/p-bo-1/comments/c-ana-2",
  "users/u-ana",
  "users/u-ana/following/u-bo",
  "users/u-ana/following/u-cy",
  "users/u-bo/following/u-ana",
];
/** The chats she leaves: they stay for the others, without her in memberIds. */
const ANA_LEAVES = ["chats/ch-ana-bo", "chats/ch-trio"];

describe("the social example: seeded through the governed write path, planned for a user without a scope", () => {
  let restoreRegistry: () => void = () => undefined;

  beforeAll(async () => {
    restoreRegistry = useSocialRegistry();
    expect(settings.databaseId()).toBe(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_DATABASE);
    await clearAuth();
    const seeded = await seedSocial({ nowMs: T0 });
    expect(seeded).toEqual({ documents: SOCIAL_DOCS.length, users: SOCIAL_USERS.length });
  });
  afterAll(() => restoreRegistry());

  it("the seed refuses to run under another app's registry", async () => {
    restoreRegistry();
    try {
      await expect(seedSocial({ nowMs: T0, withAuth: false })).rejects.toThrow(/call useSocialRegistry\(\) first/);
    } finally {
      restoreRegistry = useSocialRegistry();
    }
  });

  it("stamps every document with the social registry's class, no scope, ACTIVE, and the Auth users", async () => {
    for (const d of SOCIAL_DOCS) {
      const snap = await db().doc(d.path).get();
      expect(snap.data(), d.path).toMatchObject(d.data);
      const g = readGoverned(snap.data());
      expect(g, d.path).toMatchObject({
        retentionClass: d.path.split("/").length === 2 && d.path.startsWith("chats/") ? "shared-thread" : "user-content",
        lifecycleState: "ACTIVE",
        tenantId: NO_SCOPE,
        policyVersion: "v1",
        createdAtMs: T0,
        expireAtMs: null,
        retainUntilMs: null,
        legalHold: false,
      });
    }
    const auth = getAuth(adminApp());
    for (const u of SOCIAL_USERS) expect((await auth.getUser(u.uid)).customClaims ?? {}).toEqual(u.claims);
  });

  it("plans Ana's erasure: what is deleted, which chats she leaves (removeFromArray), and what is kept", async () => {
    const plan = await planSubject(ANA, T0 + 1000);
    expect(plan.policyVersion).toBe(policy().version);
    expect(plan.subject).toEqual(ANA);
    expect(plan.delete).toEqual([...ANA_DELETED].sort());
    expect(plan.archive).toEqual([]);
    expect(plan.externalCopiesToReview).toEqual([]);
    expect(plan.retain).toEqual(
      ANA_LEAVES.map((path) => ({
        path,
        action: "removeFromArray",
        fields: ["memberIds"],
        reasonCode: "SHARED_THREAD",
        reason: "shared thread: the chat stays for its other members, without you in it",
      })),
    );
    // Nobody else's data is in the plan: the others' profiles, posts, comments on their posts, the chat she is
    // not in, and every message she did not send.
    const named = new Set([...plan.delete, ...plan.retain.map((r) => r.path)]);
    const untouched = SOCIAL_DOCS.map((d) => d.path).filter((p) => !named.has(p));
    expect(untouched.sort()).toEqual(
      [
        "chats/ch-ana-bo/messages/m-02",
        "chats/ch-bo-cy",
        "chats/ch-bo-cy/messages/m-06",
        "chats/ch-trio/messages/m-03",
        "chats/ch-trio/messages/m-05",
        "posts/p-bo-1",
        "posts/p-bo-1/comments/c-cy-2",
        "posts/p-cy-1",
        "users/u-bo",
        "users/u-cy",
        "users/u-cy/following/u-bo",
      ].sort(),
    );
    // Planning is read-only: every document is as seeded.
    for (const d of SOCIAL_DOCS) expect(readGoverned((await db().doc(d.path).get()).data())?.lifecycleState, d.path).toBe("ACTIVE");
    expect((await db().doc("chats/ch-trio").get()).get("memberIds")).toEqual(["u-ana", "u-bo", "u-cy"]);
    // The same data gives the same manifest.
    expect((await planSubject(ANA, T0 + 2000)).manifestHash).toBe(plan.manifestHash);
  });
});
