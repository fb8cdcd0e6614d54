import { getAuth } from "firebase-admin/auth";
import pLimit from "p-limit";
import { describe, expect, it } from "vitest";
import { approvePurgeRunHandler } from "../../../functions/src/entrypoints/callable/approve-purge-run";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { runPurgeChunk } from "../../../functions/src/purge/job";
import { fanOutNightlyPurge, retryLater, runPurgeRequest, type FanOutOptions, type RequestTaskReport } from "../../../functions/src/purge/request-tasks";
import type { PurgeHook } from "../../../functions/src/purge/runner/env";
import type { UnitRunOptions } from "../../../functions/src/purge/runner/drive";
import { requestTaskId, type PurgeChunkTask, type PurgeRequestTask } from "../../../functions/src/purge/runner/tasks";
import { adminApp, db } from "../../helpers/emulator";
import {
  AFTER_GRACE,
  allGovernedPaths,
  evidence,
  expectBatchesDecided,
  expectChainVerifies,
  expectDeletionsExplained,
  expectHoldsFenced,
  hold,
  InjectedCrash,
  pathCounts,
  putCustomer,
  putGoverned,
  requestDeletion,
  reset,
  runOptions,
  T0,
} from "./support";

/**
 * Account erasures as tasks: the scheduled run enqueues one purgeRequest task per due request, and each task runs
 * the leased unit of exactly its request. These suites stand in for Cloud Tasks with an in-memory queue (ids
 * deduplicated as Cloud Tasks does) and deliver its tasks in-process, several at a time, twice, or after a crash;
 * `functions-emulator.test.ts` goes through the real queue of the emulators.
 */

const HOUR = 3_600_000;

function memoryQueue() {
  const byId = new Map<string, PurgeRequestTask>();
  return {
    tasks: () => [...byId.values()],
    enqueue: (t: PurgeRequestTask): Promise<void> => {
      // A task id that exists already is not queued again (Cloud Tasks refuses it).
      if (!byId.has(requestTaskId(t))) byId.set(requestTaskId(t), t);
      return Promise.resolve();
    },
  };
}

const fanOut = (over: Partial<FanOutOptions> = {}) => fanOutNightlyPurge({ ...runOptions({ correlationId: "schedule:test" }), pageSize: 2, concurrency: 3, ...over });

const deliver = (task: PurgeRequestTask, opts: UnitRunOptions = {}): Promise<RequestTaskReport> => runPurgeRequest(task, { batchSize: 2, leaseMs: 60_000, ...opts });

/** Delivers every task, `concurrency` at a time. */
async function deliverAll(tasks: readonly PurgeRequestTask[], concurrency: number, opts: UnitRunOptions = {}): Promise<RequestTaskReport[]> {
  const limit = pLimit(concurrency);
  return Promise.all(tasks.map((t) => limit(() => deliver(t, opts))));
}

const stateOf = async (requestId: string) => (await db().doc(`deletionRequests/${requestId}`).get()).get("state") as string;
const task = (requestId: string, runKey = "run-test"): PurgeRequestTask => ({ requestId, runKey, nowMs: AFTER_GRACE, asOfMs: AFTER_GRACE, correlationId: "test" });

