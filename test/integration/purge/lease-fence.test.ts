import { Timestamp } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import { releaseHoldById } from "../../../functions/src/holds/service";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import type { PurgeChunkTask } from "../../../functions/src/purge/runner/tasks";
import { chunkRetryLater, runNightlyPurge, runPurgeChunk, type ChunkOutcome, type UnitReport } from "../../../functions/src/purge/job";
import { db } from "../../helpers/emulator";
import {
  allGovernedPaths,
  evidence,
  expectBatchesDecided,
  expectChainVerifies,
  expectDeletionsExplained,
  hold,
  putCustomer,
  putSession,
  requestDeletion,
  reset,
  runOptions,
  T0,
} from "./support";

/**
 * Control records follow the lease (docs/PURGE-ENGINE.md, "Leases"): a runner stalls for real (its hook
 * sleeps on the wall clock) while other runners, on the same emulator, take its unit over and move it on.
 * Whatever the stalled runner does when it wakes (start a step, prune records, write late records, delete)
 * is fenced by its lease and commits nothing.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** When the lease on `path` expires, by the wall clock. */
async function leaseExpiresAt(path: string): Promise<number> {
  const at = (await db().doc(path).get()).get("lease.expiresAt") as unknown;
  if (!(at instanceof Timestamp)) throw new Error(`${path} has no lease`);
  return at.toMillis();
}

/** Sleeps until the lease on `path` has expired: the holder stalled past it. */
async function stallPastLease(path: string): Promise<void> {
  const wait = (await leaseExpiresAt(path)) - Date.now();
  await sleep(Math.max(0, wait) + 250);
}

/** The ids of a unit's batch records. */
async function recordIds(unitKey: string): Promise<string[]> {
  return (await db().collection(`retentionJobs/purge-${unitKey}/batches`).select().get()).docs.map((d) => d.id).sort();
}

describe("a runner whose own lease has expired has lost it", () => {
  it("although nobody took the unit over: it commits nothing after the expiry, and the next run finishes the request once", async () => {
    await reset();
    await putCustomer("u-81", { messages: 3, activity: 4 });
    const requestId = await requestDeletion("u-81");
    const before = await allGovernedPaths();
    let entriesAtWake = -1;
    const stalled = await runNightlyPurge(
      runOptions({
        owner: "runner-stalls-alone",
        sweep: false,
        leaseMs: 4_000,
        parallelBatches: 1,
        hook: async (ctx) => {
          if (entriesAtWake >= 0 || ctx.point !== "afterExecute" || ctx.batch !== 1) return;
          // Nobody else runs: the lease just runs out while this runner sits between two batches.
          await stallPastLease(`deletionRequests/${requestId}`);
          entriesAtWake = (await evidence()).length;
        },
      }),
    );
    expect(entriesAtWake, "the runner stalled").toBeGreaterThan(0);
    expect((stalled.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "LEASE_LOST"]]);
    // Nothing after the expiry: no batch, no step, no finalize.
    expect((await evidence()).length).toBe(entriesAtWake);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PROCESSING");

    const next = await runNightlyPurge(runOptions({ owner: "runner-next", sweep: false }));
    expect((next.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "DONE"]]);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    await expectDeletionsExplained(
      entries,
      [...before].filter((p) => !after.has(p)),
    );
    expect(entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === requestId)).toHaveLength(1);
  });
});

