import { describe, expect, it } from "vitest";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/jobs/nightly-purge";
import { db, waitFor } from "../../helpers/emulator";
import { allGovernedPaths, expectChainVerifies, expectDeletionsExplained, putCustomer, requestDeletion, reset, runOptions } from "./support";

// This suite needs the functions and Cloud Tasks emulators (the default `scripts/emulators.mjs exec`); it
// fails at once, never skips, when they are not running.
if (!process.env.CLOUD_TASKS_EMULATOR_HOST || !process.env.FUNCTIONS_EMULATOR_ORIGIN) {
  throw new Error("fan-out-task-queue.test.ts needs the functions and tasks emulators: run without `--only firestore,auth` (and `npm run build` first).");
}

describe("scale-out through the real task queue", () => {
  it("enqueues a large unit on purgeChunk, and the chain of tasks purges and verifies it", async () => {
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
});
