import { beforeAll, describe, expect, it } from "vitest";
import { DEMO_DOCS, DEMO_USERS } from "../../../functions/src/demo/atlasmart";
import { seedDemo } from "../../../functions/src/demo/seed";
import { getAuth } from "firebase-admin/auth";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";

async function snapshotAll(): Promise<Record<string, unknown>> {
  const snaps = await db().getAll(...DEMO_DOCS.map((d) => db().doc(d.path)));
  return Object.fromEntries(snaps.map((s) => [s.ref.path, s.data()]));
}

describe("seed-demo", () => {
  beforeAll(async () => {
    await clearFirestore();
    await clearAuth();
  });

  it("seeds every fixed id with retention fields, and a second run leaves the same data", async () => {
    const first = await seedDemo({ nowMs: Date.parse("2026-11-30T00:00:00Z") });
    expect(first.documents).toBe(DEMO_DOCS.length);
    const afterFirst = await snapshotAll();
    for (const d of DEMO_DOCS) {
      const data = afterFirst[d.path] as Record<string, unknown> | undefined;
      expect(data, d.path).toBeDefined();
      expect(data).toMatchObject({ lifecycleState: "ACTIVE", tenantId: d.tenantId, policyVersion: "v1" });
      expect(typeof data?.retentionClass).toBe("string");
    }
    expect((afterFirst["sessions/s-1001"] as { expireAt?: unknown }).expireAt).toBeDefined();
    // Children carry their parent's expiry (the nested-data rule).
    expect((afterFirst["sessions/s-1001/tokens/tk-1001"] as { expireAt: unknown }).expireAt).toEqual(
      (afterFirst["sessions/s-1001"] as { expireAt: unknown }).expireAt,
    );
    // A later clock must not move anything: anchors are kept from the first seed.
    await seedDemo({ nowMs: Date.parse("2026-12-05T00:00:00Z") });
    expect(await snapshotAll()).toEqual(afterFirst);
  });

  it("creates one Auth user per demo role with its claims", async () => {
    for (const u of DEMO_USERS) {
      const record = await getAuth(adminApp()).getUser(u.uid);
      expect(record.customClaims).toEqual(u.claims);
    }
  });
});
