import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../functions/src/kernel/canonical";
import { checkRegistry, collectionsInRules, unflaggableUnderHolds, type LockEntry } from "../../../functions/src/kernel/registry-check";
import { PolicyIndex } from "../../../functions/src/kernel/policy";
import { demoCollectionIds } from "../../../examples/atlasmart/data";
import { loadVersion, repoRoot, TRACKING_PATTERN, withOrderTracking } from "../../helpers/policy";

const lock = JSON.parse(readFileSync(join(repoRoot, "policies", "published.lock.json"), "utf8")) as LockEntry[];
const versionText = (file: string) => readFileSync(join(repoRoot, "policies", "versions", file), "utf8");
const v1Text = versionText("v1.json");
const v2Text = versionText("v2.json");
/** The version the functions enforce, and the name of the one after it (not published yet). */
const current = lock[lock.length - 1]!;
const currentText = versionText(current.file);
const next = `v${lock.length + 1}`;
/** Every published version file, as the build reads them. */
const published = (): Map<string, string> => new Map(lock.map((e) => [e.file, versionText(e.file)]));
/** The tenant subtree: the subtree hold root the current version's scope record gives. */
const SUBTREE_PATTERN = "tenants/{tenantId}";
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
    expect(r.current?.version).toBe(current.version);
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
    const unpublished = currentText.replace(`"version": "${current.version}"`, `"version": "${next}"`);
    const file = `${next}.json`;
    const r = checkRegistry({ files: new Map([...published(), [file, unpublished]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(new RegExp(`${next}.json: not published`));
    const withNext = [...lock, { version: next, file, sha256: sha256Hex(unpublished) }];
    const ok = checkRegistry({ files: new Map([...published(), [file, unpublished]]), lock: withNext, collectionsInUse: inUse() });
    expect(ok.errors).toEqual([]);
    expect(ok.current?.version).toBe(next);
  });

  it("the version the functions enforce must say who the data belongs to", () => {
    const noSubjects = v2Text.replace('"version": "v2"', `"version": "${next}"`);
    const file = `${next}.json`;
    const withNext = [...lock, { version: next, file, sha256: sha256Hex(noSubjects) }];
    // v2 predates the processors' outbox and the access exports, which the rules close as part of the control plane
    // since v6 and v7.
    const used = inUse();
    used.delete("processorNotices");
    used.delete("dataExports");
    const r = checkRegistry({ files: new Map([...published(), [file, noSubjects]]), lock: withNext, collectionsInUse: used });
    expect(r.errors).toEqual([`${file}: the version the functions enforce must declare subjects (who the data belongs to)`]);
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
    const text = JSON.stringify({ ...denied, version: next });
    const r = checkRegistry({
      files: new Map([...published(), [`${next}.json`, text]]),
      lock: [...lock, { version: next, file: `${next}.json`, sha256: sha256Hex(text) }],
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
