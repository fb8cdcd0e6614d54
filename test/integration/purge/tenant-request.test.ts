import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { openDeletionRequest } from "../../../functions/src/requests/index";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/index";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, expectChainVerifies, expectDeletionsExplained, putCustomer, putGoverned, reset, runOptions, T0 } from "./support";

describe("a tenant's deletion request: the same model and the same purge path as a user's", () => {
  it("opens through the request service, soft-deletes the tenant's data map, and is purged after its 30-day grace", async () => {
    await reset();
    await putCustomer("u-z1", { tenantId: "t-zeta", messages: 2, activity: 1 });
    await putCustomer("u-z2", { tenantId: "t-zeta", messages: 1, activity: 1 });
    await putGoverned("events/e-zeta", { type: "X" }, { tenantId: "t-zeta", ageDays: 1 });
    await putCustomer("u-other", { tenantId: "t-acme", messages: 1, activity: 1 });
    const { request, created } = await openDeletionRequest({
      subject: { type: "tenant", tenantId: "t-zeta" },
      source: "staff",
      actor: { type: "staff", id: "ra-3001" },
      nowMs: T0,
    });
    expect(created).toBe(true);
    const stored = (await db().doc(`deletionRequests/${request.requestId}`).get()).data()!;
    expect(stored).toMatchObject({ subjectType: "tenant", tenantId: "t-zeta", requestedBy: "ra-3001", state: "PENDING" });
    expect(stored.uid).toBeUndefined();
    expect(request.graceEndsAtMs - T0).toBe(30 * DAY_MS);
    // The tenant's tree and its external copies left every product read at once.
    for (const p of ["tenants/t-zeta/users/u-z1", "tenants/t-zeta/orders/o-u-z1/messages/m-u-z1-0", "userDirectory/u-z2", "events/e-zeta"]) {
      expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("SOFT_DELETED");
    }
    expect((await db().doc("tenants/t-acme/users/u-other").get()).get("lifecycleState")).toBe("ACTIVE");
    // Asking again returns the same open request.
    expect((await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-zeta" }, source: "staff", actor: { type: "staff", id: "ra-3001" }, nowMs: T0 })).request.requestId).toBe(request.requestId);

    const before = await allGovernedPaths();
    // Before the grace ends the purge leaves it; after, it takes it.
    const early = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 29 * DAY_MS, asOfMs: T0 + 29 * DAY_MS }));
    expect((early.units as UnitReport[]).map((u) => u.unitKey)).not.toContain(request.requestId);
    const run = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 31 * DAY_MS, asOfMs: T0 + 31 * DAY_MS, batchSize: 3 }));
    expect((run.units as UnitReport[]).find((u) => u.unitKey === request.requestId)?.outcome).toBe("DONE");
    expect((await db().doc(`deletionRequests/${request.requestId}`).get()).get("state")).toBe("PURGED");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p)).sort();
    expect(gone).toEqual(
      [
        "activity/a-u-z1-00",
        "activity/a-u-z2-00",
        "events/e-zeta",
        "tenants/t-zeta/orders/o-u-z1/messages/m-u-z1-0",
        "tenants/t-zeta/orders/o-u-z1/messages/m-u-z1-1",
        "tenants/t-zeta/orders/o-u-z2/messages/m-u-z2-0",
        "tenants/t-zeta/users/u-z1",
        "tenants/t-zeta/users/u-z2",
        "userDirectory/u-z1",
        "userDirectory/u-z2",
      ].sort(),
    );
    // Orders are finance records (not deletable on request): they stay, and so does the tenant above them.
    expect(after.has("tenants/t-zeta/orders/o-u-z1")).toBe(true);
    expect(after.has("tenants/t-zeta")).toBe(true);
    // Another tenant is untouched.
    expect((await db().doc("tenants/t-acme/users/u-other").get()).get("lifecycleState")).toBe("ACTIVE");
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
  });
});
