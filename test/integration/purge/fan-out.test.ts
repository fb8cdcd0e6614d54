import { describe, expect, it } from "vitest";
import type { PurgeChunkTask } from "../../../functions/src/purge/runner/tasks";
import { runNightlyPurge, runPurgeChunk, type UnitReport } from "../../../functions/src/purge/job";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, expectChainVerifies, expectDeletionsExplained, InjectedCrash, putCustomer, requestDeletion, reset, runOptions } from "./support";

/**
 * Scale-out: a unit over the fan-out threshold runs as a chain of purgeChunk tasks. The first test stands
 * in for Cloud Tasks with an in-memory queue that delivers every task twice and retries a failed one
 * (`fan-out-task-queue.test.ts` goes through the real task queue of the emulators).
 */
describe("scale-out over the purgeChunk task queue", () => {
  it("completes a large unit chunk by chunk, under duplicate deliveries and a failed task", async () => {
    await reset();
    await putCustomer("u-51", { messages: 8, activity: 12 });
    const requestId = await requestDeletion("u-51");
    const before = await allGovernedPaths();
    const queue: PurgeChunkTask[] = [];
    const enqueue = (t: PurgeChunkTask): Promise<void> => {
      queue.push(t);
      return Promise.resolve();
    };
    const summary = await runNightlyPurge(runOptions({ sweep: false, batchSize: 3, stepBatches: 1, fanOutThreshold: 5, chunkSteps: 2, enqueue }));
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["FANNED_OUT"]);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("lease.owner")).toMatch(/^purgeChunk:/);
    // The run itself did no step of the unit.
    expect((await db().doc(`retentionJobs/purge-${requestId}`).get()).get("nextStep")).toBe(0);

    let delivered = 0;
    let crashed = false;
    const outcomes: string[] = [];
    while (queue.length > 0) {
      const task = queue.shift()!;
      for (let copy = 0; copy < 2; copy++) {
        delivered++;
        try {
          outcomes.push(
            await runPurgeChunk(task, {
              enqueue,
              hook: (ctx) => {
                // A crash inside a delete transaction, before its commit: nothing of that batch happened.
                if (!crashed && ctx.point === "inExecute") {
                  crashed = true;
                  throw new InjectedCrash("chunk");
                }
              },
            }),
          );
        } catch (err) {
          if (!(err instanceof InjectedCrash)) throw err;
          // Cloud Tasks retries a task whose handler threw.
          outcomes.push(await runPurgeChunk(task, { enqueue }));
        }
      }
      // A duplicate delivery enqueues the same next chunk again; the real queue drops it by task id.
      const unique = new Map(queue.map((t) => [JSON.stringify(t), t]));
      queue.splice(0, queue.length, ...unique.values());
    }
    expect(crashed).toBe(true);
    expect(outcomes.filter((o) => o === "CONTINUED").length).toBeGreaterThanOrEqual(3);
    expect(outcomes).toContain("DONE");
    expect(delivered).toBeGreaterThanOrEqual(8);
    const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(req.state).toBe("PURGED");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(8 + 12 + 2);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(entries.filter((e) => e.action === "PURGE_BATCH").every((e) => e.actor.id === "purgeChunk")).toBe(true);
    expect(entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === requestId)).toHaveLength(1);
  });
});
