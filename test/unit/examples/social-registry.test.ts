// The social example's registry (examples/social/policies) passes the same checks the build runs over the
// product's own registry, and it is shaped as an app without a scope kind must be: a data map in {uid} alone.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkRegistry, collectionsInRules } from "../../../functions/src/kernel/registry-check";
import { PolicyIndex } from "../../../functions/src/kernel/policy";
import { socialCollectionIds } from "../../../examples/social/data";
import { SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_RULES_FILE, SOCIAL_INDEXES_FILE, SOCIAL_RULES_FILE, SOCIAL_VERSIONS_DIR, socialLock, socialRegistry } from "../../../examples/social/registry";
import { RegistrySchema } from "../../../functions/src/kernel/policy-schema";
import { ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import { loadCurrent } from "../../helpers/policy";

const files = (): Map<string, string> =>
  new Map(
    readdirSync(SOCIAL_VERSIONS_DIR)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => [f, readFileSync(join(SOCIAL_VERSIONS_DIR, f), "utf8")] as const),
  );

function inUse(): Map<string, string> {
  const m = new Map<string, string>();
  for (const c of collectionsInRules(readFileSync(SOCIAL_RULES_FILE, "utf8"))) m.set(c, "examples/social/firestore.rules");
  for (const c of collectionsInRules(readFileSync(SOCIAL_ANALYTICS_RULES_FILE, "utf8"))) m.set(c, "examples/social/firestore.analytics.rules");
  for (const c of socialCollectionIds()) m.set(c, "the social demo data");
  return m;
}

/** Every `{variable}` a data-map entry names, in its path, collection or filter values. */
const variablesOf = (texts: readonly (string | undefined)[]): string[] => texts.flatMap((t) => [...(t ?? "").matchAll(/\{([A-Za-z]+)\}/g)].map((m) => m[1]!));