describe("the scheduled purge hands each due deletion request to purgeRequest", () => {
  it("enqueues one task per due request, oldest grace end first, a page at a time, once per run however often the run is retried", async () => {
    await reset();
    const uids = ["u-61", "u-62", "u-63", "u-64", "u-65"];
    const ids: string[] = [];
    // Opened an hour apart, the first last: grace ends in the reverse order of opening.
    for (const [i, uid] of uids.entries()) {
      await putCustomer(uid, { messages: 2, activity: 2 });
      ids.push(await requestDeletion(uid, "t-acme", T0 + (uids.length - i) * HOUR));
    }
    await putCustomer("u-69");
    const inGrace = await requestDeletion("u-69", "t-acme", AFTER_GRACE - DAY_MS);
    await putGoverned("events/e-due", { type: "X" }, { ageDays: 100 });
    const before = await allGovernedPaths();
    const queue = memoryQueue();

    const summary = await fanOut({ enqueueRequest: queue.enqueue });
    const runKey = (summary.requestTasks as { runKey: string }).runKey;
    expect(summary.requestTasks).toEqual({ runKey, enqueued: 5, pages: 3, stoppedBy: null, shards: 3 });
    expect(queue.tasks().map((t) => t.requestId)).toEqual([...ids].reverse());
    expect(queue.tasks().every((t) => t.runKey === runKey && t.nowMs === AFTER_GRACE && t.asOfMs === AFTER_GRACE)).toBe(true);
    // The scheduler itself touched no request: no lease, no plan, nothing deleted.
    for (const id of [...ids, inGrace]) {
      const req = (await db().doc(`deletionRequests/${id}`).get()).data()!;
      expect(req.state).toBe("PENDING");
      expect(req.lease).toBeUndefined();
    }
    // It did the rest of the run: the policy sweep, whose admission debited the run's budget.
    expect((await db().doc("events/e-due").get()).exists).toBe(false);
    expect((await db().doc(`retentionJobs/purgerun-${runKey}/admitted/sweep-events`).get()).get("total")).toBe(1);

    // The schedule's retry (the same scheduled run) queues nothing twice; a cap stops the intake early.
    const again = await fanOut({ enqueueRequest: queue.enqueue });
    expect((again.requestTasks as { runKey: string }).runKey).toBe(runKey);
    expect(queue.tasks()).toHaveLength(5);
    const capped = memoryQueue();
    expect((await fanOut({ enqueueRequest: capped.enqueue, correlationId: "schedule:capped", maxRequestTasks: 3 })).requestTasks).toMatchObject({ enqueued: 3, stoppedBy: "MAX_REQUEST_TASKS" });
    expect(capped.tasks().map((t) => t.requestId)).toEqual([...ids].reverse().slice(0, 3));

    // The queue delivers them, three at a time: every erasure is done once, each deletion explained once.
    const reports = await deliverAll(queue.tasks(), 3);
    expect(reports.map((r) => r.outcome)).toEqual(["DONE", "DONE", "DONE", "DONE", "DONE"]);
    for (const id of ids) expect(await stateOf(id)).toBe("PURGED");
    expect(await stateOf(inGrace)).toBe("PENDING");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(await expectBatchesDecided(entries)).toBeGreaterThan(0);
    for (const id of ids) {
      expect(entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === id)).toHaveLength(1);
      expect(entries.filter((e) => e.action === "PURGE_BATCH" && e.requestId === id).every((e) => e.actor.id === "purgeRequest" && e.correlationId === "schedule:test")).toBe(true);
    }
  });

  it("a task delivered twice at once does the work once: the second delivery finds it busy, a later one finds it done", async () => {
    await reset();
    await putCustomer("u-66", { messages: 3, activity: 3 });
    const requestId = await requestDeletion("u-66");
    const before = await allGovernedPaths();
    let releaseWinner!: () => void;
    const loserDone = new Promise<void>((r) => (releaseWinner = r));
    // The delivery that wins the lease waits until the other delivery has returned: they truly overlap.
    const hook: PurgeHook = async (ctx) => {
      if (ctx.point === "afterLease") await loserDone;
    };
    const deliveries = [0, 1].map(() =>
      deliver(task(requestId), { hook }).then((r) => {
        if (r.outcome !== "DONE") releaseWinner();
        return r;
      }),
    );
    const reports = await Promise.all(deliveries);
    expect(reports.map((r) => r.outcome).sort()).toEqual(["BUSY", "DONE"]);
    // BUSY is retried by the queue; by then the request is done, and the retry does nothing.
    expect(retryLater(reports.find((r) => r.outcome === "BUSY")!)).toBe(true);
    const late = await deliver(task(requestId));
    expect(late.outcome).toBe("NOT_TAKEN");
    expect(retryLater(late)).toBe(false);
    expect(await stateOf(requestId)).toBe("PURGED");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(1 + 3 + 1 + 3);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    for (const action of ["PURGE_DECIDED", "PURGE_VERIFIED", "AUTH_ACCOUNT_DELETE_INTENT"]) {
      expect(entries.filter((e) => e.action === action && e.requestId === requestId), action).toHaveLength(1);
    }
  });

  it("a delivery that crashes mid-unit frees the request, and the retry resumes from the checkpoint", async () => {
    await reset();
    await putCustomer("u-67", { messages: 4, activity: 4 });
    const requestId = await requestDeletion("u-67");
    const before = await allGovernedPaths();
    let crashed = 0;
    const crash: PurgeHook = (ctx) => {
      // The third delete batch's transaction fails before its commit.
      if (ctx.point === "inExecute" && ctx.batch === 2) {
        crashed++;
        throw new InjectedCrash("purgeRequest");
      }
    };
    await expect(deliver(task(requestId), { hook: crash })).rejects.toBeInstanceOf(InjectedCrash);
    expect(crashed).toBe(1);
    const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(req.state).toBe("PROCESSING");
    expect(req.lease).toBeUndefined();
    expect((await db().doc(`retentionJobs/purge-${requestId}`).get()).get("phase")).toBe("RUNNING");
    const retry = await deliver(task(requestId));
    expect(retry.outcome).toBe("DONE");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(entries.filter((e) => e.action === "PURGE_DECIDED" && e.requestId === requestId)).toHaveLength(1);
  });

  it("a hold placed while per-request tasks run stops what it covers in every task, and only that", async () => {
    await reset();
    const [a, b, c] = ["u-81", "u-82", "u-83"];
    for (const uid of [a, b, c]) await putCustomer(uid, { messages: 4, activity: 4 });
    const ids = [await requestDeletion(a), await requestDeletion(b), await requestDeletion(c)];
    const before = await allGovernedPaths();
    const heldB = "activity/a-u-82-03";
    const heldC = "tenants/t-acme/orders/o-u-83/messages/m-u-83-3";
    let placed!: () => void;
    const holdsPlaced = new Promise<void>((r) => (placed = r));
    let placing = false;
    const hook: PurgeHook = async (ctx) => {
      // a's first delete batch is done: a compliance officer holds one document of b and one of c, whose tasks
      // planned (and decided) before the hold and wait at their first delete batch until it stands.
      if (ctx.unitKey === ids[0] && ctx.point === "afterExecute" && !placing) {
        placing = true;
        await hold(heldB);
        await hold(heldC);
        placed();
      }
      if (ctx.unitKey !== ids[0] && ctx.point === "beforeExecute") await holdsPlaced;
    };
    const reports = await deliverAll(ids.map((id) => task(id)), 3, { hook });
    expect(reports.map((r) => r.outcome)).toEqual(["DONE", "DONE", "DONE"]);
    expect(await stateOf(ids[0]!)).toBe("PURGED");
    expect(await stateOf(ids[1]!)).toBe("RETAINED_UNDER_HOLD");
    expect(await stateOf(ids[2]!)).toBe("RETAINED_UNDER_HOLD");
    const after = await allGovernedPaths();
    expect(after.has(heldB)).toBe(true);
    expect(after.has(heldC)).toBe(true);
    const gone = [...before].filter((p) => !after.has(p));
    // Everything else of the three subjects went.
    expect(gone).toContain("activity/a-u-82-02");
    expect(gone).toContain("tenants/t-acme/orders/o-u-83/messages/m-u-83-2");
    expect(gone).toContain("tenants/t-acme/users/u-81");
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(await expectHoldsFenced(entries, before)).toBeGreaterThanOrEqual(2);
    expect(pathCounts(entries, "PURGE_HOLD_STOPPED").get(heldB)).toBe(1);
    expect(pathCounts(entries, "PURGE_HOLD_STOPPED").get(heldC)).toBe(1);
  });

  it("a subject over the fan-out threshold still goes from its task to the purgeChunk chain", async () => {
    await reset();
    await putCustomer("u-68", { messages: 8, activity: 12 });
    const requestId = await requestDeletion("u-68");
    const before = await allGovernedPaths();
    const chunks: PurgeChunkTask[] = [];
    const enqueue = (t: PurgeChunkTask): Promise<void> => {
      chunks.push(t);
      return Promise.resolve();
    };
    const report = await deliver(task(requestId), { batchSize: 3, stepBatches: 1, fanOutThreshold: 5, chunkSteps: 2, enqueue });
    expect(report.outcome).toBe("FANNED_OUT");
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("lease.owner")).toMatch(/^purgeChunk:/);
    // A second delivery of the request's task leaves the chain alone.
    expect((await deliver(task(requestId))).outcome).toBe("NOT_TAKEN");
    let last = "";
    while (chunks.length > 0) last = await runPurgeChunk(chunks.shift()!, { enqueue });
    expect(last).toBe("DONE");
    expect(await stateOf(requestId)).toBe("PURGED");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(8 + 12 + 2);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    expect(entries.find((e) => e.action === "PURGE_DECIDED" && e.requestId === requestId)?.actor.id).toBe("purgeRequest");
    expect(entries.filter((e) => e.action === "PURGE_BATCH").every((e) => e.actor.id === "purgeChunk")).toBe(true);
  });
});

