import { describe, expect, it } from "vitest";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, expectBatchesDecided, expectChainVerifies, expectDeletionsExplained, putCustomer, requestDeletion, reset, runOptions } from "./support";

/** The streaming plan and the batch transaction at the edges a small subject does not reach. */
describe("the streaming purge", () => {
  it("plans a subject into many more batch records than the writer keeps in flight, and purges it", { timeout: 120_000 }, async () => {
    await reset();
    await putCustomer("u-81", { messages: 12, activity: 12 });
    const requestId = await requestDeletion("u-81");
    const before = await allGovernedPaths();
    // One document per batch: about 27 records, more than the plan's sink keeps in flight (16) and more than a
    // BulkWriter holds back before it sends (20): a sink that waited on unsent writes would hang here.
    const summary = await runNightlyPurge(runOptions({ sweep: false, batchSize: 1 }));
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    const records = await db().collection(`retentionJobs/purge-${requestId}/batches`).get();
    expect(records.size).toBeGreaterThan(24);
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    await expectDeletionsExplained(
      entries,
      [...before].filter((p) => !after.has(p)),
    );
    expect(await expectBatchesDecided(entries)).toBe(before.size - after.size);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
  });

  it("never deletes a parent over a child created after the plan, even one that had no children when planned", async () => {
    await reset();
    await putCustomer("u-82", { messages: 2, activity: 2 });
    const requestId = await requestDeletion("u-82");
    const profile = "tenants/t-acme/users/u-82";
    const child = `${profile}/devices/d-1`;
    let created = false;
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 2,
        hook: async (ctx: PurgeHookContext) => {
          // After the plan recorded the profile with nothing under it, another writer adds a document below.
          if (created || ctx.point !== "afterStart") return;
          created = true;
          await db().doc(child).set({ model: "phone" });
        },
      }),
    );
    expect(created).toBe(true);
    const report = (summary.units as UnitReport[])[0]!;
    // The profile is not deleted while something is under it; the child is not the erasure's to delete
    // (it carries no retention fields), so the erasure is not reported complete.
    expect((await db().doc(profile).get()).exists).toBe(true);
    expect((await db().doc(child).get()).exists).toBe(true);
    expect(report.outcome).toBe("BLOCKED");
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("BLOCKED");
    await expectChainVerifies();
  });

  it("a gone item cannot hide a new child from the batch's count: the commit fails on the gone item's precondition and the read path scans", async () => {
    await reset();
    await putCustomer("u-83", { messages: 2, activity: 0 });
    const requestId = await requestDeletion("u-83");
    let victim = "";
    let parent = "";
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 2,
        hook: async (ctx: PurgeHookContext) => {
          // The batch of the two message leaves, before its transaction: one of them goes, and a child appears under the
          // other. The range then holds two documents, as many as the batch has items: the count alone would say
          // "nothing under any item".
          if (victim || ctx.point !== "beforeExecute" || !ctx.paths || ctx.paths.length !== 2 || !ctx.paths.every((p) => p.includes("/messages/"))) return;
          [parent, victim] = ctx.paths as [string, string];
          await db().doc(victim).delete();
          await db().doc(`${parent}/notes/n-1`).set({ text: "added after the plan" });
        },
      }),
    );
    expect(victim).not.toBe("");
    expect((await db().doc(parent).get()).exists).toBe(true);
    expect((await db().doc(`${parent}/notes/n-1`).get()).exists).toBe(true);
    expect((summary.units as UnitReport[])[0]!.outcome).toBe("BLOCKED");
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("BLOCKED");
    await expectChainVerifies();
  });
});
