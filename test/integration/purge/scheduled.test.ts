import { describe, expect, it } from "vitest";
import { nightlyPurge, purgeOnSchedule } from "../../../functions/src/entrypoints/scheduled/nightly-purge";
import { db } from "../../helpers/emulator";
import { evidence, putCustomer, putGoverned, requestDeletion, reset } from "./support";

describe("the scheduled nightlyPurge", () => {
  it("is a schedule function whose body purges what is due at the wall clock, as the system", async () => {
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
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    expect((await db().doc("events/e-due").get()).exists).toBe(false);
    const batches = (await evidence()).filter((e) => e.action === "PURGE_BATCH");
    expect(batches.length).toBeGreaterThan(0);
    for (const e of batches) expect(e).toMatchObject({ actor: { type: "system", id: "nightlyPurge" }, correlationId: `schedule:${scheduleTime}`, asOfMs: null });
  });
});
