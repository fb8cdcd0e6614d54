import { describe, expect, it } from "vitest";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { db, waitFor } from "../../helpers/emulator";
import {
  allGovernedPaths,
  expectChainVerifies,
  expectDeletionsExplained,
  putCustomer,
  putGoverned,
  putSession,
  requestDeletion,
  reset,
  runOptions,
} from "./support";

const RUNNERS = 3;
const ROUNDS = 3;

describe("concurrent purge runs on the same data", () => {
  it(`process every request and sweep exactly once (${RUNNERS} runners, ${ROUNDS} rounds)`, async () => {
    let contended = 0;
    const spread: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await reset();
      const uids = ["u-21", "u-22", "u-23", "u-24"];
      const requestIds: string[] = [];
      for (const uid of uids) await putCustomer(uid, { messages: 2, activity: 2 });
      for (let i = 0; i < 4; i++) await putSession(`s-old-${i}`, "u-99", 40);
      for (let i = 0; i < 4; i++) await putGoverned(`events/e-old-${i}`, { type: "X" }, { ageDays: 100 });
      // A session of a requesting user that is also expired: both its request and the sweep want it.
      await putSession("s-both", "u-21", 35);
      for (const uid of uids) requestIds.push(await requestDeletion(uid));
      const before = await allGovernedPaths();

      const summaries = await Promise.all(
        Array.from({ length: RUNNERS }, (_, i) => runNightlyPurge(runOptions({ owner: `runner-${round}-${i}`, batchSize: 2 }))),
      );

      // Each unit finished in exactly one runner; the others found it leased or already done.
      const done = summaries.flatMap((s) => (s.units as UnitReport[]).filter((u) => u.outcome === "DONE").map((u) => u.unitKey));
      for (const key of [...requestIds, "sweep-sessions", "sweep-events"]) {
        expect(done.filter((k) => k === key), `${key} done once in round ${round}`).toHaveLength(1);
      }
      // The runs did overlap: some lease attempts found a unit already leased by another runner.
      contended += summaries.reduce((n, s) => n + Number(s.skippedLeased), 0);
      spread.push(summaries.map((s) => (s.units as UnitReport[]).filter((u) => u.outcome === "DONE").length).join("/"));
      const failed = summaries.flatMap((s) => (s.units as UnitReport[]).filter((u) => u.outcome === "FAILED" || u.outcome === "LEASE_LOST"));
      expect(failed).toEqual([]);

      const entries = await expectChainVerifies();
      for (const id of requestIds) {
        const req = (await db().doc(`deletionRequests/${id}`).get()).data()!;
        expect(req.state).toBe("PURGED");
        expect(entries.filter((e) => e.action === "PURGE_DECIDED" && e.requestId === id)).toHaveLength(1);
        expect(entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === id)).toHaveLength(1);
      }
      const after = await allGovernedPaths();
      const gone = [...before].filter((p) => !after.has(p));
      expect(gone).toContain("sessions/s-both");
      expect(gone).toContain("sessions/s-old-3/tokens/tk-s-old-3");
      expect(gone).toContain("events/e-old-0");
      await expectDeletionsExplained(entries, gone);
      // Masked orders stay.
      for (const uid of uids) expect(after.has(`tenants/t-acme/orders/o-${uid}`)).toBe(true);
    }
    console.info(`concurrency: ${contended} contended lease attempts; units done per runner by round: ${spread.join(", ")}`);
    expect(contended).toBeGreaterThan(0);
  }, 300_000);

  it("a runner that stalls past its lease loses the unit to another runner, which finishes it once", async () => {
    await reset();
    await putCustomer("u-31", { messages: 3, activity: 6 });
    const requestId = await requestDeletion("u-31");
    const before = await allGovernedPaths();
    let second: ReturnType<typeof runNightlyPurge> | null = null;
    const stalled = await runNightlyPurge(
      runOptions({
        owner: "runner-slow",
        sweep: false,
        hook: async (ctx) => {
          // While the first runner sits between batches, its lease runs out and a second runner takes over;
          // the first one wakes up while the second is still at work.
          if (ctx.point === "afterExecute" && ctx.batch === 1 && second === null) {
            second = runNightlyPurge(runOptions({ owner: "runner-fast", sweep: false, clock: () => Date.now() + 61_000 }));
            await waitFor(async () => (await db().doc(`deletionRequests/${requestId}`).get()).get("lease.owner") === "runner-fast", "takeover");
          }
        },
      }),
    );
    expect((stalled.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "LEASE_LOST"]]);
    expect(second).not.toBeNull();
    const fast = await second!;
    expect((fast.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "DONE"]]);
    const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(req.state).toBe("PURGED");
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone.length).toBeGreaterThanOrEqual(11);
    await expectDeletionsExplained(entries, gone);
    expect(entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === requestId)).toHaveLength(1);
  });
});
