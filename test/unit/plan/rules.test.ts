import { describe, expect, it } from "vitest";
import { archivesInTrees, buildDeletionPlan, judgeObject, judgeUnplanned, type DiscoveredDoc, type DiscoveredObject } from "../../../functions/src/plan/rules";
import { DataMapEntrySchema, type DataMapEntry } from "../../../functions/src/kernel/policy-schema";
import { isBusinessVisible, isTenantOpen } from "../../../functions/src/kernel/visibility";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { hashCanonical } from "../../../functions/src/kernel/canonical";
import { policyCurrent, policyV1, policyV2 } from "../../helpers/policy";

const policy = policyV1();
const NOW = Date.parse("2026-11-30T00:00:00Z");
const subject = { type: "user" as const, uid: "u-1001", tenantId: "t-acme" };

const doc = (path: string, entryId: string, over: Partial<DiscoveredDoc["doc"]> = {}): DiscoveredDoc => ({
  path,
  entryId,
  doc: { retentionClass: "user-delete", lifecycleState: "SOFT_DELETED", legalHold: false, expireAtMs: null, retainUntilMs: null, ...over },
});

const discovered: DiscoveredDoc[] = [
  doc("userDirectory/u-1001", "directory"),
  doc("tenants/t-acme/users/u-1001", "profile"),
  doc("tenants/t-acme/orders/o-1002", "orders", { retentionClass: "finance-7y", retainUntilMs: Date.parse("2033-11-25T00:00:00Z") }),
  doc("tenants/t-acme/orders/o-1001/messages/m-001", "order-messages"),
  doc("activity/a-001", "activity"),
  doc("auditRecords/ar-001", "audit-records", { retentionClass: "audit-7y", lifecycleState: "ACTIVE" }),
];

