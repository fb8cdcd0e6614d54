/**
 * The discover classifier and drafter (functions/src/discover/rules.ts) on plain samples: each kind of uid link,
 * the threshold, what it ignores, the indexes it asks for (checked with the index coverage check's own rules),
 * determinism, and that the draft is a registry the schema reads but the registry check will not publish.
 */
import { describe, expect, it } from "vitest";
import { overrideProposal, checkQuery, type IndexConfig, type QueryShape } from "../../../functions/src/indexes/rules";
import { sha256Hex } from "../../../functions/src/kernel/canonical";
import { checkRegistry } from "../../../functions/src/kernel/registry-check";
import { RegistrySchema } from "../../../functions/src/kernel/policy-schema";
import {
  draftRegistry,
  nextVersion,
  uidCandidates,
  variableFor,
  UNREVIEWED_CLASS,
  type BucketSample,
  type CollectionSample,
  type DiscoverInput,
  type SampledDoc,
} from "../../../functions/src/discover/rules";
import { loadCurrent } from "../../helpers/policy";

const UIDS = new Set(["u-ana", "u-bo", "u-cy"]);

const doc = (path: string, fields: Record<string, unknown>): SampledDoc => ({ id: path.split("/").at(-1)!, path, fields });

function sample(collectionPath: string[], docs: SampledDoc[], subcollections: Record<string, number> = {}): CollectionSample {
  return { collectionPath, docs, subcollections, limited: false, depthLimited: false };
}

/** The social app of the emulator test, as a sample. */
function socialSamples(): CollectionSample[] {
  return [
    sample(
      ["users"],
      ["u-ana", "u-bo", "u-cy"].map((u) => doc(`users/${u}`, { displayName: u.toUpperCase(), bio: "hi" })),
      { following: 3 },
    ),
    sample(["users", "following"], [
      doc("users/u-ana/following/u-bo", { followedAt: 1 }),
      doc("users/u-bo/following/u-ana", { followedAt: 2 }),
      doc("users/u-cy/following/u-ana", { followedAt: 3 }),
      doc("users/u-cy/following/u-bo", { followedAt: 4 }),
    ]),
    sample(
      ["posts"],
      [
        doc("posts/p-1", { authorId: "u-ana", text: "one" }),
        doc("posts/p-2", { authorId: "u-bo", text: "two" }),
        doc("posts/p-3", { authorId: "u-cy", text: "three" }),
        doc("posts/p-4", { authorId: "u-ana", text: "four" }),
      ],
      { comments: 3 },
    ),
    sample(["posts", "comments"], [
      doc("posts/p-1/comments/c-1", { authorId: "u-bo", text: "nice" }),
      doc("posts/p-1/comments/c-2", { authorId: "u-cy", text: "yes" }),
      doc("posts/p-2/comments/c-3", { authorId: "u-ana", text: "ok" }),
      doc("posts/p-3/comments/c-4", { authorId: "u-ana", text: "hm" }),
    ]),
    sample(
      ["chats"],
      [
        doc("chats/ch-1", { memberIds: ["u-ana", "u-bo"], title: "ab" }),
        doc("chats/ch-2", { memberIds: ["u-bo", "u-cy"], title: "bc" }),
        doc("chats/ch-3", { memberIds: ["u-ana", "u-bo", "u-cy"], title: "all" }),
      ],
      { messages: 3 },
    ),
    sample(["chats", "messages"], [
      doc("chats/ch-1/messages/m-1", { senderId: "u-ana", text: "hey" }),
      doc("chats/ch-1/messages/m-2", { senderId: "u-bo", text: "yo" }),
      doc("chats/ch-2/messages/m-3", { senderId: "u-cy", text: "hi" }),
      doc("chats/ch-3/messages/m-4", { senderId: "u-ana", text: "all" }),
    ]),
    sample(["config"], [doc("config/app", { theme: "dark", owner: "u-zed" }), doc("config/flags", { beta: true })]),
  ];
}

function input(samples: CollectionSample[], over: Partial<DiscoverInput> = {}): DiscoverInput {
  return {
    samples,
    uids: UIDS,
    base: loadCurrent(),
    version: "v4",
    nowMs: Date.parse("2026-12-01T12:00:00Z"),
    summary: { perCollection: 50, depth: 4, maxCollections: 100, documentsRead: 24, listCalls: 12, authUsersListed: 3, authTruncated: false, authLookedUp: 0, authFound: 0, authLookupsTruncated: false, collectionsNotSampled: [] },
    ...over,
  };
}

