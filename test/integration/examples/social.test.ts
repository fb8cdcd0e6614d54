// The social example (examples/social) run by the engine: seeded through the governed write path with the
// social registry active, then planned for Ana's erasure by the read-only planner planDeletion answers with. The
// app has no scope kind, so the subject names no tenant.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SOCIAL_ANALYTICS_DOCS, SOCIAL_DOCS, SOCIAL_OBJECTS, SOCIAL_USERS } from "../../../examples/social/data";
import { SOCIAL_ANALYTICS_DATABASE, SOCIAL_DATABASE, SOCIAL_RESTORED_DATABASE } from "../../../examples/social/registry";
import { SOCIAL_DATABASES_SETTING } from "../../helpers/social";
import { runNightlyJob } from "../../../functions/src/jobs/nightly-purge";
import { NO_SCOPE, seedSocial, useSocialRegistry } from "../../../examples/social/seed";
import { scanRetention } from "../../../functions/src/audit/index";
import { verifyEvidence } from "../../../functions/src/evidence/index";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { readGoverned } from "../../../functions/src/platform/governed-doc";
import { planSubject } from "../../../functions/src/plan/index";
import type { PurgeRunOptions } from "../../../functions/src/purge/index";
import { openDeletionRequest, resolveTenantSubject, resolveUserSubject, scopesOfDeletedUser, scopesOfRequester } from "../../../functions/src/requests/index";
import type { Subject } from "../../../functions/src/plan/rules";
import { inDatabase } from "../../../functions/src/platform/firestore";
import { policy } from "../../../functions/src/platform/registry";
import { replayErasures } from "../../../functions/src/restore/index";
import { exportSubject, verifyExportDir } from "../../../functions/src/export/index";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { defaultBucket, readObject } from "../../../functions/src/platform/storage";
import { clearStorage, putObject } from "../../helpers/storage";
import { settings } from "../../../functions/src/platform/settings";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { getAuth } from "firebase-admin/auth";

// The example's own databases (see SOCIAL_DATABASE; its analytics database, registry v4, under a name of its own),
// set before anything resolves db(), and put back after.
const previousDatabase = process.env.RETENTION_DATABASE_ID;
const previousDatabases = process.env.RETENTION_DATABASES;
process.env.RETENTION_DATABASE_ID = SOCIAL_DATABASE;
process.env.RETENTION_DATABASES = SOCIAL_DATABASES_SETTING;

const T0 = Date.parse("2026-12-03T09:00:00Z");
const ANA: Subject = { type: "user", uid: "u-ana", tenantId: NO_SCOPE };

