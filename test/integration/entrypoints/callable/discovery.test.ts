import { beforeAll, describe, expect, it } from "vitest";
import { discoverSubject } from "../../../../functions/src/plan/discovery";
import { streamGovernedDescendants } from "../../../../functions/src/platform/governed-doc";
import { clearFirestore, db } from "../../../helpers/emulator";
import { seedDemo } from "../../../../examples/atlasmart/seed";

async function collect(root: string, segment: number, read: "stream" | "pages" = "stream"): Promise<string[]> {
  const out: string[] = [];
  for await (const d of streamGovernedDescendants(root, { segment, read })) out.push(d.ref.path);
  return out;
}

describe("discovery", () => {
  const expected: string[] = [];
  beforeAll(async () => {
    await clearFirestore();
    const batch = db().batch();
    for (let o = 1; o <= 5; o++) {
      const order = `tenants/t-deep/orders/o-${o}`;
      batch.set(db().doc(order), { retentionClass: "finance-7y", lifecycleState: "ACTIVE", secret: "not read" });
      expected.push(order);
      for (let m = 1; m <= 3; m++) {
        const msg = `${order}/messages/m-${m}`;
        batch.set(db().doc(msg), { lifecycleState: "ACTIVE" });
        expected.push(msg);
        const reply = `${msg}/replies/r-1`;
        batch.set(db().doc(reply), { lifecycleState: "ACTIVE" });
        expected.push(reply);
      }
    }
    batch.set(db().doc("tenants/t-deep/users/u-1"), { lifecycleState: "ACTIVE" });
    expected.push("tenants/t-deep/users/u-1");
    // The root document itself does not exist: its subcollections are still found.
    await batch.commit();
  });

  it("streamDescendants yields every descendant at any depth, depth first in (collection, id) order, whatever the page size", async () => {
    const small = await collect("tenants/t-deep", 2);
    expect(small).toHaveLength(expected.length);
    expect(new Set(small)).toEqual(new Set(expected));
    expect(await collect("tenants/t-deep", 500)).toEqual(small);
    // Read in pages (no query open between them: a soft-delete pass), the same documents in the same order.
    expect(await collect("tenants/t-deep", 2, "pages")).toEqual(small);
    expect(await collect("tenants/t-deep", 500, "pages")).toEqual(small);
    // Parents come before their children, and the order is stable.
    expect(small.indexOf("tenants/t-deep/orders/o-1")).toBeLessThan(small.indexOf("tenants/t-deep/orders/o-1/messages/m-1"));
    expect(small.indexOf("tenants/t-deep/orders/o-1/messages/m-1/replies/r-1")).toBeLessThan(small.indexOf("tenants/t-deep/orders/o-1/messages/m-2"));
    expect(small.at(-1)).toBe("tenants/t-deep/users/u-1");
  });

  it("reads only retention fields, never business content", async () => {
    for (const read of ["stream", "pages"] as const) {
      for await (const d of streamGovernedDescendants("tenants/t-deep", { segment: 3, read })) expect(d.get("secret")).toBeUndefined();
    }
  });

  it("discoverSubject walks doc, query, collection-group and recursive entries of the data map", async () => {
    await seedDemo({ nowMs: Date.now(), withAuth: false });
    const found: [string, string][] = [];
    for await (const d of discoverSubject({ type: "user", uid: "u-1001", tenantId: "t-acme" }, 1)) found.push([d.entryId, d.path]);
    expect(found).toEqual([
      ["profile", "tenants/t-acme/users/u-1001"],
      ["orders", "tenants/t-acme/orders/o-1001"],
      ["orders", "tenants/t-acme/orders/o-1002"],
      ["order-messages", "tenants/t-acme/orders/o-1001/messages/m-001"],
      ["directory", "userDirectory/u-1001"],
      ["activity", "activity/a-001"],
      ["sessions", "sessions/s-1001"],
      ["sessions", "sessions/s-1001/tokens/tk-1001"],
      ["audit-records", "auditRecords/ar-001"],
    ]);
  });
});