const entry = (d: ReturnType<typeof draftRegistry>, id: string) => d.registry.dataMap.user.find((e) => e.id === id);
const candidate = (d: ReturnType<typeof draftRegistry>, id: string) => d.review.entries.find((e) => e.entryId === id);

describe("discover: classifying a sample", () => {
  const d = draftRegistry(input(socialSamples()));

  it("proposes exactly the social app's data map", () => {
    expect(d.registry.dataMap.user).toEqual([
      { id: "chats-by-member-ids", kind: "query", collection: "chats", where: [["memberIds", "array-contains", "{uid}"]], action: "removeFromArray", arrayField: "memberIds", reason: "A document the user shares with others: erasure takes the user out of memberIds, and the document stays for the rest.", reasonCode: "SHARED_WITH_OTHERS" },
      { id: "comments-group-by-author-id", kind: "collectionGroup", collectionId: "comments", where: [["authorId", "==", "{uid}"]], action: "delete", recursive: false },
      { id: "messages-group-by-sender-id", kind: "collectionGroup", collectionId: "messages", where: [["senderId", "==", "{uid}"]], action: "delete", recursive: false },
      { id: "posts-by-author-id", kind: "query", collection: "posts", where: [["authorId", "==", "{uid}"]], action: "delete", recursive: true },
      { id: "users-doc", kind: "doc", path: "users/{uid}", action: "delete", recursive: true },
    ]);
  });

  it("a uid string field: counted, with its evidence", () => {
    const c = candidate(d, "posts-by-author-id")!;
    expect(c).toMatchObject({ link: "field", field: "authorId", matched: 4, sampled: 4, share: 1, patterns: ["posts/{postId}"] });
    expect(c.evidence).toBe("4 of 4 sampled `posts` have `authorId` equal to an Auth uid; subcollections go with each document (recursive)");
    expect(c.index).toMatchObject({ scope: "collection", automatic: true, mode: "ASCENDING" });
  });

  it("an array of uids: array-contains and removeFromArray, never recursive", () => {
    const c = candidate(d, "chats-by-member-ids")!;
    expect(c).toMatchObject({ link: "array", field: "memberIds", matched: 3, sampled: 3 });
    expect(c.evidence).toContain("3 of 3 sampled `chats` have `memberIds` containing an Auth uid");
    expect(entry(d, "chats-by-member-ids")!.recursive).toBeUndefined();
  });

  it("a document id equal to a uid: the document, recursive because it has subcollections", () => {
    expect(candidate(d, "users-doc")).toMatchObject({ link: "id", matched: 3, sampled: 3, patterns: ["users/{uid}"] });
    const flat = draftRegistry(input([sample(["profiles"], ["u-ana", "u-bo", "u-cy"].map((u) => doc(`profiles/${u}`, { bio: "x" })))]));
    expect(entry(flat, "profiles-doc")).toMatchObject({ kind: "doc", path: "profiles/{uid}", recursive: false });
  });

  it("subcollections: patterns with the parent's variable; a uid field proposes a collection group", () => {
    expect(d.registry.collections.map((c) => c.pattern)).toEqual([
      "chats/{chatId}",
      "chats/{chatId}/messages/{messageId}",
      "config/{configId}",
      "posts/{postId}",
      "posts/{postId}/comments/{commentId}",
      "users/{uid}",
      "users/{uid}/following/{otherUid}",
    ]);
    expect(d.registry.collections.every((c) => c.retentionClass === UNREVIEWED_CLASS)).toBe(true);
    expect(candidate(d, "comments-group-by-author-id")).toMatchObject({ matched: 4, sampled: 4, patterns: ["posts/{postId}/comments/{commentId}"] });
    expect(candidate(d, "comments-group-by-author-id")!.evidence).toBe("4 of 4 sampled `comments` (under posts/{postId}) have `authorId` equal to an Auth uid");
    const following = d.review.collections.find((c) => c.pattern === "users/{uid}/following/{otherUid}")!;
    expect(following.reachedBy).toEqual(["goes with users-doc"]);
    // Keyed by other users' uids: said so, with numbers, since no data-map query finds them by id.
    expect(d.review.unclassified).toContainEqual(expect.objectContaining({ pattern: "users/{uid}/following/{otherUid}", kind: "id-under-parent", matched: 4, sampled: 4 }));
  });

  it("a link below the threshold is unclassified with its numbers, not proposed", () => {
    const posts = socialSamples().find((s) => s.collectionPath.join("/") === "posts")!;
    const some = {
      ...posts,
      docs: posts.docs.map((p, i) => ({ ...p, fields: { ...p.fields, editorId: i === 0 ? "u-bo" : "someone" } })),
    };
    const below = draftRegistry(input([some]));
    expect(below.registry.dataMap.user.map((e) => e.id)).toEqual(["posts-by-author-id"]);
    expect(below.review.unclassified).toEqual([
      expect.objectContaining({ pattern: "posts/{postId}", kind: "below-threshold", link: "field", field: "editorId", matched: 1, sampled: 4 }),
    ]);
    // The minimum count holds too: 2 of 2 is 100% but fewer than minDocs.
    const two = draftRegistry(input([sample(["notes"], [doc("notes/n1", { ownerId: "u-ana" }), doc("notes/n2", { ownerId: "u-bo" })])]));
    expect(two.registry.dataMap.user).toEqual([]);
    expect(two.review.unclassified[0]).toMatchObject({ kind: "below-threshold", matched: 2, sampled: 2 });
    expect(RegistrySchema.safeParse(two.registry).success).toBe(false);
  });

  it("ignores fields that hold no Auth uid, and uid-shaped values Auth does not know", () => {
    const ids = d.review.entries.map((e) => e.field ?? e.link);
    for (const f of ["text", "title", "displayName", "bio", "followedAt", "theme", "owner"]) expect(ids).not.toContain(f);
    expect(d.review.unclassified.filter((u) => u.pattern === "config/{configId}")).toEqual([
      expect.objectContaining({ kind: "no-uid-link", sampled: 2 }),
    ]);
    expect(d.review.collections.find((c) => c.pattern === "config/{configId}")!.reachedBy).toEqual([]);
  });

  it("a uid-keyed document's own id in a field is no link; another user's uid is listed for review", () => {
    const users = draftRegistry(
      input([
        sample(["members"], [
          doc("members/u-ana", { uid: "u-ana", referredBy: "u-bo" }),
          doc("members/u-bo", { uid: "u-bo", referredBy: "u-cy" }),
          doc("members/u-cy", { uid: "u-cy" }),
        ]),
      ]),
    );
    expect(users.registry.dataMap.user.map((e) => e.id)).toEqual(["members-doc"]);
    expect(users.review.unclassified).toEqual([expect.objectContaining({ kind: "other-user-field", field: "referredBy", matched: 2, sampled: 3 })]);
  });

  it("is deterministic: the same sample in any order gives the same draft", () => {
    const shuffled = socialSamples()
      .reverse()
      .map((s) => ({ ...s, docs: [...s.docs].reverse() }));
    expect(JSON.stringify(draftRegistry(input(shuffled)))).toBe(JSON.stringify(d));
  });

  it("skips the control plane, and keeps the class of a shape the base registry already governs", () => {
    const base = loadCurrent();
    const known = draftRegistry(
      input([
        sample(["deletionRequests"], [doc("deletionRequests/r1", { uid: "u-ana" }), doc("deletionRequests/r2", { uid: "u-bo" }), doc("deletionRequests/r3", { uid: "u-cy" })]),
        sample(["sessions"], [doc("sessions/s1", { uid: "u-ana" }), doc("sessions/s2", { uid: "u-bo" }), doc("sessions/s3", { uid: "u-cy" })]),
      ]),
    );
    expect(known.sample.skippedControlPlane).toEqual(["deletionRequests"]);
    expect(known.registry.collections).toEqual([base.collections.find((c) => c.pattern === "sessions/{sessionId}")]);
    expect(known.registry.dataMap.user.map((e) => e.id)).toEqual(["sessions-by-uid"]);
    expect(known.registry.classes.map((c) => c.id)).not.toContain(UNREVIEWED_CLASS);
  });

  it("a nested field repeating its uid-keyed ancestor's id goes with that document; a nested array proposes removeFromArray", () => {
    const nested = draftRegistry(
      input([
        sample(["profiles"], ["u-ana", "u-bo", "u-cy"].map((u) => doc(`profiles/${u}`, {})), { notes: 3, albums: 3 }),
        sample(["profiles", "notes"], ["u-ana", "u-bo", "u-cy"].map((u) => doc(`profiles/${u}/notes/n-${u}`, { ownerId: u }))),
        sample(["profiles", "albums"], ["u-ana", "u-bo", "u-cy"].map((u) => doc(`profiles/${u}/albums/a-${u}`, { sharedWith: ["u-ana", "u-bo", "u-cy"].filter((x) => x !== u) }))),
      ]),
    );
    expect(nested.registry.dataMap.user.map((e) => e.id)).toEqual(["albums-group-by-shared-with", "profiles-doc"]);
    expect(entry(nested, "albums-group-by-shared-with")).toMatchObject({ kind: "collectionGroup", collectionId: "albums", where: [["sharedWith", "array-contains", "{uid}"]], action: "removeFromArray", arrayField: "sharedWith" });
    expect(nested.review.collections.find((c) => c.pattern === "profiles/{uid}/notes/{noteId}")!.reachedBy).toEqual(["goes with profiles-doc"]);
    expect(nested.review.unclassified).toEqual([]);
  });

  it("the values worth asking Auth about: ids, string fields and array strings that could be uids", () => {
    const s = [sample(["posts"], [doc("posts/p-1", { authorId: "u-ana", likedBy: ["u-zed", 3], text: "two words", n: 4 })])];
    expect(uidCandidates(s, new Set(["u-ana"]))).toEqual(["p-1", "u-zed"]);
  });

  it("names variables from collection ids and versions after every one on file", () => {
    expect(["posts", "replies", "user_logs", "following", "addresses", "statuses", "2x"].map(variableFor)).toEqual(["postId", "replyId", "userLogId", "followingId", "addressId", "statusId", "xId"]);
    expect(nextVersion(["v3", "v12", "draft"])).toBe("v13");
  });
});

