// Several governed databases in the registry (docs/decisions/0036-several-databases.md): the schema's refusals,
// and each database's view of the registry (kernel/policy.ts#forCell), which is what the engine runs against there.
import { describe, expect, it } from "vitest";
import { PolicyIndex, PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { RegistrySchema } from "../../../functions/src/kernel/policy-schema";
import { fingerprintKey, retentionFingerprints } from "../../../functions/src/kernel/policy-fingerprint";
import { loadVersion } from "../../helpers/policy";

/** AtlasMart's registry with a second database, `metrics`, under each tenant's record, and one of a user's entries in it. */
function withMetrics(over: (r: Record<string, unknown>) => Record<string, unknown> = (r) => r): unknown {
  const base = loadVersion("v3");
  return over({
    ...base,
    databases: [{ id: "metrics", description: "Per-customer metrics." }],
    collections: [...base.collections, { pattern: "tenants/{tenantId}/metrics/{metricId}", database: "metrics", retentionClass: "user-delete" }, { pattern: "events/{eventId}", database: "metrics", retentionClass: "event-90d" }],
    dataMap: { ...base.dataMap, user: [...base.dataMap.user, { id: "metrics", kind: "query", database: "metrics", collection: "tenants/{tenantId}/metrics", where: [["uid", "==", "{uid}"]], action: "delete" }] },
  });
}

const issues = (raw: unknown): string[] => {
  const r = RegistrySchema.safeParse(raw);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};

describe("the registry's governed databases", () => {
  it("a registry without databases has the primary alone, and every view of it is the whole", () => {
    const pol = new PolicyIndex(loadVersion("v3"));
    expect(pol.cells()).toEqual([PRIMARY_CELL]);
    expect(pol.cellsReaching("user")).toEqual([]);
    expect(pol.forCell(PRIMARY_CELL).registry.collections).toEqual(pol.registry.collections);
    expect(pol.forCell(PRIMARY_CELL).dataMap("tenant")).toEqual(pol.dataMap("tenant"));
  });

  it("refuses an entry or a collection naming an undeclared database, a duplicate, and the reserved name", () => {
    expect(issues(withMetrics())).toEqual([]);
    expect(issues(withMetrics((r) => ({ ...r, databases: [] })))).toEqual(
      expect.arrayContaining([
        "tenants/{tenantId}/metrics/{metricId} names database metrics, which databases[] does not declare",
        "dataMap.user.metrics names database metrics, which databases[] does not declare",
      ]),
    );
    expect(issues(withMetrics((r) => ({ ...r, databases: [...(r.databases as object[]), { id: "metrics", description: "again" }] })))).toContain("duplicate database metrics");
    expect(issues(withMetrics((r) => ({ ...r, databases: [{ id: PRIMARY_CELL, description: "no" }] })))).toContain('"primary" names the primary database: leave database out instead');
    expect(issues(withMetrics((r) => ({ ...r, databases: [{ id: "Metrics_DB", description: "no" }] }))).join("\n")).toMatch(/kebab-case/);
  });

  it("each database's view has its own collections and data-map entries; classes, reasons, subjects and the control plane are shared", () => {
    const whole = new PolicyIndex(RegistrySchema.parse(withMetrics()));
    expect(whole.cells()).toEqual([PRIMARY_CELL, "metrics"]);
    expect(whole.cellsReaching("user")).toEqual(["metrics"]);
    expect(whole.cellsReaching("tenant")).toEqual([]);
    expect(whole.cellsWithScopeData()).toEqual(["metrics"]);
    const metrics = whole.forCell("metrics");
    const primary = whole.forCell(PRIMARY_CELL);
    expect(metrics.cell).toBe("metrics");
    expect(metrics.registry.collections.map((c) => c.pattern)).toEqual(["tenants/{tenantId}/metrics/{metricId}", "events/{eventId}"]);
    expect(metrics.dataMap("user").map((e) => e.id)).toEqual(["metrics"]);
    expect(metrics.dataMap("tenant")).toEqual([]);
    // The same pattern may be governed in two databases, each with its own class.
    expect(primary.classForPath("events/e-1")?.id).toBe("event-90d");
    expect(metrics.classForPath("tenants/t-1/metrics/m-1")?.id).toBe("user-delete");
    expect(primary.classForPath("tenants/t-1/metrics/m-1")).toBeUndefined();
    expect(primary.dataMap("user").some((e) => e.id === "metrics")).toBe(false);
    // A hold on the scope's record is a subtree hold in every database; other roots where their collection is.
    expect(metrics.subtreeHoldRoots()).toEqual(["tenants/{tenantId}"]);
    expect(metrics.holdReason("LITIGATION")).toEqual(whole.holdReason("LITIGATION"));
    expect(metrics.registry.controlPlane).toEqual(whole.registry.controlPlane);
    expect(metrics.version).toBe(whole.version);
    // Memoised, and a view has no view of another database.
    expect(whole.forCell("metrics")).toBe(metrics);
    expect(metrics.forCell("metrics")).toBe(metrics);
    expect(() => metrics.forCell(PRIMARY_CELL)).toThrow(/a view of cell metrics/);
    expect(() => whole.forCell("nope")).toThrow(/governs no database named nope/);
  });

  it("fingerprints a collection of another database under its name, so the same pattern in two databases keeps two", () => {
    const prints = retentionFingerprints(RegistrySchema.parse(withMetrics()));
    expect(fingerprintKey({ pattern: "events/{eventId}" })).toBe("events/{eventId}");
    expect(fingerprintKey({ pattern: "events/{eventId}", database: "metrics" })).toBe("metrics:events/{eventId}");
    expect(prints["events/{eventId}"]).toBeDefined();
    expect(prints["metrics:events/{eventId}"]).toBeDefined();
    expect(prints["metrics:events/{eventId}"]).not.toBe(prints["events/{eventId}"]);
  });

  it("puts a storage entry's objects in one database: the one of its heldWith document, whose holds can cover them", () => {
    // AtlasMart v4's uploads, held with each customer's profile and the tenant's record (primary collections).
    const v4 = loadVersion("v4");
    const withBoth = (over: (r: Record<string, unknown>) => Record<string, unknown> = (r) => r): unknown =>
      over({ ...v4, databases: [{ id: "metrics", description: "Per-customer metrics." }], collections: [...v4.collections, { pattern: "events/{eventId}", database: "metrics", retentionClass: "event-90d" }] });
    const whole = new PolicyIndex(RegistrySchema.parse(withBoth()));
    const ids = (p: PolicyIndex, kind: "user" | "tenant") => p.storageMap(kind).map((e) => e.id);
    expect(ids(whole.forCell(PRIMARY_CELL), "user")).toEqual(["uploads"]);
    expect(ids(whole.forCell(PRIMARY_CELL), "tenant")).toEqual(["tenant-files", "customer-uploads"]);
    expect(whole.forCell("metrics").hasStorageEntries).toBe(false);
    // Objects alone do not make a cell request in another database.
    expect(whole.cellsReaching("user")).toEqual([]);

    // Held with a document of the metrics database: the objects go with metrics (its fence, its holds, its requests).
    const inMetrics = withBoth((r) => ({
      ...r,
      collections: [...(r.collections as object[]), { pattern: "profiles/{uid}", database: "metrics", retentionClass: "user-delete" }],
      dataMap: { ...v4.dataMap, user: [...v4.dataMap.user, { id: "charts", kind: "storage", bucket: "(default)", prefix: "charts/{uid}/", heldWith: "profiles/{uid}", action: "delete" }] },
    }));
    expect(issues(inMetrics)).toEqual([]);
    const split = new PolicyIndex(RegistrySchema.parse(inMetrics));
    expect(ids(split.forCell("metrics"), "user")).toEqual(["charts"]);
    expect(ids(split.forCell(PRIMARY_CELL), "user")).toEqual(["uploads"]);
    expect(split.cellsReaching("user")).toEqual(["metrics"]);

    // A bucket belongs to no database: a storage entry naming one is refused, and so is a heldWith two databases govern.
    const named = withBoth((r) => ({ ...r, dataMap: { ...v4.dataMap, user: v4.dataMap.user.map((e) => (e.kind === "storage" ? { ...e, database: "metrics" } : e)) } }));
    expect(issues(named).join("\n")).toMatch(/dataMap\.user\.uploads: a bucket belongs to no database; a storage entry's objects go with the database of their heldWith document/);
    const twice = withBoth((r) => ({ ...r, collections: [...(r.collections as object[]), { pattern: "tenants/{tenantId}/users/{uid}", database: "metrics", retentionClass: "user-delete" }] }));
    expect(issues(twice)).toContain("dataMap.user.uploads: heldWith tenants/{tenantId}/users/{uid} matches a collection in several databases (primary, metrics); the objects must go with one database's holds");
  });
});
