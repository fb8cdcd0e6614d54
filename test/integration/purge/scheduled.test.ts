import { afterEach, describe, expect, it, vi } from "vitest";
import { nightlyPurge, purgeOnSchedule } from "../../../functions/src/entrypoints/scheduled/nightly-purge";
import { runPurgeRequest } from "../../../functions/src/purge/request-tasks";
import type { PurgeRequestTask } from "../../../functions/src/purge/runner/tasks";
import { db } from "../../helpers/emulator";
import { evidence, putCustomer, putGoverned, requestDeletion, reset } from "./support";

describe("the scheduled nightlyPurge", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("with RETENTION_PURGE_REQUEST_TASKS off, its body purges what is due at the wall clock itself, as the system", async () => {
    vi.stubEnv("RETENTION_PURGE_REQUEST_TASKS", "false");
    expect(typeof nightlyPurge.run).toBe("function");
    await reset();
    await putCustomer("u-71", { messages: 1, activity: 1 });
    await putGoverned("events/e-due", { type: "X" }, { ageDays: 100 });
    const requestId = await requestDeletion("u-71");
    const scheduleTime = new Date().toISOString();
    const summary = await purgeOnSchedule({ scheduleTime });
    expect(summary.asOf).toBeNull();
    // The schedule runs the completion step after the purge: nothing is past its "fully gone by" date yet.
    expect(summary.erasureComplete).toEqual({ due: 0, recorded: 0, waitingForArchive: 0, skipped: 0 });
    expect(summary.requestTasks).toBeUndefined();
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    expect((await db().doc("events/e-due").get()).exists).toBe(false);
    const batches = (await evidence()).filter((e) => e.action === "PURGE_BATCH");
    expect(batches.length).toBeGreaterThan(0);
    for (const e of batches) expect(e).toMatchObject({ actor: { type: "system", id: "nightlyPurge" }, correlationId: `schedule:${scheduleTime}`, asOfMs: null });
  });

  it("by default hands each due request to purgeRequest and sweeps itself; the task purges at the wall clock", async () => {
    await reset();
    await putCustomer("u-72", { messages: 1, activity: 1 });
    await putGoverned("events/e-due", { type: "X" }, { ageDays: 100 });
    const requestId = await requestDeletion("u-72");
    const scheduleTime = new Date().toISOString();
    const queued: PurgeRequestTask[] = [];
    const summary = await purgeOnSchedule({ scheduleTime }, Date.now(), {
      enqueueRequest: (t) => {
        queued.push(t);
        return Promise.resolve();
      },
    });
    expect(summary.requestTasks).toMatchObject({ enqueued: 1, stoppedBy: null });
    expect(queued).toEqual([expect.objectContaining({ requestId, asOfMs: null, correlationId: `schedule:${scheduleTime}` })]);
    expect((await db().doc("events/e-due").get()).exists).toBe(false);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PENDING");
    expect((await runPurgeRequest(queued[0]!)).outcome).toBe("DONE");
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    const batches = (await evidence()).filter((e) => e.action === "PURGE_BATCH" && e.requestId === requestId);
    expect(batches.length).toBeGreaterThan(0);
    for (const e of batches) expect(e).toMatchObject({ actor: { type: "system", id: "purgeRequest" }, correlationId: `schedule:${scheduleTime}`, asOfMs: null });
  });
});