describe("discover: the indexes a proposal needs", () => {
  const d = draftRegistry(input(socialSamples()));
  const config: IndexConfig = { indexes: [], fieldOverrides: d.review.indexes.fieldOverrides };
  const shapeOf = (scope: QueryShape["scope"], collectionId: string, field: string, op: string): QueryShape => ({
    database: "(default)",
    scope,
    collectionId,
    where: { op: "AND", filters: [{ field, op }] },
    orderBy: [{ field: "__name__", direction: "ASCENDING" }],
    aggregations: [],
  });

  it("a collection-group query: the field override the index check itself proposes, which covers it", () => {
    for (const [collectionId, field] of [["comments", "authorId"], ["messages", "senderId"]] as const) {
      const shape = shapeOf("collection-group", collectionId, field, "EQUAL");
      expect(checkQuery({}, shape).status).toBe("missing");
      expect(checkQuery(config, shape).status).toBe("covered");
      const drafted = d.review.indexes.fieldOverrides.find((o) => o.collectionGroup === collectionId && o.fieldPath === field);
      const proposal = overrideProposal({}, collectionId, field, "ASCENDING", "collection-group");
      expect(proposal.kind === "fieldOverride" && proposal.entry).toEqual(drafted);
    }
  });

  it("collection queries use the automatic indexes, which the drafted overrides keep", () => {
    for (const c of d.review.entries.filter((e) => e.index?.scope === "collection")) {
      const shape = shapeOf("collection", c.index!.collectionGroup, c.index!.fieldPath, c.link === "array" ? "ARRAY_CONTAINS" : "EQUAL");
      expect(checkQuery({}, shape).status).toBe("covered");
      expect(checkQuery(config, shape).status).toBe("covered");
    }
  });

  it("the engine's own: deletionRequestId at collection-group scope for every collection id", () => {
    const ids = d.review.indexes.fieldOverrides.filter((o) => o.fieldPath === "deletionRequestId").map((o) => o.collectionGroup);
    expect(ids).toEqual(["chats", "comments", "config", "following", "messages", "posts", "users"]);
    expect(checkQuery(config, shapeOf("collection-group", "following", "deletionRequestId", "EQUAL")).status).toBe("covered");
  });
});

