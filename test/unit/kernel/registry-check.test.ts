import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../functions/src/kernel/canonical";
import { checkRegistry, collectionsInRules, unflaggableUnderHolds, type LockEntry } from "../../../functions/src/kernel/registry-check";
import { PolicyIndex } from "../../../functions/src/kernel/policy";
import { demoCollectionIds } from "../../../examples/atlasmart/data";
import { loadVersion, repoRoot, TRACKING_PATTERN, withOrderTracking } from "../../helpers/policy";

const v1Text = readFileSync(join(repoRoot, "policies", "versions", "v1.json"), "utf8");
const v2Text = readFileSync(join(repoRoot, "policies", "versions", "v2.json"), "utf8");
const v3Text = readFileSync(join(repoRoot, "policies", "versions", "v3.json"), "utf8");
const v4Text = readFileSync(join(repoRoot, "policies", "versions", "v4.json"), "utf8");
/** Every published version file, as the build reads them. */
const published = (): Map<string, string> => new Map([["v1.json", v1Text], ["v2.json", v2Text], ["v3.json", v3Text], ["v4.json", v4Text]]);
/** The tenant subtree: the subtree hold root the current version's scope record gives. */
const SUBTREE_PATTERN = "tenants/{tenantId}";
const lock = JSON.parse(readFileSync(join(repoRoot, "policies", "published.lock.json"), "utf8")) as LockEntry[];
const rulesText = readFileSync(join(repoRoot, "firestore.rules"), "utf8");

function inUse(extra: string[] = []): Map<string, string> {
  const m = new Map<string, string>();
  for (const c of collectionsInRules(rulesText)) m.set(c, "firestore.rules");
  for (const c of demoCollectionIds()) m.set(c, "demo");
  for (const c of extra) m.set(c, "test");
  return m;
}

describe("policy registry checks", () => {
  it("the repository's registry, lock, rules and demo schema pass", () => {
    const r = checkRegistry({ files: published(), lock, collectionsInUse: inUse() });
    expect(r.errors).toEqual([]);
    expect(r.current?.version).toBe("v4");
    expect(new PolicyIndex(r.current!).subtreeHoldRoots()).toEqual([SUBTREE_PATTERN]);
  });

  it("an edited published version fails, even for a one-character change", () => {
    const edited = v1Text.replace('"durationDays": 30,', '"durationDays": 31,');
    expect(edited).not.toBe(v1Text);
    const r = checkRegistry({ files: new Map([...published(), ["v1.json", edited]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/published version v1 was edited/);
  });

  it("a whitespace-only edit of a published version also fails (the bytes are what was reviewed)", () => {
    const r = checkRegistry({ files: new Map([...published(), ["v1.json", `${v1Text} `]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/was edited/);
  });

  it("a removed published version fails", () => {
    const r = checkRegistry({ files: new Map(), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/is missing/);
  });

  it("an unpublished version file fails until it is published", () => {
    const v5 = v3Text.replace('"version": "v3"', '"version": "v5"');
    const r = checkRegistry({ files: new Map([...published(), ["v5.json", v5]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/v5.json: not published/);
    const withV5 = [...lock, { version: "v5", file: "v5.json", sha256: sha256Hex(v5) }];
    const ok = checkRegistry({ files: new Map([...published(), ["v5.json", v5]]), lock: withV5, collectionsInUse: inUse() });
    expect(ok.errors).toEqual([]);
    expect(ok.current?.version).toBe("v5");
  });

  it("the version the functions enforce must say who the data belongs to", () => {
    const v5 = v2Text.replace('"version": "v2"', '"version": "v5"');
    const withV5 = [...lock, { version: "v5", file: "v5.json", sha256: sha256Hex(v5) }];
    const r = checkRegistry({ files: new Map([...published(), ["v5.json", v5]]), lock: withV5, collectionsInUse: inUse() });
    expect(r.errors).toEqual(["v5.json: the version the functions enforce must declare subjects (who the data belongs to)"]);
  });

  it("a collection used by the rules or the demo schema but in no class fails", () => {
    const r = checkRegistry({ files: published(), lock, collectionsInUse: inUse(["wishlists"]) });
    expect(r.errors).toContain("collection wishlists (used by test) is in no retention class");
  });

  it("reads collection ids out of rules, skipping the databases preamble", () => {
    const ids = collectionsInRules("match /databases/{database}/documents { match /wishlists/{id} { } match /a/{b}/c/{d} {} }");
    expect(ids).toEqual(["a", "wishlists"]);
  });

  it("a schema violation is reported with its path", () => {
    const bad = v1Text.replace('"mechanism": "ttl"', '"mechanism": "magic"');
    const r = checkRegistry({ files: new Map([["v1.json", bad]]), lock: [], collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/classes\.0\.mechanism/);
  });

  it("refuses a class a hold can cover but not flag: one that denies holds under a holdable document", () => {
    // Tracking events under an order (which holds may target) that deny holds: a hold on the order would cover
    // them by path and leave their TTL value on, for Firestore's sweeper.
    const denied = withOrderTracking(loadVersion("v3"), "deny");
    expect(unflaggableUnderHolds(denied, [SUBTREE_PATTERN])).toEqual([
      `${TRACKING_PATTERN}: class order-tracking-30d denies holds, but a hold on tenants/{tenantId} covers its documents and could not flag them (clear their TTL value); give it a class that allows holds, or move it out from under a holdable document`,
    ]);
    // Published as the current version, the build's check refuses it.
    const text = JSON.stringify({ ...denied, version: "v5" });
    const r = checkRegistry({
      files: new Map([...published(), ["v5.json", text]]),
      lock: [...lock, { version: "v5", file: "v5.json", sha256: sha256Hex(text) }],
      collectionsInUse: inUse(),
    });
    expect(r.errors.join("\n")).toMatch(/order-tracking-30d denies holds/);
    // Allowing holds, it passes; sessions' tokens deny holds under sessions, which deny them too: nothing covers them.
    expect(unflaggableUnderHolds(withOrderTracking(loadVersion("v2"), "allow"), [SUBTREE_PATTERN])).toEqual([]);
    expect(unflaggableUnderHolds(loadVersion("v2"), [SUBTREE_PATTERN])).toEqual([]);
  });

  it("a pattern a hold targets whatever its class (the tenant subtree) counts as holdable", () => {
    const v2 = loadVersion("v2");
    const tenantDenies = { ...v2, classes: v2.classes.map((c) => (c.id === "tenant-account" || c.id === "user-delete" ? { ...c, holdBehaviour: "deny" as const } : c)) };
    // Messages lie under orders, which allow holds; users only under the tenant, which denies them.
    const patterns = (errors: string[]) => errors.map((e) => e.split(":")[0]);
    expect(patterns(unflaggableUnderHolds(tenantDenies, []))).toEqual(["tenants/{tenantId}/orders/{orderId}/messages/{messageId}"]);
    expect(patterns(unflaggableUnderHolds(tenantDenies, [SUBTREE_PATTERN]))).toEqual(["tenants/{tenantId}/users/{uid}", "tenants/{tenantId}/orders/{orderId}/messages/{messageId}"]);
  });
});
