import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { approveTenantClosure, openDeletionRequest } from "../../../functions/src/requests/index";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/index";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, evidence, expectChainVerifies, expectDeletionsExplained, putCustomer, putGoverned, reset, runOptions, T0 } from "./support";

const OPENER = { type: "staff" as const, id: "ra-3001" };
const APPROVER = { type: "staff" as const, id: "c-2001" };

describe("a tenant's deletion request: the same model and the same purge path as a user's", () => {
  it("opens awaiting approval, is approved by a second person, soft-deletes the tenant's data map, and is purged after its 30-day grace", async () => {
    await reset();
    await putCustomer("u-z1", { tenantId: "t-zeta", messages: 2, activity: 1 });
    await putCustomer("u-z2", { tenantId: "t-zeta", messages: 1, activity: 1 });
    await putGoverned("events/e-zeta", { type: "X" }, { tenantId: "t-zeta", ageDays: 1 });
    await putCustomer("u-other", { tenantId: "t-acme", messages: 1, activity: 1 });
    const { request, created } = await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-zeta" }, source: "staff", actor: OPENER, nowMs: T0 });
    expect(created).toBe(true);
    const ref = db().doc(`deletionRequests/${request.requestId}`);
    const stored = (await ref.get()).data()!;
    expect(stored).toMatchObject({ subjectType: "tenant", tenantId: "t-zeta", requestedBy: "ra-3001", state: "AWAITING_APPROVAL" });
    expect(stored.uid).toBeUndefined();
    expect(stored.graceEndsAt).toBeUndefined();
    // Until a second person approves, nothing is hidden and no purge takes it, however late.
    expect((await db().doc("tenants/t-zeta/users/u-z1").get()).get("lifecycleState")).toBe("ACTIVE");
    const waiting = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 90 * DAY_MS, asOfMs: T0 + 90 * DAY_MS }));
    expect((waiting.units as UnitReport[]).map((u) => u.unitKey)).not.toContain(request.requestId);
    // Asking again returns the same open request.
    expect((await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-zeta" }, source: "staff", actor: OPENER, nowMs: T0 })).request.requestId).toBe(request.requestId);

    // The two-person rule: the opener cannot approve.
    await expect(approveTenantClosure(request.requestId, OPENER, T0)).rejects.toMatchObject({ reason: "TWO_PERSON_RULE" });
    const approved = await approveTenantClosure(request.requestId, APPROVER, T0 + DAY_MS);
    expect(approved.request).toMatchObject({ state: "PENDING", approvedBy: "c-2001", graceEndsAtMs: T0 + 31 * DAY_MS, dueAtMs: T0 + 61 * DAY_MS });
    expect((await db().doc("tenants/t-zeta").get()).get("closure")).toMatchObject({ requestId: request.requestId, reason: "TENANT_CLOSURE" });
    // The tenant's tree and its external copies left every product read, with the reason TENANT_CLOSURE.
    for (const p of ["tenants/t-zeta/users/u-z1", "tenants/t-zeta/orders/o-u-z1", "tenants/t-zeta/orders/o-u-z1/messages/m-u-z1-0", "userDirectory/u-z2", "events/e-zeta"]) {
      expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("SOFT_DELETED");
    }
    expect((await db().doc("tenants/t-acme/users/u-other").get()).get("lifecycleState")).toBe("ACTIVE");
    const softDeleted = (await evidence()).filter((e) => e.action === "SUBJECT_SOFT_DELETED");
    expect(softDeleted.length).toBeGreaterThan(0);
    expect(softDeleted.every((e) => e.decision.reason === "TENANT_CLOSURE")).toBe(true);
    // Approving again, as the approver, is idempotent; nobody else may approve it now.
    expect((await approveTenantClosure(request.requestId, APPROVER, T0 + 2 * DAY_MS)).approved).toBe(false);
    await expect(approveTenantClosure(request.requestId, { type: "staff", id: "c-2002" }, T0 + 2 * DAY_MS)).rejects.toMatchObject({ reason: "NOT_AWAITING_APPROVAL" });

    const before = await allGovernedPaths();
    // Before the grace ends the purge leaves it; after, it takes it.
    const early = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 30 * DAY_MS, asOfMs: T0 + 30 * DAY_MS }));
    expect((early.units as UnitReport[]).map((u) => u.unitKey)).not.toContain(request.requestId);
    const run = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 32 * DAY_MS, asOfMs: T0 + 32 * DAY_MS, batchSize: 3 }));
    expect((run.units as UnitReport[]).find((u) => u.unitKey === request.requestId)?.outcome).toBe("DONE");
    expect((await ref.get()).get("state")).toBe("PURGED");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p)).sort();
    // The whole tenant goes: its orders were archived (verified) first, so nothing holds the tree up.
    expect(gone).toEqual(
      [
        "activity/a-u-z1-00",
        "activity/a-u-z2-00",
        "events/e-zeta",
        "tenants/t-zeta",
        "tenants/t-zeta/orders/o-u-z1",
        "tenants/t-zeta/orders/o-u-z1/messages/m-u-z1-0",
        "tenants/t-zeta/orders/o-u-z1/messages/m-u-z1-1",
        "tenants/t-zeta/orders/o-u-z2",
        "tenants/t-zeta/orders/o-u-z2/messages/m-u-z2-0",
        "tenants/t-zeta/users/u-z1",
        "tenants/t-zeta/users/u-z2",
        "userDirectory/u-z1",
        "userDirectory/u-z2",
      ].sort(),
    );
    const archives = (await db().collection("archives").get()).docs.map((d) => [d.get("sourcePath") as string, d.get("verified") as boolean] as const);
    expect([...archives].sort()).toEqual([
      ["tenants/t-zeta/orders/o-u-z1", true],
      ["tenants/t-zeta/orders/o-u-z2", true],
    ]);
    expect((await ref.get()).get("purgeCounts")).toMatchObject({ archived: 2, findings: 0 });
    // Another tenant is untouched.
    expect((await db().doc("tenants/t-acme/users/u-other").get()).get("lifecycleState")).toBe("ACTIVE");
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
  });
});
