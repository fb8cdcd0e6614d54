// `retention discover` run on the social example's seeded data, compared with the example's hand-written registry:
// every difference between the drafted user data map and the reviewed one is listed, and each is one the docs
// explain (docs/DISCOVER.md, "Drafted against hand-written: the social example").
import { describe, expect, it } from "vitest";
import { SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE, SOCIAL_DATABASE, socialPolicy } from "../../../examples/social/registry";
import { PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { inCell } from "../../../functions/src/platform/firestore";
import { seedSocial } from "../../../examples/social/seed";
import { DEFAULT_SAMPLE, discoverDraft } from "../../../functions/src/discover/index";
import { RegistrySchema, type DataMapEntry } from "../../../functions/src/kernel/policy-schema";
import { settings } from "../../../functions/src/platform/settings";
import { clearAuth, clearFirestore } from "../../helpers/emulator";
import { onSocialExample } from "../../helpers/social";

onSocialExample();

/** What an entry reaches: its kind, its target and its filters (ids and prose are the reviewer's). */
const reach = (e: DataMapEntry): string => `${e.kind} ${e.path ?? e.collection ?? e.collectionId ?? ""}${e.where.map((w) => ` ${w.join(" ")}`).join("")}`;
/** What it does there. */
const effect = (e: DataMapEntry): string => `${e.action}${e.arrayField ? ` ${e.arrayField}` : ""}${e.recursive ? " recursive" : ""}`;

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
  it("drafts the reviewed user data map but for the differences the docs explain", async () => {
    expect(settings.databaseId()).toBe(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_ANALYTICS_DATABASE);
    await clearAuth();
    await seedSocial({ nowMs: Date.parse("2026-12-03T09:00:00Z") });
    const draft = await discoverDraft({ ...DEFAULT_SAMPLE, nowMs: Date.now(), knownVersions: ["v1"] });
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
    // What a reviewer adds that the data cannot say: the subtree hold roots.
    expect(drafted.subtreeHoldRoots).toEqual([]);
    expect(reviewed.subtreeHoldRoots).toEqual(["chats/{chatId}"]);

    // Run on the analytics database, it drafts that database's part: the activity log by uid, all of it.
    const analyticsDraft = await inCell(SOCIAL_ANALYTICS, () => discoverDraft({ ...DEFAULT_SAMPLE, nowMs: Date.now(), knownVersions: ["v1", "v3"] }));
    const analytics = RegistrySchema.parse(analyticsDraft.registry);
    expect(differences(analytics.dataMap.user, socialPolicy().forCell(SOCIAL_ANALYTICS).registry.dataMap.user)).toEqual([]);
    expect(patterns(analytics.collections)).toEqual(["events/{}"]);
  });
});