/** What Ana's erasure deletes: her profile and follows, others' follow of her, her posts with every comment under them, her comments and messages elsewhere. */
const ANA_DELETED = [
  "chats/ch-ana-bo/messages/m-01",
  "chats/ch-trio/messages/m-04",
  "notifications/n-ana-1",
  "notifications/n-ana-2",
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
/** Her avatar and uploads in the default bucket (the registry's `media` entry: users/{uid}/, held with users/{uid}). */
const objectsOf = (uid: string) => SOCIAL_OBJECTS.filter((o) => o.name.startsWith(`users/${uid}/`)).map((o) => o.name);
const ANA_OBJECTS = objectsOf("u-ana");
/** An object's gs:// path in the default bucket, and its current generation (null: gone). */
const gs = (name: string) => objectPath(defaultBucket(), name);
const generationOf = async (name: string) => (await readObject(defaultBucket(), name))?.generation ?? null;

let restoreRegistry: () => void = () => undefined;
beforeAll(() => {
  restoreRegistry = useSocialRegistry();
});
afterAll(async () => {
  // The bucket is shared by every suite of the run: leave nothing behind.
  await clearStorage();
  restoreRegistry();
  if (previousDatabase === undefined) delete process.env.RETENTION_DATABASE_ID;
  else process.env.RETENTION_DATABASE_ID = previousDatabase;
  if (previousDatabases === undefined) delete process.env.RETENTION_DATABASES;
  else process.env.RETENTION_DATABASES = previousDatabases;
});

/** An empty database and Auth, then the social demo seeded at T0. */
async function freshSeed(): Promise<void> {
  expect(settings.databaseId()).toBe(SOCIAL_DATABASE);
  await clearFirestore(SOCIAL_DATABASE);
  await clearFirestore(SOCIAL_ANALYTICS_DATABASE);
  await clearAuth();
  await clearStorage();
  const seeded = await seedSocial({ nowMs: T0, withObjects: true });
  expect(seeded).toEqual({ documents: SOCIAL_DOCS.length, analytics: SOCIAL_ANALYTICS_DOCS.length, users: SOCIAL_USERS.length, objects: SOCIAL_OBJECTS.length });
}

describe("the social example: seeded through the governed write path, planned for a user without a scope", () => {
  beforeAll(freshSeed);

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
      const notification = d.path.startsWith("notifications/");
      expect(g, d.path).toMatchObject({
        retentionClass: d.path.split("/").length === 2 && d.path.startsWith("chats/") ? "shared-thread" : notification ? "notification-30d" : "user-delete",
        lifecycleState: "ACTIVE",
        tenantId: NO_SCOPE,
        policyVersion: "v5",
        createdAtMs: T0,
        // Notifications are kept 30 days by TTL (registry v2); nothing else has a TTL value.
        expireAtMs: notification ? T0 + 30 * DAY_MS : null,
        retainUntilMs: notification ? T0 + 30 * DAY_MS : null,
        legalHold: false,
      });
    }
    const auth = getAuth(adminApp());
    for (const u of SOCIAL_USERS) expect((await auth.getUser(u.uid)).customClaims ?? {}).toEqual(u.claims);
  });

  it("resolves Ana as the callables and the Auth backstop do: a user in no scope, and no scope to close", async () => {
    // planDeletion by uid, requestAccountDeletion (no scope claim on her token), the Auth-delete backstop.
    expect(await resolveUserSubject("u-ana")).toEqual(ANA);
    expect(await scopesOfRequester("u-ana", null)).toEqual([NO_SCOPE]);
    expect(await scopesOfDeletedUser("u-ana", {})).toEqual([NO_SCOPE]);
    await expect(resolveTenantSubject("anything")).rejects.toMatchObject({ reason: "NO_SCOPE_KIND" });
  });

  it("plans Ana's erasure: what is deleted, which chats she leaves (removeFromArray), and what is kept", async () => {
    const plan = await planSubject(ANA, T0 + 1000);
    expect(plan.policyVersion).toBe(policy().version);
    expect(plan.subject).toEqual(ANA);
    // Her documents, then her avatar and uploads, each object with the generation the plan was made on.
    expect(plan.delete).toEqual([...[...ANA_DELETED].sort(), ...ANA_OBJECTS.map(gs).sort()]);
    expect(plan.objects).toEqual(await Promise.all([...ANA_OBJECTS].sort().map(async (n) => ({ path: gs(n), generation: (await generationOf(n))! }))));
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
    // Nobody else's objects either.
    for (const o of SOCIAL_OBJECTS.filter((x) => !ANA_OBJECTS.includes(x.name))) expect(named.has(gs(o.name)), o.name).toBe(false);
    const untouched = SOCIAL_DOCS.map((d) => d.path).filter((p) => !named.has(p));
    expect(untouched.sort()).toEqual(
      [
        "chats/ch-ana-bo/messages/m-02",
        "chats/ch-bo-cy",
        "chats/ch-bo-cy/messages/m-06",
        "chats/ch-trio/messages/m-03",
        "chats/ch-trio/messages/m-05",
        "notifications/n-bo-1",
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

  it("exports Ana's data map with her objects' bytes, and the export verifies (and fails when an object's file is touched)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "social-export-"));
    try {
      const manifest = await exportSubject({ subject: ANA, outDir: join(dir, "ana"), nowMs: T0 });
      expect(manifest.subject).toEqual({ type: "user", uid: "u-ana", tenantId: NO_SCOPE });
      expect(manifest.tenantId).toBeUndefined();
      expect(manifest.policyVersion).toBe("v5");
      // Her notifications are in her data map since the registry's v2 (n-ana-1, n-ana-2; Bo's stays his), and from
      // the analytics database (v4) her activity log, in a file named by it.
      expect(manifest.files.map((f) => f.file).sort()).toEqual(["analytics--events.jsonl", "chats.jsonl", "chats.messages.jsonl", "notifications.jsonl", "posts.comments.jsonl", "posts.jsonl", "users.following.jsonl", "users.jsonl"]);
      expect(manifest.files.find((f) => f.file === "notifications.jsonl")?.documents).toBe(2);
      // Each object with its bucket, name and generation, its bytes under objects/ hashed.
      expect(manifest.objects?.map((o) => ({ bucket: o.bucket, name: o.name, bytes: o.bytes }))).toEqual(
        [...ANA_OBJECTS].sort().map((n) => ({ bucket: defaultBucket(), name: n, bytes: Buffer.byteLength(SOCIAL_OBJECTS.find((o) => o.name === n)!.body) })),
      );
      for (const o of manifest.objects ?? []) expect(o.generation).toBe(await generationOf(o.name));
      expect(readdirSync(join(dir, "ana", "objects")).length).toBe(ANA_OBJECTS.length);
      expect(await verifyExportDir(join(dir, "ana"))).toMatchObject({ ok: true, findings: [] });
      const first = manifest.objects![0]!;
      writeFileSync(join(dir, "ana", first.file), "tampered");
      expect((await verifyExportDir(join(dir, "ana"))).findings.map((f) => [f.problem, f.file])).toEqual([["OBJECT_CHANGED", first.file]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The user-delete grace is 7 days: the purge runs as of a day after it. */
const AFTER_GRACE = T0 + 8 * DAY_MS;
const HELD_CHAT = "chats/ch-trio";

const runAsOf = (atMs: number): PurgeRunOptions => ({
  nowMs: atMs,
  asOfMs: atMs,
  dryRun: false,
  actor: { type: "system", id: "nightlyPurge" },
  correlationId: "social-example",
  batchSize: 3,
  leaseMs: 60_000,
});
const exists = async (path: string) => (await db().doc(path).get()).exists;
const requestState = async (id: string) => String((await db().doc(`deletionRequests/${id}`).get()).get("state"));
const membersOf = async (path: string) => (await db().doc(path).get()).get("memberIds") as string[];

async function expectEvidenceVerifies(): Promise<void> {
  const r = await verifyEvidence();
  expect(r.findings).toEqual([]);
  expect(r.ok).toBe(true);
}

describe("the social example: Ana's erasure end to end, one of her chats under a hold", () => {
  let requestId: string;
  let holdId: string;

  beforeAll(async () => {
    await freshSeed();
    // The subject as requestAccountDeletion builds it for a signed-in user of an app without scopes.
    const subject: Subject = { type: "user", uid: "u-ana", tenantId: (await scopesOfRequester("u-ana", null))[0]! };
    const opened = await openDeletionRequest({ subject, source: "user", actor: { type: "user", id: "u-ana" }, nowMs: T0 });
    requestId = opened.request.requestId;
    expect(opened.request.subject).toEqual(ANA);
    ({ holdId } = await placeHold({ targetPath: HELD_CHAT, reasonCode: "ABUSE_INVESTIGATION", releaseAfterMs: null, actor: { type: "staff", id: "s-dana" }, nowMs: T0 }));
  });

  it("the request hides what it will delete at once, and the hold holds the chat and its messages as a subtree", async () => {
    expect(await requestState(requestId)).toBe("PENDING");
    for (const p of ["users/u-ana", "posts/p-ana-1", "posts/p-bo-1/comments/c-ana-2", "chats/ch-ana-bo/messages/m-01"]) {
      expect(readGoverned((await db().doc(p).get()).data())?.lifecycleState, p).toBe("SOFT_DELETED");
    }
    for (const p of [HELD_CHAT, `${HELD_CHAT}/messages/m-04`, `${HELD_CHAT}/messages/m-03`]) {
      expect(readGoverned((await db().doc(p).get()).data())?.legalHold, p).toBe(true);
    }
    const plan = await planSubject(ANA, AFTER_GRACE);
    expect(plan.retain.find((r) => r.path === HELD_CHAT)).toMatchObject({ action: "retain", holdId, deferredByHold: "removeFromArray" });
    expect(plan.retain.find((r) => r.path === `${HELD_CHAT}/messages/m-04`)).toMatchObject({ action: "retain", holdId, deferredByHold: "delete" });
    expect(plan.delete).not.toContain(`${HELD_CHAT}/messages/m-04`);
  });

  it("the purge past the grace period erases everything but the held chat, and keeps the request RETAINED_UNDER_HOLD", async () => {
    const seededGenerations = new Map(await Promise.all(ANA_OBJECTS.map(async (n) => [n, (await generationOf(n))!] as const)));
    // The nightly job, as the schedule runs it: the app has two governed databases, and her erasure runs in both.
    await runNightlyJob(runAsOf(AFTER_GRACE));
    // Her avatar and uploads are gone; the evidence names each with the generation deleted.
    for (const n of ANA_OBJECTS) expect(await generationOf(n), n).toBeNull();
    for (const o of SOCIAL_OBJECTS.filter((x) => !ANA_OBJECTS.includes(x.name))) expect(await generationOf(o.name), o.name).not.toBeNull();
    const entries: ChainedEvidence[] = [];
    await verifyEvidence({ onEntry: (e) => entries.push(e) });
    const objectLines = entries.filter((e) => e.action === "PURGE_OBJECTS").flatMap((e) => String(e.detail?.objects ?? "").split("\n"));
    expect(objectLines.sort()).toEqual(ANA_OBJECTS.map((n) => `${gs(n)}#${seededGenerations.get(n)} deleted`).sort());
    // Her profile and who she follows; Bo's follow of her.
    for (const p of ["users/u-ana", "users/u-ana/following/u-bo", "users/u-ana/following/u-cy", "users/u-bo/following/u-ana"]) expect(await exists(p), p).toBe(false);
    // Her post, with every comment under it (Bo's and Cy's too); her comment on Bo's post.
    for (const p of ["posts/p-ana-1", "posts/p-ana-1/comments/c-ana-1", "posts/p-ana-1/comments/c-bo-1", "posts/p-ana-1/comments/c-cy-1", "posts/p-bo-1/comments/c-ana-2"]) {
      expect(await exists(p), p).toBe(false);
    }
    // Her message in the unheld chat, and she is out of its members; Bo stays, with his message.
    expect(await exists("chats/ch-ana-bo/messages/m-01")).toBe(false);
    expect(await membersOf("chats/ch-ana-bo")).toEqual(["u-bo"]);
    expect(await exists("chats/ch-ana-bo/messages/m-02")).toBe(true);
    // The held chat still lists her and keeps her message.
    expect(await membersOf(HELD_CHAT)).toEqual(["u-ana", "u-bo", "u-cy"]);
    expect(await exists(`${HELD_CHAT}/messages/m-04`)).toBe(true);
    // Nobody else's data moved.
    for (const p of ["users/u-bo", "users/u-cy", "users/u-cy/following/u-bo", "posts/p-bo-1", "posts/p-bo-1/comments/c-cy-2", "posts/p-cy-1", "chats/ch-bo-cy/messages/m-06"]) {
      expect(readGoverned((await db().doc(p).get()).data())?.lifecycleState, p).toBe("ACTIVE");
    }
    expect(await membersOf("chats/ch-bo-cy")).toEqual(["u-bo", "u-cy"]);
    expect(await requestState(requestId)).toBe("RETAINED_UNDER_HOLD");
    await expectEvidenceVerifies();
  });

  it("after the hold's release the next run takes the held chat too, and the request ends PURGED", async () => {
    await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "s-eli" }, nowMs: AFTER_GRACE + 1000 });
    const next = AFTER_GRACE + DAY_MS;
    await runNightlyJob(runAsOf(next));
    expect(await exists(`${HELD_CHAT}/messages/m-04`)).toBe(false);
    expect(await membersOf(HELD_CHAT)).toEqual(["u-bo", "u-cy"]);
    for (const p of [`${HELD_CHAT}/messages/m-03`, `${HELD_CHAT}/messages/m-05`]) {
      expect(readGoverned((await db().doc(p).get()).data())?.lifecycleState, p).toBe("ACTIVE");
    }
    expect(readGoverned((await db().doc(HELD_CHAT).get()).data())).toMatchObject({ lifecycleState: "ACTIVE", legalHold: false });
    expect(await requestState(requestId)).toBe("PURGED");
    await expect(getAuth(adminApp()).getUser("u-ana")).rejects.toMatchObject({ code: "auth/user-not-found" });
    await expect(getAuth(adminApp()).getUser("u-bo")).resolves.toMatchObject({ uid: "u-bo" });
    // Nothing of hers is left to plan.
    const plan = await planSubject(ANA, next);
    expect(plan.delete).toEqual([]);
    expect(plan.retain).toEqual([]);
    await expectEvidenceVerifies();
    // The retention audit over the example's data finds nothing wrong: no orphan, no leftover of the erasure.
    const audit = await scanRetention({ nowMs: next });
    expect(audit.findings).toEqual([]);
    expect(audit.stats.documents).toBeGreaterThan(0);
  });
});

/** A backup taken before Ana asked, restored after her erasure: the data as seeded, in its own database. */
const RESTORED = SOCIAL_RESTORED_DATABASE;

describe("the social example: a backup restored after Ana's erasure is put right from the erasure ledger", () => {
  const replay = (apply: boolean) => replayErasures({ databaseId: RESTORED, apply, actor: { type: "staff", id: "s-dana" }, nowMs: AFTER_GRACE + 2 * DAY_MS });

  // Her avatar, put back in the bucket (a bucket restore, or an undelete from the bucket's soft delete).
  const PUT_BACK = ANA_OBJECTS.find((n) => n.endsWith("avatar.jpg"))!;

  beforeAll(async () => {
    await clearFirestore(RESTORED);
    // The restored database (a copy of the primary alone); the bucket keeps what the erasure left, but for one object put back.
    await inDatabase(RESTORED, () => seedSocial({ nowMs: T0, withAuth: false, analytics: false, withObjects: false }));
    expect(await generationOf(PUT_BACK)).toBeNull();
    await putObject(defaultBucket(), PUT_BACK, "ana's avatar, back from the bucket's soft delete");
  });

  it("a dry run finds Ana, a user in no scope, with her documents to delete, two chats still listing her and her object put back, and writes nothing", async () => {
    const report = await replay(false);
    expect(report.subjects.map((s) => ({ kind: s.kind, uid: s.uid, tenantId: s.tenantId, action: s.action }))).toEqual([{ kind: "user", uid: "u-ana", tenantId: NO_SCOPE, action: "erase" }]);
    const ana = report.subjects[0]!;
    // The purge's count of planned deletes: her comment on her own post is reached twice (with the post, and as
    // her comment), and planned twice; the second batch finds it gone.
    expect(ana.toDelete).toBe(ANA_DELETED.length + 1);
    // Both chats she was in list her again in the backup: removeFromArray is left to do in each.
    expect(ana.toMask).toBe(ANA_LEAVES.length);
    // The buckets as they are now: the one object put back.
    expect(ana.toDeleteObjects).toBe(1);
    expect(await inDatabase(RESTORED, () => membersOf(HELD_CHAT))).toEqual(["u-ana", "u-bo", "u-cy"]);
    expect(await generationOf(PUT_BACK)).not.toBeNull();
  });

  it("applied, it erases her in the restored database as the purge did, her object put back included, and leaves the others' data", async () => {
    const report = await replay(true);
    expect(report.problems).toBe(0);
    expect(report.subjects[0]?.outcome).toMatch(/^DONE\b/);
    expect(await generationOf(PUT_BACK)).toBeNull();
    for (const o of SOCIAL_OBJECTS.filter((x) => !ANA_OBJECTS.includes(x.name))) expect(await generationOf(o.name), o.name).not.toBeNull();
    await inDatabase(RESTORED, async () => {
      for (const p of ANA_DELETED) expect(await exists(p), p).toBe(false);
      expect(await membersOf("chats/ch-ana-bo")).toEqual(["u-bo"]);
      expect(await membersOf(HELD_CHAT)).toEqual(["u-bo", "u-cy"]);
      for (const p of ["users/u-bo", "posts/p-bo-1", "chats/ch-bo-cy/messages/m-06", `${HELD_CHAT}/messages/m-03`]) expect(await exists(p), p).toBe(true);
    });
    // Nothing is left to erase there.
    expect((await replay(false)).toErase).toBe(0);
  });
});

describe("the social example: a hold on a user's profile holds their avatar and uploads through their erasure", () => {
  const BO: Subject = { type: "user", uid: "u-bo", tenantId: NO_SCOPE };
  const BO_OBJECTS = objectsOf("u-bo");
  let requestId: string;
  let holdId: string;

  beforeAll(async () => {
    await freshSeed();
    ({ request: { requestId } } = await openDeletionRequest({ subject: BO, source: "user", actor: { type: "user", id: "u-bo" }, nowMs: T0 }));
    ({ holdId } = await placeHold({ targetPath: "users/u-bo", reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "s-dana" }, nowMs: T0 }));
  });

  it("the hold's flagging marks his objects, and the plan keeps them under it", async () => {
    for (const n of BO_OBJECTS) expect((await readObject(defaultBucket(), n))?.holdIds, n).toEqual([holdId]);
    const plan = await planSubject(BO, AFTER_GRACE);
    for (const n of BO_OBJECTS) expect(plan.retain.find((r) => r.path === gs(n))).toMatchObject({ action: "retain", holdId, reasonCode: "LITIGATION", deferredByHold: "delete" });
    // The audit sees every covered object marked: nothing to report.
    expect((await scanRetention({ nowMs: T0 + 1000 })).findings.filter((f) => f.code.startsWith("OBJECT_"))).toEqual([]);
  });

  it("the purge keeps them (RETAINED_UNDER_HOLD); after the release their markers go and the next run deletes them", async () => {
    const generations = new Map(await Promise.all(BO_OBJECTS.map(async (n) => [n, (await generationOf(n))!] as const)));
    await runNightlyJob(runAsOf(AFTER_GRACE));
    for (const n of BO_OBJECTS) expect(await generationOf(n), n).toBe(generations.get(n));
    expect(await requestState(requestId)).toBe("RETAINED_UNDER_HOLD");
    await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "s-eli" }, nowMs: AFTER_GRACE + 1000 });
    for (const n of BO_OBJECTS) expect((await readObject(defaultBucket(), n))?.holdIds, n).toEqual([]);
    await runNightlyJob(runAsOf(AFTER_GRACE + DAY_MS));
    for (const n of BO_OBJECTS) expect(await generationOf(n), n).toBeNull();
    expect(await requestState(requestId)).toBe("PURGED");
    await expectEvidenceVerifies();
  });
});
