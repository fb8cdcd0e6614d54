/**
 * `retention discover` on the Firestore and Auth emulators: a small social app (profiles with follows, posts with
 * comments, chats with messages, an unrelated config collection) and three Auth users. The draft must propose the
 * app's user data map, list config as unclassified, read no more than its bounds, and write nothing.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAuth } from "firebase-admin/auth";
import type { DocumentReference, Firestore } from "firebase-admin/firestore";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverDraft, UNREVIEWED_CLASS, type DiscoverDraft } from "../../../functions/src/discover/index";
import { RegistrySchema } from "../../../functions/src/kernel/policy-schema";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { retention } from "../../helpers/cli";
import { loadCurrent, repoRoot } from "../../helpers/policy";
import { clearStorage } from "../../helpers/storage";

/** The name a draft gets: the version after the one the functions enforce (the lock's last). */
const NEXT_VERSION = `v${Number(loadCurrent().version.slice(1)) + 1}`;

const USERS = ["u-ana", "u-bo", "u-cy"];

/** The social app: every document path with its fields. */
const DATA: Record<string, Record<string, unknown>> = {
  "users/u-ana": { displayName: "Ana", bio: "climbs" },
  "users/u-bo": { displayName: "Bo", bio: "bakes" },
  "users/u-cy": { displayName: "Cy", bio: "codes" },
  "users/u-ana/following/u-bo": { followedAt: 1 },
  "users/u-bo/following/u-ana": { followedAt: 2 },
  "users/u-cy/following/u-ana": { followedAt: 3 },
  "users/u-cy/following/u-bo": { followedAt: 4 },
  "posts/p-1": { authorId: "u-ana", text: "first climb" },
  "posts/p-2": { authorId: "u-bo", text: "sourdough" },
  "posts/p-3": { authorId: "u-cy", text: "a compiler" },
  "posts/p-4": { authorId: "u-ana", text: "second climb" },
  "posts/p-1/comments/c-1": { authorId: "u-bo", text: "wow" },
  "posts/p-1/comments/c-2": { authorId: "u-cy", text: "high" },
  "posts/p-2/comments/c-3": { authorId: "u-ana", text: "recipe?" },
  "posts/p-3/comments/c-4": { authorId: "u-ana", text: "in what?" },
  "posts/p-4/comments/c-5": { authorId: "u-bo", text: "again" },
  "chats/ch-1": { memberIds: ["u-ana", "u-bo"], title: "ana & bo" },
  "chats/ch-2": { memberIds: ["u-bo", "u-cy"], title: "bo & cy" },
  "chats/ch-3": { memberIds: ["u-ana", "u-bo", "u-cy"], title: "everyone" },
  "chats/ch-1/messages/m-1": { senderId: "u-ana", text: "hi" },
  "chats/ch-1/messages/m-2": { senderId: "u-bo", text: "hey" },
  "chats/ch-2/messages/m-3": { senderId: "u-cy", text: "bread?" },
  "chats/ch-3/messages/m-4": { senderId: "u-ana", text: "hello all" },
  "chats/ch-3/messages/m-5": { senderId: "u-cy", text: "hi" },
  "config/app": { theme: "dark", minVersion: "2.1" },
  "config/limits": { maxUploadMb: 20 },
};
const PATHS = Object.keys(DATA).sort();

/** Every document in the database with its update time, walked from the root (what "writes nothing" compares). */
async function everything(firestore: Firestore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (refs: DocumentReference[]) => {
    for (const ref of refs) {
      const snap = await ref.get();
      if (snap.exists) out.set(ref.path, snap.updateTime!.toDate().toISOString() + String(snap.updateTime!.nanoseconds));
      for (const col of await ref.listCollections()) await walk(await col.listDocuments());
    }
  };
  for (const col of await firestore.listCollections()) await walk(await col.listDocuments());
  return out;
}


