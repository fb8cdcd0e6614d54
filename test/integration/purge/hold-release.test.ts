import { FieldValue } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { scanRetention } from "../../../functions/src/audit/scan";
import { readFence, releaseHoldById } from "../../../functions/src/holds/index";
import type { PurgeHookContext, PurgeHookPoint } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import { takeFactsOf } from "../../../functions/src/purge/runner/unit";
import { purgeMayTake } from "../../../functions/src/requests/rules/requests";
import { db } from "../../helpers/emulator";
import {
  AFTER_GRACE,
  allGovernedPaths,
  evidence,
  exists,
  expectChainVerifies,
  expectDeletionsExplained,
  expectHoldsFenced,
  hold,
  putCustomer,
  requestDeletion,
  reset,
  runOptions,
} from "./support";

/**
 * An erasure under a hold resumes after every release (docs/HOLD-FENCE.md, "A request retained under a hold
 * resumes"): whenever the last hold that kept part of a request is released (before the plan, between the plan
 * and the round's start, between batches, while the batch that stopped on it commits, between the last batch and
 * the finalize, inside the finalize), the first run after it takes the request up again and ends it PURGED: the
 * held path is gone, the audit is clean and the evidence verifies.
 */

const UID = "u-81";
const ACTIVITY = `activity/a-${UID}-02`;
const MESSAGE = `tenants/t-acme/orders/o-${UID}/messages/m-${UID}-1`;
const ORDER = `tenants/t-acme/orders/o-${UID}`;

const requestOf = async (id: string) => (await db().doc(`deletionRequests/${id}`).get()).data()!;
const stateOf = async (id: string) => String((await requestOf(id)).state);
const rounds = async (requestId: string) => (await evidence()).filter((e) => e.action === "PURGE_DECIDED" && e.requestId === requestId).length;
const release = (holdId: string, nowMs: number) => releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs });

/** The audit as of `nowMs` finds nothing at all. */
async function expectAuditClean(nowMs: number): Promise<void> {
  const audit = await scanRetention({ nowMs, skipSubjects: true });
  expect(audit.findings).toEqual([]);
}

/** The end every scenario must reach: PURGED, nothing under the uid left but the masked order, clean audit and evidence. */
async function expectErased(requestId: string, before: ReadonlySet<string>, held: readonly string[], nowMs: number): Promise<void> {
  expect(await stateOf(requestId)).toBe("PURGED");
  for (const p of held) expect(await exists(p), `${p} is gone`).toBe(false);
  const req = await requestOf(requestId);
  expect(req.retainedUnderHold).toBeUndefined();
  expect(req.heldAtGeneration).toBeUndefined();
  expect((await db().doc(ORDER).get()).get("maskedAt")).toBeDefined();
  const entries = await expectChainVerifies();
  const after = await allGovernedPaths();
  await expectDeletionsExplained(entries, [...before].filter((p) => !after.has(p)));
  await expectHoldsFenced(entries, before);
  await expectAuditClean(nowMs);
}

interface Moment {
  /** When the hold is placed: before the run (the plan defers the path), or at a hook point (a batch stops on it). */
  placeAt: "before-run" | PurgeHookPoint;
  releaseAt: PurgeHookPoint;
  /** The run ends PURGED already (the plan never saw the hold). */
  purgedInFirstRun?: true;
}

/**
 * Every moment a release can land at, relative to the held decision it undoes. Per-batch points act on the batch
 * that stopped on the held path (`beforeExecute` sees it among the batch's paths).
 */
const MOMENTS: Record<string, Moment> = {
  "before the plan (after the lease)": { placeAt: "before-run", releaseAt: "afterLease", purgedInFirstRun: true },
  "between the plan and the round's start": { placeAt: "before-run", releaseAt: "afterPlan" },
  "after the round's start, before any batch": { placeAt: "before-run", releaseAt: "afterStart" },
  "mid-batch: right after the batch that stopped on it": { placeAt: "afterStart", releaseAt: "afterExecute" },
  "mid-batch: while the batch that stops on it commits": { placeAt: "afterStart", releaseAt: "inExecute" },
  "between the last batch and the final sweep": { placeAt: "afterStart", releaseAt: "beforeLate" },
  "between the last batch and finalize (stopped by a batch)": { placeAt: "afterStart", releaseAt: "beforeFinalize" },
  "between the last batch and finalize (deferred by the plan)": { placeAt: "before-run", releaseAt: "beforeFinalize" },
  "inside the finalize transaction": { placeAt: "afterStart", releaseAt: "inFinalize" },
};

