/**
 * getDeletionStatus, in-process: what a subject is told about held data, and the status summary that keeps
 * a polling subject from having their whole data map walked on every call.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import { writeGoverned } from "../../../functions/src/platform/governed-repo";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/service";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { statusSummaryRef } from "../../../functions/src/requests/status";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";

const ADA = { uid: "u-1001", tenantId: "t-acme", roles: [] };
const CLARA = { uid: "c-2001", tenantId: null, roles: ["compliance" as const] };
const MINUTE = 60_000;
const REFRESH = 15 * MINUTE;
const HELD = "tenants/t-acme/orders/o-1002";

describe("getDeletionStatus", () => {
  let requestId: string;
  let t0: number;
  beforeEach(async () => {
    await clearFirestore();
    await clearAuth();
    t0 = Date.now();
    await seedDemo({ nowMs: t0, withAuth: false });
    ({ requestId } = await requestAccountDeletionHandler({}, ADA));
  });

  const status = (caller: typeof ADA | typeof CLARA, nowMs: number) => getDeletionStatusHandler({ requestId }, caller, { nowMs, refreshMs: REFRESH });

  it("never tips the subject off: an investigation or litigation hold reads as a legal obligation, without code, note or id", async () => {
    for (const [reasonCode, note] of [
      ["FRAUD_INVESTIGATION", "chargeback ring, case 7731"],
      ["LITIGATION", "Smith v. AtlasMart"],
      ["REGULATOR_REQUEST", "preservation order from the regulator"],
    ] as const) {
      const { holdId } = await placeHold({ targetPath: HELD, reasonCode, releaseAfterMs: null, note, actor: { type: "staff", id: "c-2001" }, nowMs: t0 });
      const told = await status(ADA, t0 + MINUTE);
      expect(told.retained.find((r) => r.path === HELD)).toEqual({
        path: HELD,
        reasonCode: "LEGAL_OBLIGATION",
        reason: "Retained for a legal obligation.",
        text: "order o-1002: retained for a legal obligation",
      });
      const words = JSON.stringify(told);
      for (const secret of [reasonCode, note, holdId, "investigation", "counsel", "regulator"]) expect(words).not.toContain(secret);
      // Compliance still sees the hold's reason.
      expect((await status(CLARA, t0 + MINUTE)).retained.find((r) => r.path === HELD)).toMatchObject({ reasonCode });
      await releaseHoldById({ holdId, reason: "test", actor: { type: "staff", id: "c-2002" }, nowMs: t0 });
    }
  });

  it("answers from the request's summary: no new plan within the refresh interval, a new one after it or when a hold changes", async () => {
    const written = (await statusSummaryRef(requestId).get()).get("plannedAt") as unknown;
    expect(written).toBeDefined();
    const first = await status(ADA, t0 + MINUTE);
    expect(first.retained.map((r) => r.path)).toContain("tenants/t-acme/orders/o-1001");
    // New data of the subject's that a fresh plan would list as retained (an order is kept, masked).
    await writeGoverned("tenants/t-acme/orders/o-late", { customerId: "u-1001", customerName: "Ada", status: "PAID", totalMinor: 5 }, "t-acme", t0);
    const soon = await status(ADA, t0 + 5 * MINUTE);
    expect(soon.retained.map((r) => r.path)).not.toContain("tenants/t-acme/orders/o-late");
    expect((await statusSummaryRef(requestId).get()).get("plannedAt")).toEqual(written);
    // After the interval the subject is planned again.
    const later = await status(ADA, t0 + REFRESH + MINUTE);
    expect(later.retained.map((r) => r.path)).toContain("tenants/t-acme/orders/o-late");
    // A hold changes what is kept and why: the next call plans again at once.
    await placeHold({ targetPath: "activity/a-001", reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: t0 });
    const held = await status(ADA, t0 + REFRESH + 2 * MINUTE);
    expect(held.retained.find((r) => r.path === "activity/a-001")).toMatchObject({ reasonCode: "LEGAL_OBLIGATION" });
  });

  it("a refused call writes no summary", async () => {
    await statusSummaryRef(requestId).delete();
    await expect(status({ uid: "u-1002", tenantId: "t-acme", roles: [] }, t0)).rejects.toMatchObject({ reason: "NOT_OWNER" });
    expect((await statusSummaryRef(requestId).get()).exists).toBe(false);
    expect((await db().collection("deletionRequests").get()).size).toBe(1);
  });
});
