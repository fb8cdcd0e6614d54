// `retention discover` run on the social example's seeded data, compared with the example's hand-written registry:
// every difference between the drafted user data map and the reviewed one is listed, and each is one the docs
// explain (docs/DISCOVER.md, "Drafted against hand-written: the social example").
import { afterAll, describe, expect, it } from "vitest";
import { SOCIAL_OBJECTS } from "../../../examples/social/data";
import { SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE, SOCIAL_DATABASE, socialPolicy } from "../../../examples/social/registry";
import { PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { inCell } from "../../../functions/src/platform/firestore";
import { seedSocial } from "../../../examples/social/seed";
import { DEFAULT_SAMPLE, discoverDraft } from "../../../functions/src/discover/index";
import { RegistrySchema, type DataMapEntry } from "../../../functions/src/kernel/policy-schema";
import { settings } from "../../../functions/src/platform/settings";
import { clearAuth, clearFirestore } from "../../helpers/emulator";
import { clearStorage } from "../../helpers/storage";
import { onSocialExample } from "../../helpers/social";

onSocialExample();

/** What an entry reaches: its kind, its target and its filters (ids and prose are the reviewer's); for objects, the bucket and the template. */
const reach = (e: DataMapEntry): string =>
  e.kind === "storage" ? `storage ${e.bucket ?? ""} ${e.prefix ?? e.object ?? ""}` : `${e.kind} ${e.path ?? e.collection ?? e.collectionId ?? ""}${e.where.map((w) => ` ${w.join(" ")}`).join("")}`;
/** What it does there (for objects, with the document a hold must cover to keep them). */
const effect = (e: DataMapEntry): string => `${e.action}${e.arrayField ? ` ${e.arrayField}` : ""}${e.recursive ? " recursive" : ""}${e.heldWith ? ` heldWith ${e.heldWith}` : ""}`;

/** Every difference between two user data maps, as lines a reviewer reads. */
function differences(drafted: readonly DataMapEntry[], reviewed: readonly DataMapEntry[]): string[] {
  const d = new Map(drafted.map((e) => [reach(e), e]));
  const r = new Map(reviewed.map((e) => [reach(e), e]));
  const out: string[] = [];
  for (const [k, e] of r) {
    const found = d.get(k);
    if (!found) out.push(`only reviewed: ${k} -> ${effect(e)}`);
    else if (effect(found) !== effect(e)) out.push(`changed: ${k}: drafted ${effect(found)}, reviewed ${effect(e)}`);
  }
  for (const [k, e] of d) if (!r.has(k)) out.push(`only drafted: ${k} -> ${effect(e)}`);
  return out.sort();
}

describe("retention discover on the social example", () => {
  // The bucket is shared by every suite of the run: leave nothing behind.
  afterAll(clearStorage);

  it("drafts the reviewed user data map but for the differences the docs explain", async () => {
    expect(settings.databaseId()).toBe(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_ANALYTICS_DATABASE);
    await clearAuth();
    await clearStorage();
    await seedSocial({ nowMs: Date.parse("2026-12-03T09:00:00Z"), withObjects: true });
    const draft = await discoverDraft({ ...DEFAULT_SAMPLE, nowMs: Date.now(), knownVersions: ["v1", "v2", "v3"] });
    const drafted = RegistrySchema.parse(draft.registry);
    // Discover samples the database it runs on: here the primary, so it is compared with the primary's part of the
    // reviewed registry (the analytics database's part is drafted below, on that database).
    const reviewed = socialPolicy().forCell(PRIMARY_CELL).registry;
    expect(differences(drafted.dataMap.user, reviewed.dataMap.user)).toEqual([
      "only reviewed: collectionGroup following followeeId == {uid} -> delete",
    ]);
    // The follow of another user under a uid-keyed profile is listed for review, which is where the reviewer found it.
    expect(draft.review.unclassified.map((u) => `${u.pattern.replace(/\{[^}]+\}/g, "{}")} ${u.kind}`)).toEqual(["users/{}/following/{} id-under-parent"]);
    // Every collection the example governs is drafted, each waiting for its class.
    const patterns = (ps: { pattern: string }[]) => ps.map((p) => p.pattern.replace(/\{[^}]+\}/g, "{}")).sort();
    expect(patterns(drafted.collections)).toEqual(patterns(reviewed.collections));
    // The avatars and uploads: the folder after users/ is an Auth uid in every sampled object, so the draft proposes
    // the reviewed storage entry, held with the uid-keyed profile it also drafted (no difference above), and says
    // that heldWith is a proposal to check.
    const media = drafted.dataMap.user.find((e) => e.kind === "storage")!;
    expect(media).toMatchObject({ kind: "storage", bucket: "(default)", prefix: "users/{uid}/", heldWith: "users/{uid}", action: "delete" });
    const candidate = draft.review.entries.find((c) => c.entryId === media.id)!;
    expect(candidate).toMatchObject({ link: "path", matched: SOCIAL_OBJECTS.length, sampled: SOCIAL_OBJECTS.length });
    expect(candidate.evidence).toMatch(/heldWith users\/\{uid\}: the uid-keyed document the draft deletes, so a hold on it holds the objects \(a proposal: check it\)/);
    expect(draft.review.steps.some((step) => step.includes("heldWith"))).toBe(true);
    expect(draft.sample.buckets).toEqual([{ bucket: "(default)", folders: 1, objectsRead: SOCIAL_OBJECTS.length, foldersLimited: false, rootObjects: 0 }]);
    // What a reviewer adds that the data cannot say: the subtree hold roots.
    expect(drafted.subtreeHoldRoots).toEqual([]);
    expect(reviewed.subtreeHoldRoots).toEqual(["chats/{chatId}"]);

    // Run on the analytics database, it drafts that database's part: the activity log by uid, all of it.
    const analyticsDraft = await inCell(SOCIAL_ANALYTICS, () => discoverDraft({ ...DEFAULT_SAMPLE, nowMs: Date.now(), knownVersions: ["v1", "v2", "v3"] }));
    const analytics = RegistrySchema.parse(analyticsDraft.registry);
    expect(differences(analytics.dataMap.user, socialPolicy().forCell(SOCIAL_ANALYTICS).registry.dataMap.user)).toEqual([]);
    expect(patterns(analytics.collections)).toEqual(["events/{}"]);
    // Buckets belong to no database: they were sampled with the primary's draft, not again here.
    expect(analyticsDraft.sample.buckets).toEqual([]);
    expect(analytics.dataMap.user.some((e) => e.kind === "storage")).toBe(false);
  });
});
