import { beforeEach, describe, expect, it } from "vitest";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, expectChainVerifies, expectDeletionsExplained, hold, pathCounts, putCustomer, requestDeletion, reset, runOptions } from "./support";

/** Which batch each path of the request's current round sits in. */
/** Each planned path's batch, as its position in the round's execution order (what hooks call `batch`). */
async function batchOf(requestId: string): Promise<Map<string, number>> {
  const layout = (await db().doc(`retentionJobs/purge-${requestId}`).get()).get("layout") as { key: string; batches: number }[];
  const first = new Map<string, number>();
  let n = 0;
  for (const s of layout) {
    first.set(s.key, n);
    n += s.batches;
  }
  const snap = await db().collection(`retentionJobs/purge-${requestId}/batches`).get();
  const out = new Map<string, number>();
  for (const d of snap.docs) for (const i of d.get("items") as { path: string }[]) out.set(i.path, first.get(d.get("stage") as string)! + (d.get("seq") as number));
  return out;
}

describe("a hold placed while the purge runs", () => {
  let requestId: string;
  let before: Set<string>;

  beforeEach(async () => {
    await reset();
    await putCustomer("u-41", { messages: 6, activity: 6 });
    requestId = await requestDeletion("u-41");
    before = await allGovernedPaths();
  });

  it("stops deletion of its target from the next batch on (document hold between batches)", async () => {
    const target = "activity/a-u-41-01";
    let placedAfterBatch: number | null = null;
    let targetBatch: number | null = null;
    let holdId = "";
    const summary = await runNightlyPurge(
      runOptions({
        // Batches one after another: these holds land between two batches.
        parallelBatches: 1,
        sweep: false,
        batchSize: 2,
        hook: async (ctx: PurgeHookContext) => {
          // After the first external-copy batch is deleted, a compliance officer holds a copy in the next one.
          if (ctx.point !== "afterExecute" || placedAfterBatch !== null) return;
          const batches = await batchOf(requestId);
          if (batches.get("activity/a-u-41-00") !== ctx.batch) return;
          targetBatch = batches.get(target)!;
          holdId = await hold(target);
          placedAfterBatch = ctx.batch;
        },
      }),
    );
    expect(placedAfterBatch).not.toBeNull();
    expect(targetBatch).toBe(placedAfterBatch! + 1);
    expect((summary.units as UnitReport[])[0]?.outcome).toBe("DONE");
    const after = await allGovernedPaths();
    expect(after.has(target)).toBe(true);
    const doc = (await db().doc(target).get()).data()!;
    expect(doc.legalHold).toBe(true);
    expect(doc.holdIds).toEqual([holdId]);
    // Everything else of the subject went; the held copy is documented, so the request still completes.
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toContain("activity/a-u-41-00");
    expect(gone).toContain("activity/a-u-41-02");
    expect(gone).toContain("activity/a-u-41-05");
    expect(gone).toContain("tenants/t-acme/users/u-41");
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(pathCounts(entries, "PURGE_BATCH").has(target)).toBe(false);
    expect(pathCounts(entries, "PURGE_HOLD_STOPPED").get(target)).toBe(1);
    // Its batch had decided to delete it before the hold: the hold moved it to LEGAL_HOLD, and the fence
    // made its batch read it again and stop.
    expect(doc.lifecycleState).toBe("LEGAL_HOLD");
    // The erasure is complete except for the held copy: it is deferred, not reported done.
    const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(req.state).toBe("RETAINED_UNDER_HOLD");
    expect((req.retainedUnderHold as { paths: string[] }).paths).toEqual([target]);
  });

  it("stops a whole tenant subtree from the next batch on (subtree hold between batches)", async () => {
    let placed = false;
    await runNightlyPurge(
      runOptions({
        // Batches one after another: these holds land between two batches.
        parallelBatches: 1,
        sweep: false,
        batchSize: 2,
        hook: async (ctx: PurgeHookContext) => {
          // After the first batch of nested messages, the tenant is put on hold.
          if (ctx.point === "afterExecute" && ctx.batch === 0 && !placed) {
            placed = true;
            await hold("tenants/t-acme");
          }
        },
      }),
    );
    expect(placed).toBe(true);
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p)).sort();
    // Batch 0 (two messages) went before the hold; nothing under the tenant went after it; external copies
    // are outside the tenant's subtree and went.
    const inTenant = gone.filter((p) => p.startsWith("tenants/"));
    expect(inTenant).toHaveLength(2);
    expect(inTenant.every((p) => p.includes("/messages/"))).toBe(true);
    expect(after.has("tenants/t-acme/users/u-41")).toBe(true);
    expect(gone).toContain("userDirectory/u-41");
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    // The masked order is under the hold too: not masked.
    expect((await db().doc("tenants/t-acme/orders/o-u-41").get()).get("customerName")).toBe("Customer u-41");
    // Everything left is documented (held, or kept above held data): all that may go has gone, and the
    // rest waits for the hold.
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
  });

  it("stops a document held after its batch was marked, right before the batch's delete transaction", async () => {
    let target: string | null = null;
    await runNightlyPurge(
      runOptions({
        // Batches one after another: these holds land between two batches.
        parallelBatches: 1,
        sweep: false,
        batchSize: 3,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point === "beforeExecute" && target === null && ctx.paths.some((p) => p.startsWith("activity/"))) {
            target = ctx.paths.find((p) => p.startsWith("activity/"))!;
            await hold(target);
          }
        },
      }),
    );
    expect(target).not.toBeNull();
    expect(await db().doc(target!).get().then((s) => s.exists)).toBe(true);
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(pathCounts(entries, "PURGE_HOLD_STOPPED").get(target!)).toBe(1);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
  });
});
