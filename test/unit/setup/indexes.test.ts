/**
 * The indexes `retention setup` writes (functions/src/setup/rules/indexes.ts), held to the index files this repository
 * deploys and the index coverage check proves against every query the suites send: the control plane's own entries
 * are exactly the product's, and each example's index file serves every query the engine builds from its registry.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkQuery, describeQuery, type IndexConfig } from "../../../functions/src/indexes/rules";
import { PolicyIndex, PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import type { Registry } from "../../../functions/src/kernel/policy-schema";
import { CONTROL_PLANE_INDEXES, CONTROL_PLANE_OVERRIDES, registryQueries, requiredIndexes } from "../../../functions/src/setup/rules/indexes";
import { SOCIAL_INDEXES_FILE, socialRegistry } from "../../../examples/social/registry";

const repo = join(__dirname, "..", "..", "..");
const read = (file: string): IndexConfig => JSON.parse(readFileSync(file, "utf8")) as IndexConfig;
const atlasmart = (): Registry => (JSON.parse(readFileSync(join(repo, "functions", "src", "generated", "registry.json"), "utf8")) as { current: Registry }).current;

describe("the indexes setup writes", () => {
  it("the control plane's are exactly the product's index file's entries on control-plane collections", () => {
    const product = read(join(repo, "firestore.indexes.json"));
    // The registry's control-plane collections, and the access exports and their parts, which it does not list (their
    // retention is their own TTL setting, not a class: docs/decisions/0040-legal-clocks-and-access.md).
    const controlPlane = new Set([...atlasmart().controlPlane.map((c) => c.collection), "dataExports", "exportParts"]);
    const key = (x: unknown) => JSON.stringify(x);
    const productIndexes = (product.indexes ?? []).filter((i) => controlPlane.has(i.collectionGroup)).map((i) => key({ ...i, queryScope: i.queryScope ?? "COLLECTION" }));
    expect([...CONTROL_PLANE_INDEXES].map(key).sort()).toEqual(productIndexes.sort());
    const productOverrides = (product.fieldOverrides ?? []).filter((f) => controlPlane.has(f.collectionGroup));
    for (const o of CONTROL_PLANE_OVERRIDES) expect(productOverrides, `${o.collectionGroup}.${o.fieldPath}`).toContainEqual(expect.objectContaining({ collectionGroup: o.collectionGroup, fieldPath: o.fieldPath, ...(o.ttl ? { ttl: true } : {}) }));
  });

  for (const [name, registry, file] of [
    ["atlasmart", atlasmart, join(repo, "firestore.indexes.json")],
    ["social", socialRegistry, SOCIAL_INDEXES_FILE],
  ] as const) {
    it(`${name}: its index file serves every query the engine builds from its registry, and so does what setup would write`, () => {
      // The index file is the primary database's: its part of the registry (kernel/policy.ts#forCell).
      const policy = new PolicyIndex(registry()).forCell(PRIMARY_CELL);
      const deployed = read(file);
      const shapes = registryQueries(policy);
      expect(shapes.length).toBeGreaterThan(0);
      const notServed = (config: IndexConfig) => shapes.filter((q) => checkQuery(config, q.shape).status === "missing").map((q) => `${describeQuery(q.shape)} (${q.why})`);
      expect(notServed(deployed)).toEqual([]);
      expect(notServed(requiredIndexes(policy))).toEqual([]);
    });
  }
});
