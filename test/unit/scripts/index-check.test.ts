/**
 * The index coverage check's rule engine (scripts/index-check/rules.ts) on known cases from Firestore's index
 * documentation, positive and negative, and the report's refusal to pass on a log that proves nothing.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { analyse, appSources, compactJson, formatReport, issuerOf, splitByDatabase, type LabelledLog, type LogRecord, type QueryRecord } from "../../../scripts/index-check/report";
import { checkQuery, describeQuery, requirementOf, unusedIndexes, type IndexConfig, type QueryShape } from "../../../functions/src/indexes/rules";
import { segments } from "../../../functions/src/kernel/paths";
import { sweepTargets } from "../../../functions/src/purge/rules/sweep";
import { policyV1, repoRoot } from "../../helpers/policy";

const q = (over: Partial<QueryShape>): QueryShape => ({
  database: "(default)",
  scope: "collection",
  collectionId: "orders",
  where: null,
  orderBy: [],
  aggregations: [],
  ...over,
});
const eq = (field: string) => ({ field, op: "EQUAL" });
const leaf = (field: string, op: string) => ({ field, op });
const and = (...filters: { field: string; op: string }[]) => ({ op: "AND" as const, filters });
const asc = (field: string) => ({ field, direction: "ASCENDING" as const });
const desc = (field: string) => ({ field, direction: "DESCENDING" as const });

const TTL_EVENTS: IndexConfig = {
  fieldOverrides: [{ collectionGroup: "events", fieldPath: "expireAt", ttl: true, indexes: [] }],
};

describe("single-field indexes at collection scope", () => {
  it("exist automatically for equality, range with its own order, descending order and array-contains", () => {
    for (const shape of [
      q({ where: eq("customerId") }),
      q({ where: leaf("total", "GREATER_THAN"), orderBy: [asc("total")] }),
      q({ orderBy: [desc("createdAt")] }),
      q({ where: leaf("tags", "ARRAY_CONTAINS") }),
      q({ where: leaf("state", "NOT_EQUAL") }),
      q({ where: leaf("state", "IN") }),
      q({ where: eq("customerId"), orderBy: [asc("customerId")] }),
    ]) {
      expect(checkQuery({}, shape).status, describeQuery(shape)).toBe("covered");
    }
  });

  it("are gone for a TTL-exempted field: a range query on it fails, and the fix re-enables one ascending index, TTL kept", () => {
    const sweep = q({ collectionId: "events", where: leaf("expireAt", "LESS_THAN_OR_EQUAL"), orderBy: [asc("expireAt")] });
    const v = checkQuery(TTL_EVENTS, sweep);
    expect(v.status).toBe("missing");
    if (v.status !== "missing") return;
    expect(v.why).toContain("events.expireAt (a TTL field) leaves expireAt no single-field index");
    expect(v.proposals).toEqual([
      {
        kind: "fieldOverride",
        replacesExisting: true,
        entry: { collectionGroup: "events", fieldPath: "expireAt", ttl: true, indexes: [{ order: "ASCENDING", queryScope: "COLLECTION" }] },
      },
    ]);
    const fixed: IndexConfig = { fieldOverrides: [v.proposals[0]!.entry as NonNullable<IndexConfig["fieldOverrides"]>[number]] };
    expect(checkQuery(fixed, sweep).status).toBe("covered");
    // An equality on the exempted field fails too; the field next to it is untouched.
    expect(checkQuery(TTL_EVENTS, q({ collectionId: "events", where: eq("expireAt") })).status).toBe("missing");
    expect(checkQuery(TTL_EVENTS, q({ collectionId: "events", where: eq("tenantId") })).status).toBe("covered");
  });

  it("keep only what an override lists: an ascending-only override serves ascending, not descending", () => {
    const config: IndexConfig = {
      fieldOverrides: [{ collectionGroup: "sessions", fieldPath: "expireAt", ttl: true, indexes: [{ order: "ASCENDING", queryScope: "COLLECTION" }] }],
    };
    expect(checkQuery(config, q({ collectionId: "sessions", where: leaf("expireAt", "GREATER_THAN") })).status).toBe("covered");
    const v = checkQuery(config, q({ collectionId: "sessions", orderBy: [desc("expireAt")] }));
    expect(v.status).toBe("missing");
    if (v.status === "missing") {
      expect(v.proposals[0]!.entry).toEqual({
        collectionGroup: "sessions",
        fieldPath: "expireAt",
        ttl: true,
        indexes: [
          { order: "ASCENDING", queryScope: "COLLECTION" },
          { order: "DESCENDING", queryScope: "COLLECTION" },
        ],
      });
    }
  });

  it("follow a map field's override into its subfields, and a `*` override into every field", () => {
    const mapOff: IndexConfig = { fieldOverrides: [{ collectionGroup: "orders", fieldPath: "purgeDecision", indexes: [] }] };
    expect(checkQuery(mapOff, q({ where: eq("purgeDecision.unitKey") })).status).toBe("missing");
    const allOff: IndexConfig = { fieldOverrides: [{ collectionGroup: "orders", fieldPath: "*", indexes: [] }] };
    expect(checkQuery(allOff, q({ where: eq("customerId") })).status).toBe("missing");
    expect(checkQuery(allOff, q({ collectionId: "users", where: eq("customerId") })).status).toBe("covered");
  });
});

describe("collection-group scope", () => {
  const cgEquality = q({ scope: "collection-group", collectionId: "events", where: eq("deletionRequestId"), orderBy: [asc("__name__")] });

  it("has no automatic single-field index: an equality needs a COLLECTION_GROUP override, proposed without dropping the automatic ones", () => {
    const v = checkQuery({}, cgEquality);
    expect(v.status).toBe("missing");
    if (v.status !== "missing") return;
    expect(v.why).toContain("no single-field index at collection-group scope");
    expect(v.proposals).toEqual([
      {
        kind: "fieldOverride",
        replacesExisting: false,
        entry: {
          collectionGroup: "events",
          fieldPath: "deletionRequestId",
          indexes: [
            { order: "ASCENDING", queryScope: "COLLECTION" },
            { order: "DESCENDING", queryScope: "COLLECTION" },
            { arrayConfig: "CONTAINS", queryScope: "COLLECTION" },
            { order: "ASCENDING", queryScope: "COLLECTION_GROUP" },
          ],
        },
      },
    ]);
  });

  it("is served by a COLLECTION_GROUP override, and not by one that is COLLECTION-only or on another collection group", () => {
    const override = (collectionGroup: string, queryScope: "COLLECTION" | "COLLECTION_GROUP"): IndexConfig => ({
      fieldOverrides: [{ collectionGroup, fieldPath: "deletionRequestId", indexes: [{ order: "ASCENDING", queryScope }] }],
    });
    expect(checkQuery(override("events", "COLLECTION_GROUP"), cgEquality).status).toBe("covered");
    expect(checkQuery(override("events", "COLLECTION"), cgEquality).status).toBe("missing");
    expect(checkQuery(override("users", "COLLECTION_GROUP"), cgEquality).status).toBe("missing");
    // A COLLECTION_GROUP-only override also removes the automatic collection-scope index.
    expect(checkQuery(override("events", "COLLECTION_GROUP"), { ...cgEquality, scope: "collection" }).status).toBe("missing");
  });

  it("needs nothing for a scan ordered by document name, and a composite at the right scope for several fields", () => {
    expect(checkQuery({}, q({ scope: "collection-group", collectionId: "messages", orderBy: [asc("__name__")] })).status).toBe("no-index-needed");
    const twoEq = q({ scope: "collection-group", collectionId: "messages", where: and(eq("tenantId"), eq("authorId")) });
    const composite = (queryScope: "COLLECTION" | "COLLECTION_GROUP"): IndexConfig => ({
      indexes: [{ collectionGroup: "messages", queryScope, fields: [{ fieldPath: "authorId", order: "ASCENDING" }, { fieldPath: "tenantId", order: "ASCENDING" }] }],
    });
    expect(checkQuery(composite("COLLECTION_GROUP"), twoEq).status).toBe("covered");
    expect(checkQuery(composite("COLLECTION"), twoEq).status).toBe("missing");
  });
});

describe("equality queries and merging", () => {
  it("serves several equalities by merging single-field indexes (in counts as equality)", () => {
    const v = checkQuery({}, q({ collectionId: "deletionRequests", where: and(eq("uid"), leaf("state", "IN")) }));
    expect(v.status).toBe("covered");
    if (v.status === "covered") expect(v.why).toContain("merging");
  });

  it("merges only what is there: at collection-group scope the uncovered field alone is proposed", () => {
    const config: IndexConfig = {
      fieldOverrides: [{ collectionGroup: "messages", fieldPath: "tenantId", indexes: [{ order: "ASCENDING", queryScope: "COLLECTION_GROUP" }] }],
    };
    const v = checkQuery(config, q({ scope: "collection-group", collectionId: "messages", where: and(eq("tenantId"), eq("authorId")) }));
    expect(v.status).toBe("missing");
    if (v.status === "missing") expect(v.proposals.map((p) => p.entry)).toEqual([expect.objectContaining({ fieldPath: "authorId" })]);
  });

  it("does not merge with array-contains: that needs one composite", () => {
    const v = checkQuery({}, q({ where: and(leaf("tags", "ARRAY_CONTAINS"), eq("state")) }));
    expect(v.status).toBe("missing");
    if (v.status === "missing") {
      expect(v.proposals).toEqual([
        {
          kind: "index",
          entry: { collectionGroup: "orders", queryScope: "COLLECTION", fields: [{ fieldPath: "state", order: "ASCENDING" }, { fieldPath: "tags", arrayConfig: "CONTAINS" }] },
        },
      ]);
    }
  });
});

describe("composite indexes", () => {
  const eqThenRange = q({ collectionId: "deletionRequests", where: and(eq("state"), leaf("dueAt", "LESS_THAN")) });
  const index = (...fields: [string, "ASCENDING" | "DESCENDING"][]): IndexConfig => ({
    indexes: [{ collectionGroup: "deletionRequests", queryScope: "COLLECTION", fields: fields.map(([fieldPath, order]) => ({ fieldPath, order })) }],
  });

  it("an equality followed by a range on another field needs equality field then range field, and proposes exactly that", () => {
    const v = checkQuery({}, eqThenRange);
    expect(v.status).toBe("missing");
    if (v.status === "missing") {
      expect(v.proposals).toEqual([
        {
          kind: "index",
          entry: { collectionGroup: "deletionRequests", queryScope: "COLLECTION", fields: [{ fieldPath: "state", order: "ASCENDING" }, { fieldPath: "dueAt", order: "ASCENDING" }] },
        },
      ]);
    }
    expect(checkQuery(index(["state", "ASCENDING"], ["dueAt", "ASCENDING"]), eqThenRange).status).toBe("covered");
    // The equality field's own direction does not matter.
    expect(checkQuery(index(["state", "DESCENDING"], ["dueAt", "ASCENDING"]), eqThenRange).status).toBe("covered");
  });

  it("is refused in the wrong order or the wrong direction", () => {
    expect(checkQuery(index(["dueAt", "ASCENDING"], ["state", "ASCENDING"]), eqThenRange).status).toBe("missing");
    expect(checkQuery(index(["state", "ASCENDING"], ["dueAt", "DESCENDING"]), eqThenRange).status).toBe("missing");
    // An extra trailing field changes the order within the equality: not the same index.
    expect(checkQuery(index(["state", "ASCENDING"], ["dueAt", "ASCENDING"], ["uid", "ASCENDING"]), eqThenRange).status).toBe("missing");
  });

  it("takes the equality fields in any order", () => {
    const shape = q({ collectionId: "deletionRequests", where: and(eq("uid"), eq("state")), orderBy: [desc("requestedAt")] });
    expect(checkQuery(index(["state", "ASCENDING"], ["uid", "ASCENDING"], ["requestedAt", "DESCENDING"]), shape).status).toBe("covered");
    expect(checkQuery(index(["uid", "ASCENDING"], ["state", "ASCENDING"], ["requestedAt", "DESCENDING"]), shape).status).toBe("covered");
    expect(checkQuery(index(["uid", "ASCENDING"], ["state", "ASCENDING"], ["requestedAt", "ASCENDING"]), shape).status).toBe("missing");
  });

  it("follows Firestore's implicit order: inequality fields after the explicit orders, by name, in the last order's direction", () => {
    expect(requirementOf([leaf("b", "GREATER_THAN"), leaf("a", "LESS_THAN")], [])).toEqual({
      equality: [],
      contains: [],
      sort: [asc("a"), asc("b")],
    });
    expect(requirementOf([leaf("y", "GREATER_THAN")], [desc("x")])).toEqual({ equality: [], contains: [], sort: [desc("x"), desc("y")] });
    expect(requirementOf([eq("s"), leaf("__name__", "GREATER_THAN")], [asc("__name__")])).toEqual({ equality: ["s"], contains: [], sort: [] });
    // A range plus an order on another field: (order field, range field).
    const v = checkQuery({}, q({ where: leaf("total", "GREATER_THAN"), orderBy: [asc("createdAt")] }));
    expect(v.status === "missing" && v.proposals[0]!.entry).toEqual({
      collectionGroup: "orders",
      queryScope: "COLLECTION",
      fields: [{ fieldPath: "createdAt", order: "ASCENDING" }, { fieldPath: "total", order: "ASCENDING" }],
    });
  });

  it("treats != and not-in as inequalities: with an equality on another field they need a composite", () => {
    expect(checkQuery({}, q({ where: and(eq("customerId"), leaf("state", "NOT_IN")) })).status).toBe("missing");
    expect(checkQuery({}, q({ where: and(eq("customerId"), leaf("state", "NOT_EQUAL")) })).status).toBe("missing");
  });
});

describe("document names, kindless queries, aggregations and OR", () => {
  it("needs no index for __name__ filters and orders only, in any scope", () => {
    const nameRange = and(leaf("__name__", "GREATER_THAN_OR_EQUAL"), leaf("__name__", "LESS_THAN"));
    for (const scope of ["collection", "collection-group"] as const) {
      expect(checkQuery({}, q({ scope, where: nameRange, orderBy: [asc("__name__")] })).status).toBe("no-index-needed");
    }
    expect(checkQuery({}, q({ scope: "kindless", collectionId: null, where: nameRange })).status).toBe("no-index-needed");
    expect(checkQuery({}, q({ scope: "kindless", collectionId: null })).status).toBe("no-index-needed");
  });

  it("refuses a kindless query on a field", () => {
    expect(checkQuery({}, q({ scope: "kindless", collectionId: null, where: eq("tenantId") })).status).toBe("unsupported");
  });

  it("asks of count() what it asks of the same query", () => {
    const base = q({ scope: "collection-group", collectionId: "events", where: eq("tenantId") });
    expect(checkQuery({}, { ...base, aggregations: ["count"] }).status).toBe("missing");
    expect(checkQuery({}, { ...base, where: null, aggregations: ["count"] }).status).toBe("no-index-needed");
    expect(describeQuery({ ...base, aggregations: ["count"] })).toBe('collectionGroup("events").where(tenantId ==).count()');
  });

  it("checks each disjunct of an OR on its own", () => {
    const shape = q({ where: { op: "OR", filters: [eq("a"), and(eq("b"), leaf("c", "GREATER_THAN"))] } });
    const v = checkQuery({}, shape);
    expect(v.status).toBe("missing");
    if (v.status === "missing") expect(v.proposals).toHaveLength(1);
    expect(checkQuery({}, q({ where: { op: "OR", filters: [eq("a"), eq("b")] } })).status).toBe("covered");
  });
});

describe("unused indexes", () => {
  it("lists composites and override indexes no query used, never a TTL exemption", () => {
    const config: IndexConfig = {
      indexes: [
        { collectionGroup: "orders", queryScope: "COLLECTION", fields: [{ fieldPath: "customerId", order: "ASCENDING" }, { fieldPath: "createdAt", order: "DESCENDING" }] },
        { collectionGroup: "orders", queryScope: "COLLECTION", fields: [{ fieldPath: "tenantId", order: "ASCENDING" }, { fieldPath: "createdAt", order: "DESCENDING" }] },
      ],
      fieldOverrides: [
        ...TTL_EVENTS.fieldOverrides!,
        { collectionGroup: "users", fieldPath: "deletionRequestId", indexes: [{ order: "ASCENDING", queryScope: "COLLECTION" }, { order: "ASCENDING", queryScope: "COLLECTION_GROUP" }] },
      ],
    };
    const used = [
      checkQuery(config, q({ where: eq("customerId"), orderBy: [desc("createdAt")] })),
      checkQuery(config, q({ scope: "collection-group", collectionId: "users", where: eq("deletionRequestId") })),
    ].flatMap((v) => (v.status === "covered" ? v.by : []));
    expect(unusedIndexes(config, used)).toEqual([
      { kind: "index", entry: config.indexes![1] },
      { kind: "fieldOverride", entry: config.fieldOverrides![1], unusedIndexes: [{ order: "ASCENDING", queryScope: "COLLECTION" }] },
    ]);
  });
});

describe("the report", () => {
  const install = (process: string, pid = 1): LogRecord => ({ kind: "install", process, pid, sdk: "node_modules/@google-cloud/firestore" });
  const query = (process: string, file: string, shape: Partial<QueryShape> = {}): QueryRecord => ({
    kind: "query",
    process,
    site: { file, line: 1, fn: "f" },
    ...q(shape),
  });
  const healthy = (extra: LogRecord[] = []): LabelledLog[] => [
    {
      label: "emulator",
      badLines: [],
      records: [install("vitest"), install("cli", 2), query("vitest", "functions/src/holds/service.ts"), query("cli", "functions/lib/infra/audit-scan.js"), ...extra],
    },
    { label: "functions", badLines: [], records: [install("functions-worker", 3), query("functions-worker", "functions/lib/infra/requests.js")] },
  ];

  it("fails on an empty log: an empty log proves nothing", () => {
    const r = analyse([], {});
    expect(r.recordingProblems.join("\n")).toContain("no query issued by the product's code");
    expect(r.recordingProblems.join("\n")).toContain(".query-log/functions/ is missing");
    expect(formatReport(r)).toContain("FAIL the query log cannot vouch for the indexes");
  });

  it("fails when a required source never recorded, or recorded only test queries, or a recorder failed", () => {
    const onlyTests: LabelledLog[] = [
      { label: "emulator", badLines: [], records: [install("vitest"), install("cli", 2), query("vitest", "test/integration/x.test.ts"), query("cli", "functions/lib/cli/main.js")] },
      { label: "functions", badLines: [], records: [query("vitest", "functions/src/holds/service.ts")] },
    ];
    const problems = analyse(onlyTests, {}).recordingProblems.join("\n");
    expect(problems).toContain("the in-process emulator suites recorded no query of the product's code");
    expect(problems).toContain("no functions-worker process installed the recorder");
    const broken = analyse(healthy([{ kind: "error", process: "vitest", pid: 1, error: "the query recorder could not be installed" }]), {});
    expect(broken.recordingProblems).toEqual([".query-log/emulator: vitest (pid 1): the query recorder could not be installed"]);
    expect(analyse(healthy(), {}).recordingProblems).toEqual([]);
  });

  it("leaves out queries the tests issue themselves, checks everything else, and prints the JSON to add", () => {
    const r = analyse(
      healthy([
        query("vitest", "test/integration/helpers.ts", { scope: "collection-group", collectionId: "orders", where: eq("x") }),
        query("vitest", "functions/src/requests/service.ts", { scope: "collection-group", collectionId: "events", where: eq("deletionRequestId") }),
      ]),
      TTL_EVENTS,
    );
    expect(r.testOnlyShapes).toBe(1);
    expect(r.failures.map((f) => describeQuery(f.shape))).toEqual(['collectionGroup("events").where(deletionRequestId ==)']);
    const text = formatReport(r);
    expect(text).toContain('add to "fieldOverrides" in firestore.indexes.json');
    expect(text).toContain('{ "order": "ASCENDING", "queryScope": "COLLECTION_GROUP" }');
    expect(text).toContain("production Firestore refuses them with FAILED_PRECONDITION");
    expect(text).not.toContain("PASS");
  });

  it("holds an example app's database to the app's own index file, and the rest to the product's", () => {
    const app = { database: "social-example", indexFile: "examples/social/firestore.indexes.json", suite: "test/integration/examples/social.test.ts" };
    const comments = { scope: "collection-group" as const, collectionId: "comments", where: eq("authorId") };
    const logs = healthy([
      query("vitest", "functions/src/plan/discovery.ts", { database: "social-example", ...comments }),
      { kind: "error", process: "vitest", pid: 1, error: "boom" },
    ]);
    const { product, apps } = splitByDatabase(logs, [app.database]);
    const appOverride: IndexConfig = { fieldOverrides: [{ collectionGroup: "comments", fieldPath: "authorId", indexes: [{ order: "ASCENDING", queryScope: "COLLECTION_GROUP" }] }] };
    // Unsplit, the app's query is judged against the product's file (which has no such override) and fails.
    expect(analyse(logs, TTL_EVENTS).failures.map((f) => f.databases)).toEqual([["social-example"]]);
    const p = analyse(product, TTL_EVENTS);
    expect(p.failures).toEqual([]);
    expect(p.recordingProblems).toEqual([".query-log/emulator: vitest (pid 1): boom"]);
    const a = analyse(apps.get(app.database)!, appOverride, appSources(app));
    expect(a.recordingProblems).toEqual([]);
    expect(a.findings.map((f) => describeQuery(f.shape))).toEqual(['collectionGroup("comments").where(authorId ==)']);
    expect(a.failures).toEqual([]);
    expect(analyse(apps.get(app.database)!, {}, appSources(app)).failures).toHaveLength(1);
    // An app part whose suite recorded nothing proves nothing.
    const empty = analyse(splitByDatabase(healthy(), [app.database]).apps.get(app.database)!, appOverride, appSources(app));
    expect(empty.recordingProblems.join("\n")).toContain("test/integration/examples/social.test.ts (the engine on database social-example) recorded no query");
  });

  it("sorts issuers: product code, the CLI and unattributed calls count; test code does not", () => {
    expect(issuerOf({ file: "functions/src/requests/service.ts", line: 1, fn: "" })).toBe("functions");
    expect(issuerOf({ file: "functions/lib/infra/requests.js", line: 1, fn: "" })).toBe("functions");
    expect(issuerOf({ file: "bin/retention.js", line: 1, fn: "" })).toBe("cli");
    expect(issuerOf({ file: "test/helpers/emulator.ts", line: 1, fn: "" })).toBe("test");
    expect(issuerOf(null)).toBe("unattributed");
  });

  it("prints JSON the way firestore.indexes.json reads, and the repository's file parses as an index config", () => {
    expect(compactJson({ a: [{ b: 1, c: "x" }] })).toBe('{\n  "a": [\n    { "b": 1, "c": "x" }\n  ]\n}');
    const config = JSON.parse(readFileSync(join(repoRoot, "firestore.indexes.json"), "utf8")) as IndexConfig;
    expect(Array.isArray(config.indexes) && Array.isArray(config.fieldOverrides)).toBe(true);
  });
});

describe("the repository's firestore.indexes.json", () => {
  // The same shapes the emulator suites record (the full check runs in npm test); pinned here so that a change to
  // the index file that drops one fails in seconds, with the query named.
  const config = (): IndexConfig => JSON.parse(readFileSync(join(repoRoot, "firestore.indexes.json"), "utf8")) as IndexConfig;
  const expectServed = (shape: QueryShape) => expect(checkQuery(config(), shape).status, describeQuery(shape)).toBe("covered");

  it("serves cancel's restore: deletionRequestId equality over the collection group of every governed collection", () => {
    const groups = [...new Set(policyV1().registry.collections.map((r) => segments(r.pattern).slice(-2)[0]!))];
    expect(groups).toEqual(expect.arrayContaining(["auditRecords", "events", "tokens", "messages"]));
    for (const collectionId of groups) {
      expectServed(q({ scope: "collection-group", collectionId, where: eq("deletionRequestId"), orderBy: [asc("__name__")] }));
    }
  });

  it("serves the policy sweep's range query on every swept collection, TTL collections included", () => {
    const targets = sweepTargets(policyV1());
    expect(targets).toContainEqual({ collection: "events", field: "expireAt" });
    for (const t of targets) {
      expectServed(q({ collectionId: t.collection, where: leaf(t.field, "LESS_THAN_OR_EQUAL"), orderBy: [asc(t.field)] }));
    }
  });

  it("serves the dashboard's newest stored audit report", () => {
    expectServed(q({ collectionId: "retentionReports", where: eq("kind"), orderBy: [desc("createdAt")] }));
  });
});

describe("the recorder's request shapes and call sites", () => {
  const load = createRequire(import.meta.url);
  const recorder = load("../../../scripts/index-check/recorder.cjs") as {
    shapeOfRequest(method: string, request: unknown): QueryShape | null;
    framesOf(callSites: { getFileName(): string | null; getLineNumber(): number | null; getFunctionName(): string | null; getMethodName(): string | null }[]): { file: string; fn: string }[];
    REPO_ROOT: string;
  };
  const parent = "projects/demo/databases/purge-tests/documents";

  it("reads scope, filters (no values), orders and aggregations from the proto Firestore receives", () => {
    expect(
      recorder.shapeOfRequest("runQuery", {
        parent: `${parent}/tenants/t1`,
        structuredQuery: {
          from: [{ collectionId: "orders" }],
          where: {
            compositeFilter: {
              op: "AND",
              filters: [
                { fieldFilter: { field: { fieldPath: "customerId" }, op: "EQUAL", value: { stringValue: "u-1" } } },
                { unaryFilter: { field: { fieldPath: "note" }, op: "IS_NOT_NULL" } },
              ],
            },
          },
          orderBy: [{ field: { fieldPath: "note" }, direction: "DESCENDING" }],
          limit: { value: 3 },
        },
      }),
    ).toEqual({
      database: "purge-tests",
      scope: "collection",
      collectionId: "orders",
      where: { op: "AND", filters: [eq("customerId"), leaf("note", "IS_NOT_NULL")] },
      orderBy: [desc("note")],
      aggregations: [],
    });
    expect(
      recorder.shapeOfRequest("runAggregationQuery", {
        parent,
        structuredAggregationQuery: { structuredQuery: { from: [{ collectionId: "messages", allDescendants: true }] }, aggregations: [{ alias: "c", count: {} }] },
      }),
    ).toMatchObject({ scope: "collection-group", collectionId: "messages", aggregations: ["count"], where: null });
    expect(recorder.shapeOfRequest("runQuery", { parent, structuredQuery: { from: [{ allDescendants: true }] } })).toMatchObject({ scope: "kindless", collectionId: null });
    expect(recorder.shapeOfRequest("batchGetDocuments", { parent })).toBeNull();
  });

  it("names the first frame outside dependencies, relative to the repository", () => {
    const frame = (file: string, fn = "") => ({ getFileName: () => file, getLineNumber: () => 7, getFunctionName: () => fn, getMethodName: () => null });
    const root = recorder.REPO_ROOT;
    const frames = recorder.framesOf([
      frame("node:internal/process/task_queues"),
      frame(join(root, "node_modules", "@google-cloud", "firestore", "build", "src", "reference", "query.js"), "get"),
      frame(join(root, "scripts", "index-check", "recorder.cjs"), "recordedEntry"),
      frame(`file://${join(root, "functions", "src", "holds", "service.ts")}`, "activeHolds"),
      frame(join(root, "test", "integration", "x.test.ts")),
    ]);
    expect(frames.map((f) => [f.file, f.fn])).toEqual([
      ["functions/src/holds/service.ts", "activeHolds"],
      ["test/integration/x.test.ts", ""],
    ]);
  });
});
