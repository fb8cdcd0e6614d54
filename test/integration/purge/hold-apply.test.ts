import { describe, expect, it } from "vitest";
import { applyHoldFlags, placeHold } from "../../../functions/src/holds/service";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, evidence, expectChainVerifies, expectDeletionsExplained, expectHoldsFenced, putCustomer, requestDeletion, reset, runOptions, T0 } from "./support";

const STAFF = { type: "staff" as const, id: "c-2001" };
const noApply = (): Promise<void> => Promise.resolve();

describe("subtree holds: the record protects at once, the flags follow in resumable batches", () => {
  it("protects a whole tenant by its record before a single document is flagged", async () => {
    await reset();
    await putCustomer("u-81", { messages: 3, activity: 2 });
    const requestId = await requestDeletion("u-81");
    const before = await allGovernedPaths();
    // Placed, but its flagging never ran (as if its task were lost).
    const { holdId } = await placeHold({ targetPath: "tenants/t-acme", reasonCode: "LITIGATION", releaseAfterMs: null, actor: STAFF, nowMs: T0 }, noApply);
    const rec = (await db().doc(`retentionHolds/${holdId}`).get()).data()!;
    expect(rec.applied).toBe(false);
    expect((await db().doc("tenants/t-acme/users/u-81").get()).get("legalHold")).toBe(false);

    const summary = await runNightlyPurge(runOptions({ sweep: false, applyHold: noApply }));
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    const after = await allGovernedPaths();
    for (const p of [...before].filter((x) => x.startsWith("tenants/"))) expect(after.has(p), p).toBe(true);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, [...before].filter((p) => !after.has(p)));
    await expectHoldsFenced(entries, before);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
  });

  it("flags in batches from a cursor, records a document that vanished under the hold as an incident, and finishes with HOLD_APPLIED", async () => {
    await reset();
    await putCustomer("u-82", { messages: 4, activity: 1 });
    const { holdId } = await placeHold({ targetPath: "tenants/t-acme", reasonCode: "LITIGATION", releaseAfterMs: null, actor: STAFF, nowMs: T0 }, noApply);
    const victim = "tenants/t-acme/orders/o-u-82/messages/m-u-82-0";
    let lists = 0;
    let clock = 0;
    // A budget of one batch per call: the second call resumes from the cursor the first one saved.
    const first = await applyHoldFlags(holdId, {
      batchSize: 3,
      budgetMs: 0,
      clock: () => clock++,
      afterList: async (names) => {
        lists++;
        // Something deletes a listed document before the batch flags it.
        if (names.includes(victim)) await db().doc(victim).delete();
      },
    });
    expect(first).toBe("CONTINUE");
    expect((await db().doc(`retentionHolds/${holdId}`).get()).get("flagging.cursor")).toBeTypeOf("string");
    expect(await applyHoldFlags(holdId, { batchSize: 3 })).toBe("APPLIED");
    expect(lists).toBe(1);
    const rec = (await db().doc(`retentionHolds/${holdId}`).get()).data()!;
    const tenantDocs = [...(await allGovernedPaths())].filter((p) => p.startsWith("tenants/"));
    expect(rec).toMatchObject({ applied: true, affected: tenantDocs.length });
    for (const p of tenantDocs) expect((await db().doc(p).get()).get("holdIds"), p).toEqual([holdId]);
    const entries = await evidence();
    const vanished = entries.filter((e) => e.action === "HOLD_TARGET_VANISHED");
    expect(vanished.map((e) => e.paths)).toEqual([[victim]]);
    expect(vanished[0]!.decision.reason).toBe("DELETED_WHILE_HELD");
    const applied = entries.filter((e) => e.action === "HOLD_APPLIED");
    expect(applied).toHaveLength(1);
    expect(applied[0]!.counts).toEqual({ affected: tenantDocs.length, vanished: 1 });
    // Applying again is a no-op; the chain still verifies.
    expect(await applyHoldFlags(holdId)).toBe("APPLIED");
    await expectChainVerifies();
  });

  it("the nightly run resumes a flagging that stalled", async () => {
    await reset();
    await putCustomer("u-83", { messages: 1, activity: 1 });
    const { holdId } = await placeHold({ targetPath: "tenants/t-acme", reasonCode: "LITIGATION", releaseAfterMs: null, actor: STAFF, nowMs: T0 }, noApply);
    // No progress for longer than the stall threshold.
    await db().doc(`retentionHolds/${holdId}`).update({ "flagging.updatedAt": new Date(Date.now() - 3_600_000) });
    const summary = await runNightlyPurge(runOptions({ sweep: false }));
    expect(summary.resumedHolds).toBe(1);
    expect((await db().doc(`retentionHolds/${holdId}`).get()).get("applied")).toBe(true);
    expect((await db().doc("tenants/t-acme/users/u-83").get()).get("legalHold")).toBe(true);
  });
});