describe("records follow the lease", () => {
  it("a stalled runner's prune does not delete a later round's records", async () => {
    await reset();
    await putCustomer("u-82", { messages: 3, activity: 2 });
    const requestId = await requestDeletion("u-82");
    const message = "tenants/t-acme/orders/o-u-82/messages/m-u-82-1";
    let laterRound: string[] | null = null;
    const stalled = await runNightlyPurge(
      runOptions({
        owner: "runner-stalled",
        sweep: false,
        hook: async (ctx) => {
          if (laterRound !== null || ctx.point !== "beforePrune") return;
          // Round 1 has started; this runner stalls before removing older plans' records. Meanwhile a hold
          // keeps a message, a second runner takes the lease over and finishes round 1 RETAINED_UNDER_HOLD,
          // the hold is released, and a third runner plans, runs and finishes round 2.
          const holdId = await hold(message);
          const second = await runNightlyPurge(runOptions({ owner: "runner-second", sweep: false, clock: () => Date.now() + 61_000 }));
          expect((second.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
          expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
          await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs: T0 });
          const third = await runNightlyPurge(runOptions({ owner: "runner-third", sweep: false, clock: () => Date.now() + 61_000 }));
          expect((third.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
          const cp = (await db().doc(`retentionJobs/purge-${requestId}`).get()).data()!;
          expect(cp.round).toBe(2);
          laterRound = (await recordIds(requestId)).filter((id) => id.startsWith(`${cp.planId as string}-`));
          expect(laterRound.length).toBeGreaterThan(0);
        },
      }),
    );
    expect(laterRound, "the runner stalled before its prune").not.toBeNull();
    // Round 2's records are all there, and they still explain every deletion of round 2.
    const cp = (await db().doc(`retentionJobs/purge-${requestId}`).get()).data()!;
    expect((await recordIds(requestId)).filter((id) => id.startsWith(`${cp.planId as string}-`))).toEqual(laterRound);
    expect((stalled.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "LEASE_LOST"]]);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    const entries = await expectChainVerifies();
    const roundTwo = entries.filter((e) => e.action === "PURGE_BATCH" && (e.detail as { round?: number }).round === 2);
    expect(roundTwo.length).toBeGreaterThan(0);
    // (Round 1's records went with round 2's start, as they should: its story is in the evidence.)
    expect(await expectBatchesDecided([...roundTwo, ...entries.filter((e) => e.action === "PURGE_DECIDED")])).toBeGreaterThan(0);
  });

  it("a stalled runner's late sweep writes no late records once its lease is gone", async () => {
    await reset();
    await putCustomer("u-83", { messages: 2, activity: 2 });
    await putSession("s-83", "u-83", 1);
    const requestId = await requestDeletion("u-83");
    const token = "sessions/s-83/tokens/tk-s-83";
    const late = "sessions/s-83/tokens/tk-late";
    const template = (await db().doc(token).get()).data()!;
    let woke = false;
    const stalled = await runNightlyPurge(
      runOptions({
        owner: "runner-stalled",
        sweep: false,
        hook: async (ctx) => {
          if (woke || ctx.point !== "beforeFinalize") return;
          woke = true;
          // About to sweep for late finds, this runner stalls; a second runner takes over and finishes the
          // round. Then a token is issued under the session the round deleted: this runner's sweep would find it.
          const second = await runNightlyPurge(runOptions({ owner: "runner-second", sweep: false, clock: () => Date.now() + 61_000 }));
          expect((second.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
          await db().doc(late).set({ ...template, kind: "issued after the erasure" });
        },
      }),
    );
    expect(woke, "the runner stalled before its late sweep").toBe(true);
    expect((stalled.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "LEASE_LOST"]]);
    expect((await recordIds(requestId)).filter((id) => id.includes("-late-"))).toEqual([]);
    expect((await db().doc(late).get()).exists).toBe(true);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    await expectChainVerifies();
  });
});

describe("every delivery of a purgeChunk task has a lease owner of its own", () => {
  it("a duplicate delivery is BUSY while the first runs, and a delivery that stalls past its lease loses it to the next one", async () => {
    await reset();
    await putCustomer("u-84", { messages: 8, activity: 12 });
    const requestId = await requestDeletion("u-84");
    const before = await allGovernedPaths();
    const queue: PurgeChunkTask[] = [];
    const enqueue = (t: PurgeChunkTask): Promise<void> => {
      queue.push(t);
      return Promise.resolve();
    };
    const summary = await runNightlyPurge(runOptions({ sweep: false, batchSize: 3, stepBatches: 1, fanOutThreshold: 5, chunkSteps: 2, enqueue }));
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["FANNED_OUT"]);
    const task = queue.shift()!;
    const requestPath = `deletionRequests/${requestId}`;

    let busy: ChunkOutcome | null = null;
    let bOutcome: Promise<ChunkOutcome> | null = null;
    let aCommitsAfterWake = 0;
    let aWoke = false;
    let bReached!: () => void;
    const bAtWork = new Promise<void>((r) => (bReached = r));
    let aFinished!: () => void;
    const aDone = new Promise<void>((r) => (aFinished = r));
    const hookA = async (ctx: PurgeHookContext) => {
      if (ctx.point === "afterExecute" && aWoke) aCommitsAfterWake++;
      if (bOutcome !== null || ctx.point !== "beforeExecute") return;
      // A copy of the task delivered while A's lease runs finds it busy.
      busy = await runPurgeChunk(task, { enqueue, deliveryId: "copy" });
      expect(busy, "a copy delivered while A holds the lease").toBe("BUSY");
      // A stalls past its lease; Cloud Tasks delivers the task again (B), which takes the lease over and is
      // at work when A wakes.
      await stallPastLease(requestPath);
      bOutcome = runPurgeChunk(task, {
        enqueue,
        deliveryId: "B",
        hook: async (b) => {
          if (b.point !== "beforeExecute") return;
          bReached();
          await aDone;
        },
      });
      await bAtWork;
      aWoke = true;
    };
    const aOutcome = await runPurgeChunk(task, { enqueue, deliveryId: "A", leaseMs: 3_000, hook: hookA }).finally(() => aFinished());
    expect(bOutcome, "A stalled and B was delivered").not.toBeNull();
    expect(busy).toBe("BUSY");
    expect(aOutcome).toBe("LEASE_LOST");
    expect(aCommitsAfterWake).toBe(0);
    expect(await bOutcome!).toBe("CONTINUED");
    // Each delivery worked under its own owner: the chain's lease is handed back between chunks.
    expect((await db().doc(requestPath).get()).get("lease.owner")).toBe(`purgeChunk:${requestId}:r1:g1`);

    const outcomes: ChunkOutcome[] = [];
    while (queue.length > 0) outcomes.push(await runPurgeChunk(queue.shift()!, { enqueue }));
    expect(outcomes).toContain("DONE");
    expect((await db().doc(requestPath).get()).get("state")).toBe("PURGED");
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(8 + 12 + 2);
    await expectDeletionsExplained(entries, gone);
  });
  it("a delivery that stalls past its lease with no other delivery at work is delivered again, and the chain goes on to the end", async () => {
    await reset();
    await putCustomer("u-85", { messages: 8, activity: 12 });
    const requestId = await requestDeletion("u-85");
    const queue: PurgeChunkTask[] = [];
    const enqueue = (t: PurgeChunkTask): Promise<void> => {
      queue.push(t);
      return Promise.resolve();
    };
    const summary = await runNightlyPurge(runOptions({ sweep: false, batchSize: 3, stepBatches: 1, fanOutThreshold: 5, chunkSteps: 2, enqueue }));
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["FANNED_OUT"]);
    const task = queue.shift()!;
    const requestPath = `deletionRequests/${requestId}`;
    let stalled = false;
    const outcome = await runPurgeChunk(task, {
      enqueue,
      deliveryId: "A",
      leaseMs: 2_000,
      hook: async (ctx) => {
        if (stalled || ctx.point !== "beforeExecute") return;
        stalled = true;
        // A stalls past its lease; nobody is delivered meanwhile.
        await stallPastLease(requestPath);
      },
    });
    expect(stalled).toBe(true);
    expect(outcome).toBe("LEASE_LOST");
    // Either the delivery enqueued the next chunk, or the task is to be delivered again: else nothing ever
    // runs the rest of the round (the lease is nobody's, and no task of the chain is left).
    expect(queue.length > 0 || chunkRetryLater(outcome), "the chain has a next delivery").toBe(true);
    if (queue.length === 0) queue.push(task);
    const outcomes: ChunkOutcome[] = [];
    while (queue.length > 0) outcomes.push(await runPurgeChunk(queue.shift()!, { enqueue }));
    expect(outcomes).toContain("DONE");
    expect((await db().doc(requestPath).get()).get("state")).toBe("PURGED");
    await expectChainVerifies();
  });
});