describe("retention discover on a social app", () => {
  let draft: DiscoverDraft;

  beforeAll(async () => {
    await clearFirestore();
    await clearAuth();
    // Its app has no objects: the default bucket, which discover samples too, is emptied of other suites' objects.
    await clearStorage();
    for (const uid of USERS) await getAuth(adminApp()).createUser({ uid, email: `${uid}@example.com` });
    const batch = db().batch();
    for (const [path, fields] of Object.entries(DATA)) batch.set(db().doc(path), fields);
    await batch.commit();
    draft = await discoverDraft({ perCollection: 50, depth: 4, maxCollections: 100, maxUsers: 10_000, maxLookups: 10_000, nowMs: Date.parse("2026-12-01T12:00:00Z"), knownVersions: ["v4"] });
  });
  afterAll(clearStorage);

  it("proposes the app's user data map", () => {
    const byId = Object.fromEntries(draft.registry.dataMap.user.map((e) => [e.id, e]));
    expect(Object.keys(byId).sort()).toEqual(["chats-by-member-ids", "comments-group-by-author-id", "messages-group-by-sender-id", "posts-by-author-id", "users-doc"]);
    expect(byId["users-doc"]).toMatchObject({ kind: "doc", path: "users/{uid}", action: "delete", recursive: true });
    expect(byId["posts-by-author-id"]).toMatchObject({ kind: "query", collection: "posts", where: [["authorId", "==", "{uid}"]], action: "delete", recursive: true });
    expect(byId["comments-group-by-author-id"]).toMatchObject({ kind: "collectionGroup", collectionId: "comments", where: [["authorId", "==", "{uid}"]], action: "delete" });
    expect(byId["chats-by-member-ids"]).toMatchObject({ kind: "query", collection: "chats", where: [["memberIds", "array-contains", "{uid}"]], action: "removeFromArray", arrayField: "memberIds" });
    expect(byId["messages-group-by-sender-id"]).toMatchObject({ kind: "collectionGroup", collectionId: "messages", where: [["senderId", "==", "{uid}"]], action: "delete" });
    const evidence = Object.fromEntries(draft.review.entries.map((c) => [c.entryId, c.evidence]));
    expect(evidence["posts-by-author-id"]).toMatch(/^4 of 4 sampled `posts` have `authorId` equal to an Auth uid/);
    expect(evidence["comments-group-by-author-id"]).toMatch(/^5 of 5 sampled `comments` \(under posts\/\{postId\}\)/);
  });

  it("lists config as unclassified, and every pattern seen under the unreviewed class", () => {
    expect(draft.review.unclassified.filter((u) => u.kind === "no-uid-link").map((u) => u.pattern)).toEqual(["config/{configId}"]);
    expect(draft.registry.dataMap.user.some((e) => JSON.stringify(e).includes("config"))).toBe(false);
    expect(draft.registry.collections.map((c) => [c.pattern, c.retentionClass])).toEqual(
      [
        "chats/{chatId}",
        "chats/{chatId}/messages/{messageId}",
        "config/{configId}",
        "posts/{postId}",
        "posts/{postId}/comments/{commentId}",
        "users/{uid}",
        "users/{uid}/following/{otherUid}",
      ].map((p) => [p, UNREVIEWED_CLASS]),
    );
    expect(RegistrySchema.safeParse(draft.registry).success).toBe(true);
    // The version after the one the functions enforce.
    expect(draft.registry.version).toBe(NEXT_VERSION);
  });

  it("counts what it read: every document once (the sample holds them all), one list call per document below the depth bound", () => {
    expect(draft.sample).toMatchObject({ documentsRead: PATHS.length, listCalls: PATHS.length + 1, authUsersListed: 3, authTruncated: false, collectionsSampled: 7 });
  });

  it("stays within --sample and --depth, and writes nothing", async () => {
    const before = await everything(db());
    expect([...before.keys()].sort()).toEqual(PATHS);
    const small = await discoverDraft({ perCollection: 2, depth: 1, maxCollections: 100, maxUsers: 2, maxLookups: 10_000, nowMs: 0, knownVersions: [] });
    // Depth 1: the four root collections, two documents each, no list call below them.
    expect(small.sample).toMatchObject({ documentsRead: 8, listCalls: 1, collectionsSampled: 4, authUsersListed: 2, authTruncated: true });
    expect(small.review.collections.every((c) => c.limited)).toBe(true);
    await discoverDraft({ perCollection: 50, depth: 4, maxCollections: 100, maxUsers: 10_000, maxLookups: 10_000, nowMs: 0, knownVersions: [] });
    expect(await everything(db())).toEqual(before);
  });

  it("when Auth has more accounts than it lists, it looks up the sample's own values instead, within --max-lookups", async () => {
    const one = await discoverDraft({ perCollection: 50, depth: 4, maxCollections: 100, maxUsers: 1, maxLookups: 10_000, nowMs: 0, knownVersions: [] });
    expect(one.sample).toMatchObject({ authUsersListed: 1, authTruncated: true, authFound: 2, authLookupsTruncated: false });
    expect(one.registry.dataMap).toEqual(draft.registry.dataMap);
    const capped = await discoverDraft({ perCollection: 50, depth: 4, maxCollections: 100, maxUsers: 1, maxLookups: 1, nowMs: 0, knownVersions: [] });
    expect(capped.sample).toMatchObject({ authLookedUp: 1, authLookupsTruncated: true });
  });

  it("npx retention discover writes the draft file and prints a summary (--json)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "discover-"));
    const out = join(dir, "draft.json");
    const r = await retention(["discover", "--json", "--out", out]);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { ok: boolean; out: string; documentsRead: number; entries: { entryId: string }[]; unclassified: { pattern: string }[] };
    expect(summary).toMatchObject({ ok: true, out, documentsRead: PATHS.length });
    expect(summary.entries.map((e) => e.entryId)).toEqual(draft.registry.dataMap.user.map((e) => e.id));
    expect(existsSync(out)).toBe(true);
    const written = JSON.parse(readFileSync(out, "utf8")) as DiscoverDraft;
    expect(written.registry.dataMap).toEqual(draft.registry.dataMap);
    expect(written.review.unclassified).toEqual(draft.review.unclassified);
    // A second run does not overwrite a draft someone may be reviewing, and no draft goes where the bundler reads.
    expect((await retention(["discover", "--out", out])).code).toBe(2);
    const refused = await retention(["discover", "--out", join("policies", "versions", `${NEXT_VERSION}.json`)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("policies/versions/ holds published versions only");
    expect(existsSync(join(repoRoot, "policies", "versions", `${NEXT_VERSION}.json`))).toBe(false);
  });
});