describe("deletion planner", () => {
  it("is deterministic: input order does not change the manifest or its hash", () => {
    const a = buildDeletionPlan(subject, discovered, [], policy, NOW);
    const b = buildDeletionPlan(subject, [...discovered].reverse(), [], policy, NOW + DAY_MS);
    expect(b).toEqual(a);
    expect(a.manifestHash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.delete).toEqual([...a.delete].sort());
  });

  it("deletes, masks and retains by the data map, and lists external copies", () => {
    const p = buildDeletionPlan(subject, discovered, [], policy, NOW);
    expect(p.delete).toEqual(["activity/a-001", "tenants/t-acme/orders/o-1001/messages/m-001", "tenants/t-acme/users/u-1001", "userDirectory/u-1001"]);
    expect(p.retain).toEqual([
      expect.objectContaining({ path: "auditRecords/ar-001", action: "retain", reasonCode: "AUDIT_RETENTION" }),
      expect.objectContaining({ path: "tenants/t-acme/orders/o-1002", action: "mask", fields: ["customerName", "shippingAddress"], until: "2033-11-25" }),
    ]);
    expect(p.externalCopiesToReview).toEqual(["activity/a-001", "userDirectory/u-1001"]);
  });

  it("a hold beats every data-map action and names its reason code", () => {
    const p = buildDeletionPlan(subject, discovered, [{ holdId: "h-1", targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION" }], policy, NOW);
    expect(p.retain).toContainEqual(expect.objectContaining({ path: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION", holdId: "h-1" }));
  });

  it("never deletes a parent while a descendant is retained", () => {
    const tenant = { type: "tenant" as const, tenantId: "t-acme" };
    const p = buildDeletionPlan(
      tenant,
      [
        doc("tenants/t-acme", "tenant-tree", { retentionClass: "tenant-account" }),
        doc("tenants/t-acme/orders/o-1", "tenant-tree", { retentionClass: "finance-7y", retainUntilMs: NOW + DAY_MS }),
        doc("tenants/t-acme/orders/o-1/messages/m-1", "tenant-tree"),
      ],
      [],
      policy,
      NOW,
    );
    expect(p.delete).toEqual(["tenants/t-acme/orders/o-1/messages/m-1"]);
    expect(p.retain.map((r) => [r.path, r.reasonCode])).toEqual([
      ["tenants/t-acme", "RETAINED_DESCENDANT"],
      ["tenants/t-acme/orders/o-1", "POLICY_FINANCE_7Y"],
    ]);
  });
});

describe("a tenant's closure under v2: finance records are archived, the rest deleted", () => {
  const v2 = policyV2();
  const tenant = { type: "tenant" as const, tenantId: "t-acme" };
  const order = (id: string, over: Partial<DiscoveredDoc["doc"]> = {}) => doc(`tenants/t-acme/orders/${id}`, "orders", { retentionClass: "finance-7y", retainUntilMs: NOW + 400 * DAY_MS, ...over });
  const tree = [
    doc("tenants/t-acme", "tenant-tree", { retentionClass: "tenant-account" }),
    doc("tenants/t-acme/users/u-1", "tenant-tree"),
    // The orders are reached twice: by the tree (delete) and by their own entry (archive); archive wins.
    doc("tenants/t-acme/orders/o-1", "tenant-tree", { retentionClass: "finance-7y", retainUntilMs: NOW + 400 * DAY_MS }),
    order("o-1"),
    order("o-2"),
    order("o-old", { retainUntilMs: NOW - DAY_MS }),
    doc("tenants/t-acme/orders/o-1/messages/m-1", "tenant-tree"),
    doc("auditRecords/ar-1", "audit-records", { retentionClass: "audit-7y", lifecycleState: "ACTIVE" }),
  ];

  it("deletes the whole tree, archives the orders still under retention first, and keeps the audit records", () => {
    const p = buildDeletionPlan(tenant, tree, [], v2, NOW);
    expect(p.delete).toEqual([
      "tenants/t-acme",
      "tenants/t-acme/orders/o-1",
      "tenants/t-acme/orders/o-1/messages/m-1",
      "tenants/t-acme/orders/o-2",
      "tenants/t-acme/orders/o-old",
      "tenants/t-acme/users/u-1",
    ]);
    // o-old's retention is over: an archive would keep it past its retention, so it is simply deleted.
    const until = new Date(NOW + 400 * DAY_MS).toISOString().slice(0, 10);
    expect(p.archive.map((a) => [a.path, a.reasonCode, a.until])).toEqual([
      ["tenants/t-acme/orders/o-1", "FINANCE_RETENTION", until],
      ["tenants/t-acme/orders/o-2", "FINANCE_RETENTION", until],
    ]);
    expect(p.archive[0]!.reason).toMatch(/verified archive copies/);
    expect(p.retain.map((r) => [r.path, r.reasonCode])).toEqual([["auditRecords/ar-1", "AUDIT_RETENTION"]]);
  });

  it("a held order stays where it is (its erasure deferred), and so do the documents above it; nothing of it is archived", () => {
    const p = buildDeletionPlan(tenant, tree, [{ holdId: "h-1", targetPath: "tenants/t-acme/orders/o-2", reasonCode: "LITIGATION" }], v2, NOW);
    expect(p.archive.map((a) => a.path)).toEqual(["tenants/t-acme/orders/o-1"]);
    expect(p.retain).toContainEqual(expect.objectContaining({ path: "tenants/t-acme/orders/o-2", reasonCode: "LITIGATION", holdId: "h-1", deferredByHold: "delete" }));
    expect(p.retain).toContainEqual(expect.objectContaining({ path: "tenants/t-acme", reasonCode: "RETAINED_DESCENDANT" }));
    expect(p.delete).not.toContain("tenants/t-acme");
  });

  it("under v1 (no archive action) the same tenant keeps its orders in place, and a manifest without archives hashes as before", () => {
    const p = buildDeletionPlan(tenant, tree.filter((d) => d.entryId !== "orders"), [], policy, NOW);
    expect(p.archive).toEqual([]);
    expect(p.retain.map((r) => [r.path, r.reasonCode])).toContainEqual(["tenants/t-acme/orders/o-1", "POLICY_FINANCE_7Y"]);
    const { manifestHash, ...manifest } = p;
    // Neither archives nor objects: hashed exactly as a manifest was before either existed.
    const { archive: _none, objects: _noObjects, ...withoutArchive } = manifest;
    expect(manifestHash).toBe(hashCanonical(withoutArchive));
  });
});

describe("business visibility", () => {
  it("only ACTIVE and not past expireAt is visible", () => {
    expect(isBusinessVisible({ lifecycleState: "ACTIVE", expireAtMs: null }, NOW)).toBe(true);
    expect(isBusinessVisible({ lifecycleState: "ACTIVE", expireAtMs: NOW + 1 }, NOW)).toBe(true);
    expect(isBusinessVisible({ lifecycleState: "ACTIVE", expireAtMs: NOW }, NOW)).toBe(false);
    for (const s of ["SOFT_DELETED", "ARCHIVED", "LEGAL_HOLD", "PURGE_ELIGIBLE", "PURGED", null]) {
      expect(isBusinessVisible({ lifecycleState: s, expireAtMs: null }, NOW)).toBe(false);
    }
  });
});

describe("tenant visibility", () => {
  it("a tenant's data shows only while its document exists and carries no closure", () => {
    expect(isTenantOpen({ exists: true })).toBe(true);
    expect(isTenantOpen({ exists: true, closure: null })).toBe(true);
    expect(isTenantOpen({ exists: true, closure: { requestId: "r", reason: "TENANT_CLOSURE" } })).toBe(false);
    expect(isTenantOpen({ exists: false })).toBe(false);
  });
});

describe("Cloud Storage objects in a manifest (storage entries of the current registry)", () => {
  const current = policyCurrent();
  const subject = { type: "user" as const, uid: "u-1", tenantId: "t-acme" };
  const obj = (name: string, over: Partial<DiscoveredObject> = {}): DiscoveredObject => ({
    path: `gs://b/tenants/t-acme/users/u-1/${name}`,
    generation: "100",
    entryId: "uploads",
    heldWith: "tenants/t-acme/users/u-1",
    markerHoldIds: [],
    storageHold: false,
    ...over,
  });

  it("deletes the subject's objects after its documents, each with its generation in the manifest and the hash", () => {
    const plan = buildDeletionPlan(subject, [], [], current, NOW, [obj("b.jpg"), obj("a.pdf", { generation: "7" })]);
    expect(plan.delete).toEqual(["gs://b/tenants/t-acme/users/u-1/a.pdf", "gs://b/tenants/t-acme/users/u-1/b.jpg"]);
    expect(plan.objects).toEqual([
      { path: "gs://b/tenants/t-acme/users/u-1/a.pdf", generation: "7" },
      { path: "gs://b/tenants/t-acme/users/u-1/b.jpg", generation: "100" },
    ]);
    // The same name at another generation is another manifest.
    const again = buildDeletionPlan(subject, [], [], current, NOW, [obj("b.jpg"), obj("a.pdf", { generation: "8" })]);
    expect(again.delete).toEqual(plan.delete);
    expect(again.manifestHash).not.toBe(plan.manifestHash);
  });

  it("keeps an object a hold covers through its heldWith document, or that carries a hold's marker or Cloud Storage's hold", () => {
    const holds = [{ holdId: "h-t", targetPath: "tenants/t-acme", reasonCode: "LITIGATION" }];
    const plan = buildDeletionPlan(subject, [], holds, current, NOW, [obj("a.pdf")]);
    expect(plan.delete).toEqual([]);
    expect(plan.retain).toEqual([{ path: "gs://b/tenants/t-acme/users/u-1/a.pdf", action: "retain", reasonCode: "LITIGATION", reason: "retention hold h-t", holdId: "h-t", deferredByHold: "delete" }]);
    expect(judgeObject(obj("a.pdf", { markerHoldIds: ["h-old"] }), current.storageMap("user")[0]!, [])).toMatchObject({ reasonCode: "LEGAL_HOLD", holdId: "h-old", deferredByHold: "delete" });
    expect(judgeObject(obj("a.pdf", { storageHold: true }), current.storageMap("user")[0]!, [])).toMatchObject({ reasonCode: "LEGAL_HOLD", reason: "the object carries a Cloud Storage hold" });
    // A hold on another customer of the tenant does not.
    expect(judgeObject(obj("a.pdf"), current.storageMap("user")[0]!, [{ holdId: "h-x", targetPath: "tenants/t-acme/users/u-10", reasonCode: "LITIGATION" }])).toBeNull();
  });
});

describe("archive entries planned from a tree's stream (archivesInTrees)", () => {
  const e = (over: Partial<DataMapEntry> & Pick<DataMapEntry, "id" | "kind" | "action">): DataMapEntry => DataMapEntrySchema.parse(over);
  const tree = e({ id: "tree", kind: "doc", path: "tenants/{tenantId}", action: "delete", recursive: true });
  const why = { reason: "finance retention", reasonCode: "FINANCE_RETENTION" };
  const orders = e({ id: "orders", kind: "query", collection: "tenants/{tenantId}/orders", action: "archive", ...why });
  const vars = { tenantId: "t-1" };
  const ids = (m: Map<string, Map<string, DataMapEntry>>) => Object.fromEntries([...m].map(([k, v]) => [k, Object.fromEntries([...v].map(([c, x]) => [c, x.id]))]));

  it("hands a whole collection inside a recursive delete entry's tree to that tree", () => {
    expect(ids(archivesInTrees([orders, tree], vars))).toEqual({ tree: { "tenants/t-1/orders": "orders" } });
  });

  it("keeps the archive entry's own pass whenever anything else could reach its documents or it is not a whole collection", () => {
    const cases: DataMapEntry[][] = [
      // a filter: the tree's stream would find documents the entry doesn't reach
      [e({ id: "orders", kind: "query", collection: "tenants/{tenantId}/orders", action: "archive", where: [["status", "==", "PAID"]], ...why }), tree],
      // not inside the tree
      [e({ id: "orders", kind: "query", collection: "orders", action: "archive", ...why }), tree],
      // the tree is not recursive, or not a delete
      [orders, e({ id: "tree", kind: "doc", path: "tenants/{tenantId}", action: "delete" })],
      // another entry reaches the same collection: by its id, by a query, by a second recursive root, by a doc in it
      [orders, tree, e({ id: "cg", kind: "collectionGroup", collectionId: "orders", action: "delete" })],
      [orders, tree, e({ id: "cg", kind: "collectionGroup", collectionId: "anything", action: "delete", recursive: true })],
      [orders, tree, e({ id: "again", kind: "query", collection: "tenants/{tenantId}/orders", action: "delete" })],
      [orders, tree, e({ id: "tree2", kind: "doc", path: "tenants/{tenantId}", action: "delete", recursive: true })],
      [orders, tree, e({ id: "one", kind: "doc", path: "tenants/{tenantId}/orders/o-1", action: "delete" })],
      // a template the subject can't fill
      [orders, tree, e({ id: "other", kind: "query", collection: "users/{uid}/orders", action: "delete" })],
    ];
    for (const entries of cases) expect(ids(archivesInTrees(entries, vars))).toEqual({});
  });

  it("ignores entries that cannot reach the collection (another database, storage, elsewhere)", () => {
    const others = [
      e({ id: "dir", kind: "query", collection: "userDirectory", action: "delete", where: [["tenantId", "==", "{tenantId}"]] }),
      e({ id: "remote", kind: "query", database: "analytics", collection: "tenants/{tenantId}/orders", action: "delete" }),
      e({ id: "files", kind: "storage", bucket: "(default)", prefix: "tenants/{tenantId}/files/", heldWith: "tenants/{tenantId}", action: "delete" }),
      e({ id: "msgs", kind: "collectionGroup", collectionId: "messages", action: "delete" }),
    ];
    expect(ids(archivesInTrees([orders, tree, ...others], vars))).toEqual({ tree: { "tenants/t-1/orders": "orders" } });
  });
});

describe("what the final sweep does with a document the data map reaches after the plan (judgeUnplanned)", () => {
  const pol = policyCurrent();
  const entry = (id: string): DataMapEntry => {
    const e = pol.dataMapOf(subject).find((x) => x.id === id);
    if (!e) throw new Error(`no entry ${id}`);
    return e;
  };
  const activity = doc("activity/a-late", "activity", { lifecycleState: "ACTIVE" });

  it("sweeps what non-recursive delete entries alone reach and none keeps", () => {
    expect(judgeUnplanned(activity, [entry("activity")], [], pol, NOW)).toBe("sweep");
    expect(judgeUnplanned(activity, [entry("activity"), { ...entry("activity"), id: "activity-again" }], [], pol, NOW)).toBe("sweep");
  });

  it("leaves to the next plan what a keep, archive or recursive entry also reaches, what a hold keeps, and what its class keeps", () => {
    const session = doc("sessions/s-late", "sessions", { retentionClass: "session-30d", lifecycleState: "ACTIVE" });
    expect(judgeUnplanned(session, [entry("sessions")], [], pol, NOW)).toBe("replan");
    const archive = { ...entry("activity"), id: "activity-archive", action: "archive" as const };
    expect(judgeUnplanned(activity, [entry("activity"), entry("audit-records")], [], pol, NOW)).toBe("replan");
    expect(judgeUnplanned(activity, [entry("activity"), archive], [], pol, NOW)).toBe("replan");
    expect(judgeUnplanned({ ...activity, doc: { ...activity.doc, legalHold: true } }, [entry("activity")], [], pol, NOW)).toBe("replan");
    expect(judgeUnplanned(activity, [entry("activity")], [{ holdId: "h-1", targetPath: "activity", reasonCode: "LITIGATION" }], pol, NOW)).toBe("replan");
    const finance = doc("activity/a-finance", "activity", { retentionClass: "finance-7y", retainUntilMs: NOW + DAY_MS });
    expect(judgeUnplanned(finance, [entry("activity")], [], pol, NOW)).toBe("replan");
    expect(judgeUnplanned(activity, [], [], pol, NOW)).toBe("replan");
  });
});
