import { describe, expect, it } from "vitest";
import { buildDeletionPlan, type DiscoveredDoc } from "../../../functions/src/plan/rules";
import { isBusinessVisible } from "../../../functions/src/kernel/visibility";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { policyV1 } from "../../helpers/policy";

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
