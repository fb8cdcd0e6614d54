import { beforeAll, describe, expect, it } from "vitest";
import { hashManifest, type RetainedItem } from "../../../../functions/src/plan/rules";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { policy } from "../../../../functions/src/platform/registry";
import { toMs } from "../../../../functions/src/platform/governed-doc";
import { writeGoverned } from "../../../../functions/src/platform/governed-repo";
import { readVisible } from "../../../../functions/src/ttl/product-reads";
import { call, db } from "../../../helpers/emulator";
import { callExpect, docData, expectRefused, freshDemo, readChain, verifyStoredChain, type Tokens } from "./support";

interface Plan {
  delete: string[];
  retain: RetainedItem[];
  externalCopiesToReview: string[];
  policyVersion: string;
  manifestHash: string;
}

const O1 = "tenants/t-acme/orders/o-1001";
const O2 = "tenants/t-acme/orders/o-1002";

/** The product's read path for active orders (the one read helper every product query goes through). */
async function activeOrderIds(): Promise<string[]> {
  return (await readVisible(db().collection("tenants/t-acme/orders"), Date.now())).map((d) => d.id);
}

describe("the lab scenario on the seeded demo", () => {
  let t: Tokens;
  let holdId: string;
  beforeAll(async () => {
    t = await freshDemo();
  });

  it("1. soft-deletes o-1001, and a query for active orders leaves it out", async () => {
    expect(await activeOrderIds()).toEqual(["o-1001", "o-1002"]);
    const moved = await callExpect("transitionLifecycle", { path: O1, to: "SOFT_DELETED", reason: "lab step 1", correlationId: "lab-1" }, t.rita);
    expect(moved).toEqual({ path: O1, from: "ACTIVE", to: "SOFT_DELETED" });
    expect(await activeOrderIds()).toEqual(["o-1002"]);
    const o1 = await docData(O1);
    expect(o1).toMatchObject({ lifecycleState: "SOFT_DELETED", preDeleteState: "ACTIVE" });
    expect(toMs(o1.softDeletedAt)).not.toBeNull();
    const last = (await readChain()).entries.at(-1)?.entry;
    expect(last).toMatchObject({ action: "LIFECYCLE_TRANSITION", correlationId: "lab-1", paths: [O1], actor: { type: "staff", id: "r-3001" } });
    expect(JSON.stringify(last)).not.toContain("lab step 1");
  });

  it("2. puts o-1002 under a FINANCE_RETENTION hold, and the planner returns it as retained with that reason", async () => {
    ({ holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: O2, reasonCode: "FINANCE_RETENTION" }, t.clara));
    const o2 = await docData(O2);
    expect(o2).toMatchObject({ legalHold: true, holdIds: [holdId], lifecycleState: "LEGAL_HOLD", preHold: { lifecycleState: "ACTIVE" } });
    const plan = await callExpect<Plan>("planDeletion", { subjectUid: "u-1001" }, t.clara);
    const held = plan.retain.find((r) => r.path === O2);
    // Without the hold the erasure would mask this order: the hold defers that, and the plan says so.
    expect(held).toEqual({ path: O2, action: "retain", reasonCode: "FINANCE_RETENTION", reason: `retention hold ${holdId}`, holdId, deferredByHold: "mask" });
    expect(plan.delete).not.toContain(O2);
    // The rest of the data map: masked order, retained audit record, nested and external copies.
    expect(plan.retain.find((r) => r.path === O1)).toMatchObject({ action: "mask", reasonCode: "FINANCE_RETENTION", fields: ["customerName", "shippingAddress"] });
    expect(plan.retain.find((r) => r.path === "auditRecords/ar-001")).toMatchObject({ action: "retain", reasonCode: "AUDIT_RETENTION" });
    expect(plan.delete).toEqual(
      [
        "activity/a-001",
        "sessions/s-1001",
        "sessions/s-1001/tokens/tk-1001",
        "tenants/t-acme/orders/o-1001/messages/m-001",
        "tenants/t-acme/users/u-1001",
        "userDirectory/u-1001",
      ].sort(),
    );
    expect(plan.externalCopiesToReview).toEqual(["activity/a-001", "userDirectory/u-1001"]);
  });

  it("3. the manifest is identical, hash included, across two runs, and the hash is SHA-256 of the canonical manifest", async () => {
    const first = await callExpect<Plan>("planDeletion", { subjectUid: "u-1001" }, t.clara);
    const second = await callExpect<Plan>("planDeletion", { subjectUid: "u-1001" }, t.dev);
    expect(second).toEqual(first);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
    const { manifestHash, ...manifest } = first;
    expect(manifestHash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashManifest({ subject: { type: "user", uid: "u-1001", tenantId: "t-acme" }, archive: [], objects: [], ...manifest })).toBe(manifestHash);
    const previews = (await readChain()).entries.filter((e) => e.entry.action === "PLAN_PREVIEWED").slice(-2);
    expect(previews.map((p) => p.entry.manifestHash)).toEqual([manifestHash, manifestHash]);
  });

  it("4. only eligible paths can move to PURGE_ELIGIBLE, and held data can't", async () => {
    const eligible = (path: string) => call("transitionLifecycle", { path, to: "PURGE_ELIGIBLE", reason: "lab step 4" }, t.rita);
    // Held: refused. LEGAL_HOLD -> PURGE_ELIGIBLE is outside the state machine, whose reason comes first; a move
    // the machine allows is refused for the hold.
    expectRefused(await eligible(O2), "FAILED_PRECONDITION", "INVALID_LIFECYCLE_LEGAL_HOLD_TO_PURGE_ELIGIBLE");
    expectRefused(await call("transitionLifecycle", { path: O2, to: "SOFT_DELETED", reason: "lab step 4" }, t.rita), "FAILED_PRECONDITION", "LEGAL_HOLD");
    // Soft-deleted, but finance retention has years to run.
    expectRefused(await eligible(O1), "FAILED_PRECONDITION", "NOT_EXPIRED");
    // ACTIVE data must be soft-deleted (or archived) first: the state machine.
    expectRefused(await eligible("events/e-001"), "FAILED_PRECONDITION", "INVALID_LIFECYCLE_ACTIVE_TO_PURGE_ELIGIBLE");
    // An audit record needs a verified archive first.
    await callExpect("transitionLifecycle", { path: "auditRecords/ar-001", to: "SOFT_DELETED", reason: "lab" }, t.rita);
    expectRefused(await eligible("auditRecords/ar-001"), "FAILED_PRECONDITION", "ARCHIVE_NOT_VERIFIED");
    for (const p of [O1, O2, "auditRecords/ar-001"]) expect((await docData(p)).lifecycleState).not.toBe("PURGE_ELIGIBLE");

    // Eligible by expiry: an event whose TTL ran out.
    await writeGoverned("events/e-expired", { type: "PAGE_VIEW" }, "t-acme", Date.now() - 100 * DAY_MS);
    await callExpect("transitionLifecycle", { path: "events/e-expired", to: "SOFT_DELETED", reason: "lab" }, t.rita);
    expect(await callExpect("transitionLifecycle", { path: "events/e-expired", to: "PURGE_ELIGIBLE", reason: "lab" }, t.rita)).toEqual({
      path: "events/e-expired",
      from: "SOFT_DELETED",
      to: "PURGE_ELIGIBLE",
    });
    const decided = await docData("events/e-expired");
    expect(decided.purgeDecision).toMatchObject({ allowed: true, reason: "AUTHORIZED_BY_POLICY", policyVersion: policy().version, retentionClass: "event-90d" });
    const last = (await readChain()).entries.at(-1)?.entry;
    expect(last).toMatchObject({ action: "LIFECYCLE_TRANSITION", decision: { reason: "AUTHORIZED_BY_POLICY", from: "SOFT_DELETED", to: "PURGE_ELIGIBLE" }, paths: ["events/e-expired"] });
    // The one machine move into PURGED is the engine's alone.
    expectRefused(await call("transitionLifecycle", { path: "events/e-expired", to: "PURGED", reason: "lab" }, t.rita), "FAILED_PRECONDITION", "PURGE_ONLY_BY_ENGINE");

    // Eligible through the workflow: Ben's directory entry, soft-deleted by his request, once the grace is over.
    const { requestId } = await callExpect<{ requestId: string }>("requestAccountDeletion", {}, t.ben);
    expectRefused(await eligible("userDirectory/u-1002"), "FAILED_PRECONDITION", "NOT_EXPIRED");
    await db().doc(`deletionRequests/${requestId}`).update({ graceEndsAt: new Date(Date.now() - 1000) });
    await callExpect("transitionLifecycle", { path: "userDirectory/u-1002", to: "PURGE_ELIGIBLE", reason: "lab" }, t.rita);
    expect((await docData("userDirectory/u-1002")).purgeDecision).toMatchObject({ reason: "AUTHORIZED_BY_POLICY" });
    // Still nothing held or unexpired moved.
    expect((await docData(O2)).lifecycleState).toBe("LEGAL_HOLD");
    expect((await docData(O1)).lifecycleState).toBe("SOFT_DELETED");
  });

  it("the evidence chain verifies after the scenario", async () => {
    const result = await verifyStoredChain();
    expect(result.findings).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.checked).toBeGreaterThanOrEqual(10);
  });
});
