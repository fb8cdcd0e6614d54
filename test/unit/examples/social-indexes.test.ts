// The social example's firestore.indexes.json serves every query the engine makes of its data: each data-map
// query as discovery pages it (platform/governed-doc.ts#pageGoverned: ordered by document name), and cancel's
// restore (deletionRequestId over the collection group of every governed collection). The full check, on the
// queries the example's emulator suite records, runs in npm test (scripts/index-check/check.ts, database
// social-example).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE, SOCIAL_ANALYTICS_INDEXES_FILE, SOCIAL_INDEXES_FILE, socialPolicy } from "../../../examples/social/registry";
import { segments } from "../../../functions/src/kernel/paths";
import type { DataMapEntry } from "../../../functions/src/kernel/policy-schema";
import { checkQuery, describeQuery, type IndexConfig, type QueryShape } from "../../../functions/src/indexes/rules";
import { repoRoot } from "../../helpers/policy";

const read = (file: string): IndexConfig => JSON.parse(readFileSync(file, "utf8")) as IndexConfig;
const OPS = { "==": "EQUAL", "array-contains": "ARRAY_CONTAINS" } as const;

/** The query a `query` or `collectionGroup` entry stands for, paged by document name as discovery pages it (a storage entry lists objects: no query). */
function shapeOf(e: DataMapEntry, database = "social-example"): QueryShape | null {
  if (e.kind === "doc" || e.kind === "storage") return null;
  const filters = e.where.map(([field, op]) => ({ field, op: OPS[op] }));
  return {
    database,
    scope: e.kind === "collectionGroup" ? "collection-group" : "collection",
    collectionId: e.kind === "collectionGroup" ? e.collectionId! : segments(e.collection!).at(-1)!,
    where: filters.length === 1 ? filters[0]! : { op: "AND", filters },
    orderBy: [{ field: "__name__", direction: "ASCENDING" }],
    aggregations: [],
  };
}

/** Each database's part of the registry (kernel/policy.ts#forCell): the primary's, or analytics'. */
const cellOf = (cell: string) => socialPolicy().forCell(cell).registry;
const dataMapShapes = (cell = "primary", database = "social-example"): QueryShape[] =>
  cellOf(cell)
    .dataMap.user.map((e) => shapeOf(e, database))
    .filter((s): s is QueryShape => s !== null);
const restoreShapes = (cell = "primary", database = "social-example"): QueryShape[] =>
  [...new Set(cellOf(cell).collections.map((r) => segments(r.pattern).at(-2)!))].map((collectionId) => ({
    database,
    scope: "collection-group",
    collectionId,
    where: { field: "deletionRequestId", op: "EQUAL" },
    orderBy: [{ field: "__name__", direction: "ASCENDING" }],
    aggregations: [],
  }));

describe("the social example's indexes", () => {
  it("serve every data-map query and cancel's restore over every governed collection", () => {
    const config = read(SOCIAL_INDEXES_FILE);
    const shapes = [...dataMapShapes(), ...restoreShapes()];
    expect(shapes.map(describeQuery)).toEqual(
      expect.arrayContaining([
        'collection("…/chats").where(memberIds array-contains).orderBy(__name__)',
        'collectionGroup("comments").where(authorId ==).orderBy(__name__)',
        'collectionGroup("messages").where(senderId ==).orderBy(__name__)',
        'collectionGroup("following").where(deletionRequestId ==).orderBy(__name__)',
      ]),
    );
    for (const s of shapes) expect(checkQuery(config, s).status, describeQuery(s)).toBe("covered");
  });

  it("are needed: the product's own index file does not serve the example's collection-group queries", () => {
    const product = read(join(repoRoot, "firestore.indexes.json"));
    const missing = dataMapShapes()
      .filter((s) => checkQuery(product, s).status === "missing")
      .map(describeQuery);
    expect(missing.sort()).toEqual([
      'collectionGroup("comments").where(authorId ==).orderBy(__name__)',
      'collectionGroup("following").where(followeeId ==).orderBy(__name__)',
      'collectionGroup("messages").where(senderId ==).orderBy(__name__)',
    ]);
  });

  it("carry the product's control-plane indexes, as every app that deploys the engine needs them", () => {
    const product = read(join(repoRoot, "firestore.indexes.json"));
    const social = read(SOCIAL_INDEXES_FILE);
    const controlPlane = new Set(socialPolicy().registry.controlPlane.map((c) => c.collection));
    const cp = (c: IndexConfig) => ({
      indexes: (c.indexes ?? []).filter((i) => controlPlane.has(i.collectionGroup)),
      fieldOverrides: (c.fieldOverrides ?? []).filter((f) => controlPlane.has(f.collectionGroup)),
    });
    expect(cp(product).indexes.length).toBeGreaterThan(0);
    expect(cp(social)).toEqual(cp(product));
    // The analytics database runs the engine too (its own requests, holds, evidence): the same control plane.
    expect(cp(read(SOCIAL_ANALYTICS_INDEXES_FILE))).toEqual(cp(product));
  });

  it("the analytics database's file serves its part of the data map, its restore and the TTL sweep of its events", () => {
    const config = read(SOCIAL_ANALYTICS_INDEXES_FILE);
    const shapes = [...dataMapShapes(SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE), ...restoreShapes(SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE)];
    expect(shapes.map(describeQuery).sort()).toEqual(['collection("…/events").where(uid ==).orderBy(__name__)', 'collectionGroup("events").where(deletionRequestId ==).orderBy(__name__)'].sort());
    for (const s of shapes) expect(checkQuery(config, s).status, describeQuery(s)).toBe("covered");
    const ttl = (config.fieldOverrides ?? []).find((f) => f.collectionGroup === "events" && f.fieldPath === "expireAt");
    expect(ttl).toMatchObject({ ttl: true, indexes: [{ order: "ASCENDING", queryScope: "COLLECTION" }] });
  });
});