describe("discover: the draft and the registry check", () => {
  const d = draftRegistry(input(socialSamples()));

  it("the draft's registry parses with RegistrySchema as it stands", () => {
    const r = RegistrySchema.safeParse(d.registry);
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
  });

  it("is refused as a version file while it uses the unreviewed class, and accepted once reviewed", () => {
    const check = (registry: unknown) => {
      const text = `${JSON.stringify(registry, null, 2)}\n`;
      return checkRegistry({ files: new Map([["v4.json", text]]), lock: [{ version: "v4", file: "v4.json", sha256: sha256Hex(text) }], collectionsInUse: new Map() });
    };
    expect(check(d.registry).errors).toEqual([expect.stringContaining(`class ${UNREVIEWED_CLASS} is the discover draft's placeholder`)]);
    const base = loadCurrent();
    const personal = base.classes.find((c) => c.id === "user-delete")!;
    const reviewed = {
      ...d.registry,
      classes: [...d.registry.classes.filter((c) => c.id !== UNREVIEWED_CLASS), personal],
      collections: d.registry.collections.map((c) => ({ ...c, retentionClass: "user-delete" })),
    };
    const result = check(reviewed);
    expect(result.errors).toEqual([]);
    expect(result.current?.dataMap.user).toHaveLength(5);
  });
});

