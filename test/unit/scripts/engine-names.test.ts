import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RegistrySchema, type Registry } from "../../../functions/src/kernel/policy-schema";
import { engineSources, namesIn, schemaNames } from "../../../scripts/engine-names";
import { loadCurrent, repoRoot } from "../../helpers/policy";

/** Every example's current registry: the top-level one (the default example's) and each examples/<app>/policies. */
function exampleRegistries(): [string, Registry][] {
  const out: [string, Registry][] = [["policies", loadCurrent()]];
  const examples = join(repoRoot, "examples");
  for (const app of existsSync(examples) ? readdirSync(examples) : []) {
    const lockPath = join(examples, app, "policies", "published.lock.json");
    if (!existsSync(lockPath)) continue;
    const lock = JSON.parse(readFileSync(lockPath, "utf8")) as { file: string }[];
    const file = join(examples, app, "policies", "versions", lock[lock.length - 1]!.file);
    out.push([`examples/${app}`, RegistrySchema.parse(JSON.parse(readFileSync(file, "utf8")))]);
  }
  return out;
}

describe("the engine knows no example's schema", () => {
  it("no collection, path or field of an example's registry appears anywhere in functions/src", () => {
    const sources = engineSources(repoRoot);
    expect(sources.size).toBeGreaterThan(100);
    for (const [where, registry] of exampleRegistries()) {
      const names = schemaNames(registry);
      expect(names.size, where).toBeGreaterThan(3);
      const hits = namesIn(sources, names).map((h) => `${h.file}:${h.line} names ${h.name} (${where}): ${h.text}`);
      expect(hits, where).toEqual([]);
    }
  });

  it("finds a demo name planted in engine code, quoted or as a path segment, and not inside another word", () => {
    const names = schemaNames(loadCurrent());
    expect(names).toContain("userDirectory");
    expect(names).toContain("customerName");
    const planted = new Map([
      ["functions/src/x.ts", 'const a = db().collection("userDirectory");\nconst b = `tenants/${id}/orders`;\nconst c = "myorders";\n// customerNames are fine'],
    ]);
    expect(namesIn(planted, names).map((h) => `${h.line}:${h.name}`)).toEqual(["1:userDirectory", "2:orders", "2:tenants"]);
  });
});