describe("an erasure under a hold resumes after a release, whenever it lands", () => {
  for (const [name, m] of Object.entries(MOMENTS)) {
    for (const target of [ACTIVITY, MESSAGE]) {
      it(`${target.includes("/messages/") ? "a message under the order" : "an activity record"}, released ${name}`, async () => {
        await reset();
        await putCustomer(UID, { messages: 3, activity: 4 });
        const requestId = await requestDeletion(UID);
        const before = await allGovernedPaths();
        let holdId: string | null = m.placeAt === "before-run" ? await hold(target) : null;
        let stoppingBatch: number | null = null;
        let releasing = null as Promise<unknown> | null;
        const hook = async (ctx: PurgeHookContext) => {
          if (holdId === null && ctx.point === m.placeAt) {
            holdId = await hold(target);
            return;
          }
          if (ctx.point === "beforeExecute" && ctx.paths.includes(target)) stoppingBatch = ctx.batch;
          if (holdId === null || releasing !== null || ctx.point !== m.releaseAt) return;
          // At a per-batch point, the batch that stopped on the target; elsewhere any firing will do.
          if ((m.releaseAt === "afterExecute" || m.releaseAt === "inExecute") && (stoppingBatch === null || ctx.batch !== stoppingBatch)) return;
          releasing = release(holdId, AFTER_GRACE);
          // Inside a transaction the release waits for it to commit (it writes the fence the transaction read):
          // awaiting it there would wait on ourselves.
          if (m.releaseAt !== "inExecute" && m.releaseAt !== "inFinalize") await releasing;
        };
        await runNightlyPurge(runOptions({ sweep: false, batchSize: 2, parallelBatches: 1, hook }));
        expect(holdId, "the hold was placed").not.toBeNull();
        expect(releasing, `the release fired at ${m.releaseAt}`).not.toBeNull();
        await releasing;
        expect((await db().doc(`retentionHolds/${holdId}`).get()).get("state")).toBe("RELEASED");
        if (m.purgedInFirstRun) expect(await stateOf(requestId)).toBe("PURGED");
        else {
          expect(await stateOf(requestId)).toBe("RETAINED_UNDER_HOLD");
          expect(await exists(target)).toBe(true);
        }
        // No hold is active now. The first run after the release takes the request up and erases the rest.
        const next = AFTER_GRACE + DAY_MS;
        if (!m.purgedInFirstRun) expect(purgeMayTake(takeFactsOf(await requestOf(requestId)), next, await readFence())).toBe(true);
        await runNightlyPurge(runOptions({ sweep: false, nowMs: next, asOfMs: next }));
        await expectErased(requestId, before, [target], next);
      });
    }
  }
});

describe("several holds, placed and released several times", () => {
  it("two holds, one released mid-round: the next run erases what it freed; the other keeps the rest until its own release", async () => {
    await reset();
    await putCustomer(UID, { messages: 3, activity: 4 });
    const requestId = await requestDeletion(UID);
    const before = await allGovernedPaths();
    const first = await hold(ACTIVITY);
    const second = await hold(MESSAGE);
    await runNightlyPurge(
      runOptions({
        sweep: false,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point === "afterStart") await release(first, AFTER_GRACE);
        },
      }),
    );
    expect(await stateOf(requestId)).toBe("RETAINED_UNDER_HOLD");
    // The next run takes it up (a hold that kept part of it is gone) and keeps only what the other holds.
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    expect(await exists(ACTIVITY)).toBe(false);
    expect(await exists(MESSAGE)).toBe(true);
    const req = await requestOf(requestId);
    expect(req.state).toBe("RETAINED_UNDER_HOLD");
    expect((req.retainedUnderHold as { paths: string[] }).paths).toEqual([MESSAGE]);
    expect(req.heldAtGeneration).toBe(await readFence());
    // While that hold stands, runs leave the request alone: no new round.
    const n = await rounds(requestId);
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + 2 * DAY_MS, asOfMs: AFTER_GRACE + 2 * DAY_MS }));
    expect(await rounds(requestId)).toBe(n);
    await release(second, AFTER_GRACE + 2 * DAY_MS);
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + 3 * DAY_MS, asOfMs: AFTER_GRACE + 3 * DAY_MS }));
    await expectErased(requestId, before, [ACTIVITY, MESSAGE], AFTER_GRACE + 3 * DAY_MS);
  });

  it("one path held, released and held again several times within one round, by other holds each time", async () => {
    await reset();
    await putCustomer(UID, { messages: 3, activity: 4 });
    const requestId = await requestDeletion(UID);
    const before = await allGovernedPaths();
    const holds = [await hold(ACTIVITY)];
    // The plan defers it under the first hold; every later moment releases the latest and places a fresh one.
    const swapAt: PurgeHookPoint[] = ["afterPlan", "afterStart", "beforeLate", "beforeFinalize"];
    await runNightlyPurge(
      runOptions({
        sweep: false,
        hook: async (ctx: PurgeHookContext) => {
          if (!swapAt.includes(ctx.point)) return;
          swapAt.splice(swapAt.indexOf(ctx.point), 1);
          await release(holds.at(-1)!, AFTER_GRACE);
          holds.push(await hold(ACTIVITY));
        },
      }),
    );
    expect(swapAt).toEqual([]);
    expect(await stateOf(requestId)).toBe("RETAINED_UNDER_HOLD");
    // The round's held decision was made under the first hold: the next run judges the path again, under the last.
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    const req = await requestOf(requestId);
    expect(req.state).toBe("RETAINED_UNDER_HOLD");
    expect((req.retainedUnderHold as { holds: { holdId: string }[] }).holds.map((h) => h.holdId)).toEqual([holds.at(-1)]);
    const n = await rounds(requestId);
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + 2 * DAY_MS, asOfMs: AFTER_GRACE + 2 * DAY_MS }));
    expect(await rounds(requestId)).toBe(n);
    await release(holds.at(-1)!, AFTER_GRACE + 2 * DAY_MS);
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + 3 * DAY_MS, asOfMs: AFTER_GRACE + 3 * DAY_MS }));
    await expectErased(requestId, before, [ACTIVITY], AFTER_GRACE + 3 * DAY_MS);
  });
});