describe("the social example's registry", () => {
  it("passes the registry checks over its files, its lock and the collections its rules and data use", () => {
    const r = checkRegistry({ files: files(), lock: socialLock(), collectionsInUse: inUse() });
    expect(r.errors).toEqual([]);
    expect(r.current?.version).toBe("v5");
    // The rules name every collection of the app and of the product's control plane.
    expect([...inUse().keys()].sort()).toEqual(
      ["archives", "chats", "comments", "dataExports", "deletionAudits", "deletionRequests", "events", "following", "messages", "notifications", "posts", "processedEvents", "retentionHolds", "retentionJobs", "retentionReports", "users"].sort(),
    );
  });

  it("declares users that belong to no scope, and a data map that names no variable but {uid}", () => {
    const reg = socialRegistry();
    expect(reg.subjects?.scope).toBeUndefined();
    expect(reg.subjects?.user.scopeLookups).toEqual([]);
    expect(reg.dataMap.tenant).toBeUndefined();
    const vars = reg.dataMap.user.flatMap((e) => variablesOf([e.path, e.collection, ...e.where.map((w) => w[2])]));
    expect(vars.length).toBeGreaterThan(0);
    expect(new Set(vars)).toEqual(new Set(["uid"]));
    const pol = new PolicyIndex(reg);
    expect(pol.subjectVars({ type: "user", uid: "u-ana", tenantId: "" })).toEqual({ uid: "u-ana" });
    expect(pol.scopeRecordPath("")).toBeNull();
  });

  it("a {tenantId} in its data map would be refused: the app has no scope kind", () => {
    const text = files().get("v1.json")!.replace('"collection": "posts"', '"collection": "tenants/{tenantId}/posts"');
    expect(text).not.toBe(files().get("v1.json"));
    const r = checkRegistry({ files: new Map([["v1.json", text]]), lock: [{ version: "v1", file: "v1.json", sha256: "" }], collectionsInUse: new Map() });
    expect(r.errors.join("\n")).toMatch(/dataMap\.user\.posts: \{tenantId\} is not a variable of this subject/);
  });

  it("holds a chat as a subtree, and says what each data-map entry does", () => {
    const reg = socialRegistry();
    expect(new PolicyIndex(reg).subtreeHoldRoots()).toEqual(["chats/{chatId}"]);
    const byId = new Map(reg.dataMap.user.map((e) => [e.id, e]));
    expect([...byId.keys()].sort()).toEqual(["activity", "chats", "comments", "followers", "media", "messages", "notifications", "posts", "profile"]);
    // v3: the avatars and uploads in the default bucket, held with the profile.
    expect(byId.get("media")).toMatchObject({ kind: "storage", bucket: "(default)", prefix: "users/{uid}/", heldWith: "users/{uid}", action: "delete" });
    expect(byId.get("profile")).toMatchObject({ kind: "doc", path: "users/{uid}", action: "delete", recursive: true });
    expect(byId.get("posts")).toMatchObject({ kind: "query", collection: "posts", where: [["authorId", "==", "{uid}"]], action: "delete", recursive: true });
    expect(byId.get("posts")?.description).toMatch(/comments on the user's post go with the post/);
    expect(byId.get("comments")).toMatchObject({ kind: "collectionGroup", collectionId: "comments", where: [["authorId", "==", "{uid}"]], action: "delete" });
    expect(byId.get("chats")).toMatchObject({
      kind: "query",
      collection: "chats",
      where: [["memberIds", "array-contains", "{uid}"]],
      action: "removeFromArray",
      arrayField: "memberIds",
      reasonCode: "SHARED_THREAD",
    });
    expect(byId.get("messages")).toMatchObject({ kind: "collectionGroup", collectionId: "messages", where: [["senderId", "==", "{uid}"]], action: "delete" });
    expect(byId.get("notifications")).toMatchObject({ kind: "query", collection: "notifications", where: [["recipientId", "==", "{uid}"]], action: "delete" });
  });

  it("v2 adds notifications, kept 30 days by Firestore's TTL, with the TTL override and its trigger; v1 is unchanged", () => {
    // The primary database's part (v4 adds a second database, analytics, with a TTL collection of its own).
    const pol = new PolicyIndex(socialRegistry()).forCell("primary");
    const cls = pol.classForPath("notifications/n-1");
    expect(cls).toMatchObject({ id: "notification-30d", mechanism: "ttl", durationDays: 30, holdBehaviour: "allow" });
    expect(ttlTriggerTargets(pol).map((t) => t.pattern)).toEqual(["notifications/{notificationId}"]);
    const indexes = JSON.parse(readFileSync(SOCIAL_INDEXES_FILE, "utf8")) as { fieldOverrides: { collectionGroup: string; fieldPath: string; ttl?: boolean }[] };
    expect(indexes.fieldOverrides).toContainEqual(expect.objectContaining({ collectionGroup: "notifications", fieldPath: "expireAt", ttl: true }));
    const v1 = RegistrySchema.parse(JSON.parse(files().get("v1.json")!));
    expect(new PolicyIndex(v1).classForPath("notifications/n-1")).toBeUndefined();
    expect(socialLock().map((l) => l.version)).toEqual(["v1", "v2", "v3", "v4", "v5"]);
  });

  it("v4 governs a second database, analytics: the activity log lives there, and a member's erasure reaches it", () => {
    const whole = new PolicyIndex(socialRegistry());
    expect(whole.cells()).toEqual(["primary", SOCIAL_ANALYTICS]);
    expect(whole.cellsReaching("user")).toEqual([SOCIAL_ANALYTICS]);
    // The app has no scope kind: nothing of a scope is held in another database.
    expect(whole.cellsWithScopeData()).toEqual([]);
    const analytics = whole.forCell(SOCIAL_ANALYTICS);
    expect(analytics.registry.collections.map((c) => c.pattern)).toEqual(["events/{eventId}"]);
    expect(analytics.classForPath("events/ev-1")).toMatchObject({ id: "activity-log", mechanism: "ttl", durationDays: 90, holdBehaviour: "allow" });
    expect(analytics.dataMap("user")).toEqual([expect.objectContaining({ id: "activity", kind: "query", collection: "events", where: [["uid", "==", "{uid}"]], action: "delete" })]);
    expect(ttlTriggerTargets(analytics).map((t) => t.pattern)).toEqual(["events/{eventId}"]);
    // The primary's view knows nothing of it, and a chat is held where chats live.
    const primary = whole.forCell("primary");
    expect(primary.classForPath("events/ev-1")).toBeUndefined();
    expect(primary.dataMap("user").map((e) => e.id).sort()).toEqual(["chats", "comments", "followers", "messages", "notifications", "posts", "profile"]);
    expect(primary.subtreeHoldRoots()).toEqual(["chats/{chatId}"]);
    expect(analytics.subtreeHoldRoots()).toEqual([]);
  });

  it("v4 keeps v3's objects in one database: the primary, where their heldWith document (users/{uid}) is and a hold on it is placed", () => {
    const whole = new PolicyIndex(socialRegistry());
    expect(whole.storageMap("user").map((e) => e.id)).toEqual(["media"]);
    expect(whole.forCell("primary").storageMap("user").map((e) => e.id)).toEqual(["media"]);
    expect(whole.forCell(SOCIAL_ANALYTICS).storageMap("user")).toEqual([]);
    expect(whole.forCell(SOCIAL_ANALYTICS).hasStorageEntries).toBe(false);
    // v3, the storage version, stays as it was published: one database.
    const v3 = RegistrySchema.parse(JSON.parse(files().get("v3.json")!));
    expect(v3.databases).toEqual([]);
    expect(v3.dataMap.user.map((e) => e.id)).toContain("media");
  });

  it("has the product's control plane: the same collections as the product's registry, with classes that mean the same", () => {
    const social = new PolicyIndex(socialRegistry());
    const product = new PolicyIndex(loadCurrent());
    // All but the processors' outbox, which a registry lists only with processors (the social app names none).
    const names = (p: PolicyIndex) => p.registry.controlPlane.map((c) => c.collection).sort();
    expect(names(social)).toEqual(names(product).filter((c) => c !== "processorNotices"));
    for (const c of names(social)) {
      const meaning = (p: PolicyIndex) => {
        const cls = p.controlPlaneClass(c)!;
        return { durationDays: cls.durationDays, mechanism: cls.mechanism, holdBehaviour: cls.holdBehaviour, archive: cls.archive, userDeletable: cls.userDeletable };
      };
      expect(meaning(social), c).toEqual(meaning(product));
    }
  });

  it("v5 runs every member's request on GDPR's clock: one month, extendable once by two", () => {
    const clocks = socialRegistry().legalClocks;
    expect(clocks).toEqual({ laws: [{ id: "gdpr", name: "GDPR Art. 12(3)", period: { months: 1 }, extension: { months: 2 } }], rules: [], default: "gdpr" });
    const v4 = RegistrySchema.parse(JSON.parse(files().get("v4.json")!));
    expect(v4.legalClocks).toBeUndefined();
  });
});
