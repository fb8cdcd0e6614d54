import { getFunctions } from "firebase-admin/functions";
import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { fanOutNightlyPurge } from "../../../functions/src/purge/request-tasks";
import type { PurgeRequestTask } from "../../../functions/src/purge/runner/tasks";
import { enqueueOnce } from "../../../functions/src/platform/tasks";
import { adminApp, callOk, db, idTokenFor, waitFor } from "../../helpers/emulator";
import { AFTER_GRACE, allGovernedPaths, evidence, expectChainVerifies, expectDeletionsExplained, putCustomer, requestDeletion, reset, runOptions, useDatabase } from "./support";

// These suites need the functions and Cloud Tasks emulators (the default `scripts/emulators.mjs exec`, after
// `npm run build`); they fail at once, never skip, when those are not running.
if (!process.env.CLOUD_TASKS_EMULATOR_HOST || !process.env.FUNCTIONS_EMULATOR_ORIGIN) {
  throw new Error("functions-emulator.test.ts needs the functions and tasks emulators: run without `--only firestore,auth` (and `npm run build` first).");
}
// The emulated functions work on the database in functions/.env.local: the default one.
useDatabase("(default)");

describe("the purge through the functions emulator", () => {
  it("enqueues a large unit on purgeChunk, and the chain of real tasks purges and verifies it", async () => {
    await reset();
    await putCustomer("u-52", { messages: 4, activity: 6 });
    const requestId = await requestDeletion("u-52");
    const before = await allGovernedPaths();
    const summary = await runNightlyPurge(runOptions({ sweep: false, batchSize: 2, fanOutThreshold: 3, chunkSteps: 3 }));
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["FANNED_OUT"]);
    await waitFor(async () => (await db().doc(`deletionRequests/${requestId}`).get()).get("state") === "PURGED", "request PURGED by purgeChunk tasks", 90_000);
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(4 + 6 + 2);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    const batches = entries.filter((e) => e.action === "PURGE_BATCH");
    expect(batches.length).toBeGreaterThanOrEqual(6);
    expect(batches.every((e) => e.actor.id === "purgeChunk")).toBe(true);
  }, 120_000);

  it("runs as nightlyPurge through runRetentionJob for a retention-admin, as of a time after the grace period", async () => {
    await reset();
    await putCustomer("u-53", { messages: 2, activity: 2 });
    const requestId = await requestDeletion("u-53");
    const before = await allGovernedPaths();
    const token = await idTokenFor({ uid: "r-3001", claims: { roles: ["retention-admin"] } });
    const summary = await callOk<{ job: string; asOf: string; units: UnitReport[] }>(
      "runRetentionJob",
      { job: "nightlyPurge", asOf: new Date(AFTER_GRACE).toISOString() },
      token,
    );
    expect(summary.job).toBe("nightlyPurge");
    expect(summary.asOf).toBe(new Date(AFTER_GRACE).toISOString());
    expect(summary.units.find((u) => u.unitKey === requestId)?.outcome).toBe("DONE");
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    const deleted = [...before].filter((p) => !after.has(p));
    expect(deleted).toHaveLength(2 + 2 + 2);
    await expectDeletionsExplained(entries, deleted);
    // The operator's run and its asOf are on the record; the purge's own entries carry the asOf, the system
    // actor, the operator who started it, and the run's correlation id.
    const run = (await evidence()).find((e) => e.action === "JOB_RUN");
    expect(run).toMatchObject({ actor: { type: "staff", id: "r-3001" }, asOfMs: AFTER_GRACE });
    for (const e of entries.filter((x) => x.action === "PURGE_BATCH")) {
      expect(e).toMatchObject({ asOfMs: AFTER_GRACE, actor: { type: "system", id: "nightlyPurge" }, correlationId: run!.correlationId });
      expect(e.detail?.startedBy).toBe("staff:r-3001");
    }
    // The same job records ERASURE_COMPLETE once the request's "fully gone by" date (35 days of backups) has passed.
    expect(summary).toMatchObject({ erasureComplete: { recorded: 0 } });
    const later = await callOk<{ erasureComplete: { recorded: number } }>("runRetentionJob", { job: "nightlyPurge", asOf: new Date(AFTER_GRACE + 35 * DAY_MS).toISOString() }, token);
    expect(later.erasureComplete).toMatchObject({ due: 1, recorded: 1 });
    const complete = (await expectChainVerifies()).filter((e) => e.action === "ERASURE_COMPLETE");
    expect(complete).toHaveLength(1);
    expect(complete[0]).toMatchObject({ requestId, actor: { type: "system", id: "nightlyPurge" }, asOfMs: AFTER_GRACE + 35 * DAY_MS, detail: { startedBy: "staff:r-3001" } });
  }, 120_000);

  it("the scheduled run's purgeRequest tasks erase every due request once through the real queue, a duplicate delivery included", async () => {
    await reset();
    const uids = ["u-54", "u-55", "u-56"];
    for (const uid of uids) await putCustomer(uid, { messages: 3, activity: 3 });
    const ids: string[] = [];
    for (const uid of uids) ids.push(await requestDeletion(uid));
    const before = await allGovernedPaths();
    // A run key of its own: the queue keeps task ids of earlier runs of this suite.
    const correlationId = `schedule:functions-emulator-${Date.now()}`;
    const queued: PurgeRequestTask[] = [];
    const queue = getFunctions(adminApp()).taskQueue<PurgeRequestTask>("purgeRequest");
    const summary = await fanOutNightlyPurge({
      ...runOptions({ sweep: false, correlationId }),
      enqueueRequest: async (task) => {
        queued.push(task);
        await queue.enqueue(task);
        // At-least-once delivery, made certain: the first request's task is queued a second time under another id.
        if (task.requestId === ids[0]) await queue.enqueue(task);
      },
    });
    expect(summary.requestTasks).toMatchObject({ enqueued: 3, stoppedBy: null });
    expect(queued.map((t) => t.requestId).sort()).toEqual([...ids].sort());
    await waitFor(async () => (await Promise.all(ids.map(async (id) => (await db().doc(`deletionRequests/${id}`).get()).get("state") as string))).every((s) => s === "PURGED"), "every request PURGED by purgeRequest tasks", 90_000);
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(3 * (1 + 3 + 1 + 3));
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    for (const id of ids) {
      expect(entries.filter((e) => e.action === "PURGE_DECIDED" && e.requestId === id)).toHaveLength(1);
      expect(entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === id)).toHaveLength(1);
      expect(entries.filter((e) => e.action === "PURGE_BATCH" && e.requestId === id).every((e) => e.actor.id === "purgeRequest" && e.correlationId === correlationId)).toBe(true);
    }
  }, 120_000);

  it("enqueueOnce queues a task id once: the real queue refuses the second, which is reported as already queued, not thrown", async () => {
    // An id of this run's own (the emulator keeps ids for its lifetime); the task finds no such notice and does nothing.
    const id = `pn-enqueue-once-${Date.now()}`;
    const task = { noticeId: `no-such-request-${Date.now()}~search-index` };
    expect(await enqueueOnce("deliverProcessorNotice", task, id)).toBe(true);
    expect(await enqueueOnce("deliverProcessorNotice", task, id)).toBe(false);
    // Any other refusal still throws: a queue that does not exist.
    await expect(enqueueOnce("noSuchQueue", task, `${id}-x`)).rejects.toThrow();
  });
});