describe("the mass-deletion brake over a fanned-out run", () => {
  const RITA = { uid: "r-3001", tenantId: null, roles: ["retention-admin" as const] };

  it("admits units only while the run's budget holds them all together, and defers the rest to the next run", async () => {
    await reset();
    // Four erasures of 12 user-delete documents each, in a class of 68 (20 more belong to nobody erased): the
    // share rule lets one run delete 34 of them. Each erasure is within it alone; three together are not.
    const uids = ["u-91", "u-92", "u-93", "u-94"];
    for (const uid of uids) await putCustomer(uid, { messages: 4, activity: 6 });
    for (let i = 0; i < 20; i++) await putGoverned(`activity/a-u-99-${String(i).padStart(2, "0")}`, { subjectUid: "u-99", type: "SIGNED_IN" });
    const ids: string[] = [];
    for (const uid of uids) ids.push(await requestDeletion(uid));
    const queue = memoryQueue();
    const first = await fanOut({ enqueueRequest: queue.enqueue, concurrency: 2 });
    const runKey = (first.requestTasks as { runKey: string }).runKey;
    expect((await db().doc(`retentionJobs/purgerun-${runKey}`).get()).data()).toMatchObject({ shards: 2, classSizes: { "user-delete": 68 }, limits: { brakeMaxShareOfClass: 0.5 } });
    // All four at once, as a queue with room for them would run them.
    const reports = await deliverAll(queue.tasks(), 4);
    const done = reports.filter((r) => r.outcome === "DONE");
    const deferred = reports.filter((r) => r.outcome === "BRAKE_DEFERRED");
    expect(done).toHaveLength(2);
    expect(deferred).toHaveLength(2);
    expect(deferred.every((r) => r.reason === "BRAKE_RUN_LIMIT")).toBe(true);
    // What the run admitted stays within its budget, shard by shard and in all.
    const shards = (await db().collection(`retentionJobs/purgerun-${runKey}/budget`).get()).docs.map((d) => d.data() as { total: number; byClass: Record<string, number> });
    expect(shards.reduce((n, s) => n + (s.byClass["user-delete"] ?? 0), 0)).toBe(24);
    expect(shards.every((s) => s.total <= 17)).toBe(true);
    const entries = await evidence();
    for (const r of deferred) {
      expect(await stateOf(r.unitKey)).toBe("PENDING");
      expect((await db().doc(`deletionRequests/${r.unitKey}`).get()).get("lease")).toBeUndefined();
      expect(entries.filter((e) => e.action === "PURGE_BRAKE_DEFERRED" && (e.detail as { units?: string }).units === r.unitKey)).toHaveLength(1);
    }
    // The next run takes the deferred ones. The class is 44 now, below the share rule's minimum size of 50, so the
    // brake lets a run delete up to 49 of it: both are admitted.
    const next = memoryQueue();
    await fanOut({ enqueueRequest: next.enqueue, concurrency: 2, correlationId: "schedule:next" });
    expect(next.tasks().map((t) => t.requestId).sort()).toEqual(deferred.map((r) => r.unitKey).sort());
    const second = await deliverAll(next.tasks(), 2);
    expect(second.map((r) => r.outcome)).toEqual(["DONE", "DONE"]);
    for (const id of ids) expect(await stateOf(id)).toBe("PURGED");
    await expectChainVerifies();
  });

  it("a unit that trips the brake on its own waits for a retention-admin's approval, then runs without drawing on the budget", async () => {
    await reset();
    await getAuth(adminApp()).createUser({ uid: RITA.uid }).catch(() => undefined);
    await getAuth(adminApp()).setCustomUserClaims(RITA.uid, { roles: ["retention-admin"] });
    // 64 user-delete documents, all of them the subject's: more than half of a class above the minimum size.
    await putCustomer("u-95", { messages: 2, activity: 60 });
    const requestId = await requestDeletion("u-95");
    const before = await allGovernedPaths();
    const queue = memoryQueue();
    await fanOut({ enqueueRequest: queue.enqueue });
    const [waiting] = await deliverAll(queue.tasks(), 1);
    expect(waiting).toMatchObject({ outcome: "BRAKE_REFUSED", reason: "MASS_DELETION_BRAKE" });
    expect(await stateOf(requestId)).toBe("PENDING");
    expect(await allGovernedPaths()).toEqual(before);
    const trip = (await evidence()).find((e) => e.action === "PURGE_BRAKE_TRIPPED" && e.requestId === requestId);
    const brakeKey = (trip?.detail as { runKey: string }).runKey;
    expect((await db().doc(`retentionJobs/brake-${brakeKey}`).get()).get("state")).toBe("WAITING");

    await approvePurgeRunHandler({ runKey: brakeKey, decision: "APPROVE", note: "reviewed the account" }, RITA, { nowMs: Date.now(), ttlMs: 24 * HOUR });
    const next = memoryQueue();
    const run = await fanOut({ enqueueRequest: next.enqueue, correlationId: "schedule:approved" });
    const [ran] = await deliverAll(next.tasks(), 1);
    expect(ran!.outcome).toBe("DONE");
    expect(await stateOf(requestId)).toBe("PURGED");
    expect((await db().doc(`retentionJobs/brake-${brakeKey}`).get()).get("state")).toBe("USED");
    const nextKey = (run.requestTasks as { runKey: string }).runKey;
    expect((await db().doc(`retentionJobs/purgerun-${nextKey}/admitted/${requestId}`).get()).exists).toBe(false);
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "PURGE_BRAKE_APPROVED" && e.requestId === requestId)).toHaveLength(1);
  });
});