describe("a request stuck under a released hold by the old rule", () => {
  it("is reported by the audit (STUCK_RETAINED_UNDER_HOLD), taken up by the next run, and ends PURGED", async () => {
    await reset();
    await putCustomer(UID, { messages: 3, activity: 4 });
    const requestId = await requestDeletion(UID);
    const before = await allGovernedPaths();
    const holdId = await hold(ACTIVITY);
    await runNightlyPurge(runOptions({ sweep: false }));
    expect(await stateOf(requestId)).toBe("RETAINED_UNDER_HOLD");
    await release(holdId, AFTER_GRACE);
    // What the old finalize left on existing databases: the generation read after the release, and no other.
    await db()
      .doc(`deletionRequests/${requestId}`)
      .update({ heldFenceGeneration: await readFence(), heldAtGeneration: FieldValue.delete() });
    const audit = await scanRetention({ nowMs: AFTER_GRACE, skipSubjects: true });
    expect(audit.findings.map((f) => [f.path, f.code])).toEqual([[`deletionRequests/${requestId}`, "STUCK_RETAINED_UNDER_HOLD"]]);
    const next = AFTER_GRACE + DAY_MS;
    await runNightlyPurge(runOptions({ sweep: false, nowMs: next, asOfMs: next }));
    await expectErased(requestId, before, [ACTIVITY], next);
  });
});

describe("the audit on requests retained under a hold", () => {
  it("a request retained past its due date under a hold that stands is counted as open and past due, not as done", async () => {
    await reset();
    await putCustomer(UID, { messages: 3, activity: 4 });
    const requestId = await requestDeletion(UID);
    await hold(ACTIVITY);
    await runNightlyPurge(runOptions({ sweep: false }));
    expect(await stateOf(requestId)).toBe("RETAINED_UNDER_HOLD");
    const dueAtMs = ((await requestOf(requestId)).dueAt as { toMillis(): number }).toMillis();
    const late = dueAtMs + 2 * DAY_MS;
    const audit = await scanRetention({ nowMs: late, skipSubjects: true });
    // Lawfully kept: no finding. But not done either: it is open, retained past its due date, and shown so.
    expect(audit.findings.filter((f) => f.path.startsWith("deletionRequests/"))).toEqual([]);
    expect(audit.stats.requests.unfinished).toBe(1);
    expect(audit.stats.requests.retainedUnderHold).toBe(1);
    expect(audit.stats.requests.retainedPastDue).toBe(1);
    expect(audit.stats.requests.dueBuckets.overdue).toBe(1);
    expect(audit.stats.requests.mostUrgent.map((r) => [r.path, r.state])).toEqual([[`deletionRequests/${requestId}`, "RETAINED_UNDER_HOLD"]]);
  });

  it("a stuck request past its due date is reported stuck and overdue", async () => {
    await reset();
    await putCustomer(UID, { messages: 3, activity: 4 });
    const requestId = await requestDeletion(UID);
    const holdId = await hold(ACTIVITY);
    await runNightlyPurge(runOptions({ sweep: false }));
    await release(holdId, AFTER_GRACE);
    const dueAtMs = ((await requestOf(requestId)).dueAt as { toMillis(): number }).toMillis();
    const audit = await scanRetention({ nowMs: dueAtMs + DAY_MS, skipSubjects: true });
    const path = `deletionRequests/${requestId}`;
    expect(audit.findings.filter((f) => f.path === path).map((f) => f.code)).toEqual(["OVERDUE_REQUEST", "STUCK_RETAINED_UNDER_HOLD"]);
    expect(audit.stats.requests.overdue).toBe(1);
  });
});