describe("discover: storage entries from sampled object paths", () => {
  const bucket = (folders: { prefix: string; names: string[] }[]): BucketSample => ({ bucket: "(default)", folders: folders.map((f) => ({ ...f, limited: false })), foldersLimited: false, rootObjects: 0 });

  it("proposes users/{uid}/ held with the uid-keyed profile the draft found, with its numbers, and flags heldWith for review", () => {
    const d = draftRegistry(
      input(socialSamples(), {
        buckets: [bucket([{ prefix: "users/", names: ["users/u-ana/avatar.jpg", "users/u-ana/uploads/a.jpg", "users/u-bo/avatar.jpg", "users/u-cy/avatar.jpg"] }])],
      }),
    );
    expect(entry(d, "users-objects")).toEqual({ id: "users-objects", kind: "storage", bucket: "(default)", prefix: "users/{uid}/", heldWith: "users/{uid}", action: "delete" });
    expect(candidate(d, "users-objects")).toMatchObject({ link: "path", matched: 4, sampled: 4, share: 1 });
    expect(candidate(d, "users-objects")!.evidence).toMatch(/heldWith users\/\{uid\}: the uid-keyed document the draft deletes/);
    expect(RegistrySchema.safeParse(d.registry).success).toBe(true);
    expect(d.sample.buckets).toEqual([{ bucket: "(default)", folders: 1, objectsRead: 4, foldersLimited: false, rootObjects: 0 }]);
    // No uid, no value: the draft names folders and counts only.
    expect(JSON.stringify(d)).not.toMatch(/u-ana|u-bo|u-cy/);
  });

  it("lists what it cannot propose: too few objects, other ids before the uid, a folder without a uid", () => {
    const d = draftRegistry(
      input(socialSamples(), {
        buckets: [
          bucket([
            { prefix: "media/", names: ["media/u-ana/a.jpg", "media/x/b.jpg", "media/y/c.jpg", "media/z/d.jpg"] },
            { prefix: "tenants/", names: ["tenants/t-1/users/u-ana/a.jpg", "tenants/t-2/users/u-bo/b.jpg", "tenants/t-2/users/u-cy/c.jpg"] },
            { prefix: "public/", names: ["public/logo.png", "public/banner.png"] },
          ]),
        ],
      }),
    );
    expect(d.registry.dataMap.user.filter((e) => e.kind === "storage")).toEqual([]);
    const kinds = d.review.unclassified.filter((u) => u.link === "path").map((u) => [u.pattern, u.kind, u.matched, u.sampled]);
    expect(kinds).toEqual([
      ["gs://<default bucket>/media/{uid}/", "below-threshold", 1, 4],
      ["gs://<default bucket>/tenants/{…}/{…}/{uid}/", "storage-ids-before-uid", 3, 3],
    ]);
    expect(JSON.stringify(d.review.unclassified)).not.toMatch(/t-1|t-2|u-ana/);
  });
});
