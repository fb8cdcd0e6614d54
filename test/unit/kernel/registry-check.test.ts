import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../functions/src/kernel/canonical";
import { checkRegistry, collectionsInRules, type LockEntry } from "../../../functions/src/kernel/registry-check";
import { demoCollectionIds } from "../../../functions/src/demo/atlasmart";
import { repoRoot } from "../../helpers/policy";

const v1Text = readFileSync(join(repoRoot, "policies", "versions", "v1.json"), "utf8");
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
    const r = checkRegistry({ files: new Map([["v1.json", v1Text]]), lock, collectionsInUse: inUse() });
    expect(r.errors).toEqual([]);
    expect(r.current?.version).toBe("v1");
  });

  it("an edited published version fails, even for a one-character change", () => {
    const edited = v1Text.replace('"durationDays": 30,', '"durationDays": 31,');
    expect(edited).not.toBe(v1Text);
    const r = checkRegistry({ files: new Map([["v1.json", edited]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/published version v1 was edited/);
  });

  it("a whitespace-only edit of a published version also fails (the bytes are what was reviewed)", () => {
    const r = checkRegistry({ files: new Map([["v1.json", `${v1Text} `]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/was edited/);
  });

  it("a removed published version fails", () => {
    const r = checkRegistry({ files: new Map(), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/is missing/);
  });

  it("an unpublished version file fails until it is published", () => {
    const v2 = v1Text.replace('"version": "v1"', '"version": "v2"');
    const r = checkRegistry({ files: new Map([["v1.json", v1Text], ["v2.json", v2]]), lock, collectionsInUse: inUse() });
    expect(r.errors.join("\n")).toMatch(/v2.json: not published/);
    const published = [...lock, { version: "v2", file: "v2.json", sha256: sha256Hex(v2) }];
    const ok = checkRegistry({ files: new Map([["v1.json", v1Text], ["v2.json", v2]]), lock: published, collectionsInUse: inUse() });
    expect(ok.errors).toEqual([]);
    expect(ok.current?.version).toBe("v2");
  });

  it("a collection used by the rules or the demo schema but in no class fails", () => {
    const r = checkRegistry({ files: new Map([["v1.json", v1Text]]), lock, collectionsInUse: inUse(["wishlists"]) });
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
});
