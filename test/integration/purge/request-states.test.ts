import { getAuth } from "firebase-admin/auth";
import { Timestamp } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { DomainError } from "../../../functions/src/kernel/errors";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { scanRetention } from "../../../functions/src/audit/scan";
import { releaseHoldById } from "../../../functions/src/holds/service";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { cancelDeletionRequest } from "../../../functions/src/requests/service";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { adminApp, db } from "../../helpers/emulator";
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
  putGoverned,
  requestDeletion,
  reset,
  runOptions,
  T0,
} from "./support";

const requestOf = async (id: string) => (await db().doc(`deletionRequests/${id}`).get()).data()!;
const stateOf = async (id: string) => String((await requestOf(id)).state);
const user = (uid: string) => ({ type: "user" as const, id: uid });

/** Runs `work` and returns the DomainError it throws (fails the test when it does not throw one). */
async function refusal(work: () => Promise<unknown>): Promise<DomainError> {
  try {
    await work();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("a deletion request moves only from the state its writer read", () => {
  beforeEach(async () => {
    await reset();
  });

  it("purge first: a cancel arriving after the run leased the request is refused, and the erasure completes", async () => {
    await putCustomer("u-91", { messages: 2, activity: 2 });
    const requestId = await requestDeletion("u-91");
    const before = await allGovernedPaths();
    let refused: DomainError | null = null;
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point !== "afterLease" || refused) return;
          // The user's clock is still inside the grace period; the run's is past it.
          refused = await refusal(() => cancelDeletionRequest(requestId, { uid: "u-91", retentionAdmin: false }, user("u-91"), T0 + DAY_MS));
        },
      }),
    );
    expect(refused, "the cancel ran while the request was leased").not.toBeNull();
    expect(refused!.kind).toBe("failed-precondition");
    expect(refused!.reason).toBe("ALREADY_PROCESSING");
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    expect(await stateOf(requestId)).toBe("PURGED");
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "DELETION_CANCELLED")).toEqual([]);
    const after = await allGovernedPaths();
    await expectDeletionsExplained(entries, [...before].filter((p) => !after.has(p)));
  });

  it("cancel first: a cancel that commits after the lease lapsed stops the run before anything is marked", async () => {
    await putCustomer("u-92", { messages: 2, activity: 2 });
    const requestId = await requestDeletion("u-92");
    const before = await allGovernedPaths();
    let cancelled = false;
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        // A runner whose lease is already over when it plans (it stalled): nothing stops a cancel now.
        leaseMs: 1,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point !== "afterLease" || cancelled) return;
          await new Promise((r) => setTimeout(r, 20));
          await cancelDeletionRequest(requestId, { uid: "u-92", retentionAdmin: false }, user("u-92"), T0 + DAY_MS);
          cancelled = true;
        },
      }),
    );
    expect(cancelled).toBe(true);
    expect((summary.units as UnitReport[]).every((u) => u.outcome !== "DONE")).toBe(true);
    expect(await stateOf(requestId)).toBe("CANCELLED");
    // Nothing was deleted or marked: every document is back in its state before the request.
    const after = await allGovernedPaths();
    expect([...after].sort()).toEqual([...before].sort());
    for (const p of after) expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("ACTIVE");
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.requestId === requestId && e.action.startsWith("PURGE_"))).toEqual([]);
  });

  it("a cancel interrupted in the middle of its restore is not reported CANCELLED, and the next run finishes it", async () => {
    await putCustomer("u-93", { messages: 3, activity: 3 });
    const requestId = await requestDeletion("u-93");
    const soft = [...(await allGovernedPaths())].filter((p) => p !== "tenants/t-acme");
    let batches = 0;
    await expect(
      cancelDeletionRequest(requestId, { uid: "u-93", retentionAdmin: false }, user("u-93"), T0 + DAY_MS, {
        restoreBatchSize: 2,
        beforeRestoreBatch: () => {
          if (++batches === 2) throw new Error("injected crash in the middle of the restore");
        },
      }),
    ).rejects.toThrow("injected crash");
    expect(await stateOf(requestId)).toBe("CANCELLING");
    const stillSoft = [];
    for (const p of soft) if ((await db().doc(p).get()).get("lifecycleState") === "SOFT_DELETED") stillSoft.push(p);
    expect(stillSoft.length).toBeGreaterThan(0);
    // The purge run picks the cancel up, although the grace period is long over by its clock.
    await runNightlyPurge(runOptions({ sweep: false }));
    expect(await stateOf(requestId)).toBe("CANCELLED");
    for (const p of soft) expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("ACTIVE");
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "DELETION_CANCELLED" && e.requestId === requestId)).toHaveLength(1);
    expect(entries.filter((e) => e.requestId === requestId && e.action.startsWith("PURGE_"))).toEqual([]);
  });
});

describe("erasure under a hold is deferred, never dropped", () => {
  beforeEach(async () => {
    await reset();
  });

  it("hold after mark -> RETAINED_UNDER_HOLD -> release -> the next run erases -> status and audit agree", async () => {
    const uid = "u-94";
    await putCustomer(uid, { messages: 3, activity: 3 });
    await getAuth(adminApp()).createUser({ uid });
    const requestId = await requestDeletion(uid);
    const before = await allGovernedPaths();
    const order = `tenants/t-acme/orders/o-${uid}`;
    const activity = `activity/a-${uid}-01`;
    let holdIds: string[] = [];
    let placing: Promise<string[]> | null = null;
    await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 2,
        hook: async (ctx: PurgeHookContext) => {
          // Every batch is marked; then, before the first delete, compliance holds the order (and so its
          // nested messages) and one external copy. Batches run several at a time: the first to get here
          // places the holds, and every batch waits for that one placement before it deletes.
          if (ctx.point !== "beforeExecute") return;
          placing ??= (async () => [await hold(order), await hold(activity)])();
          holdIds = await placing;
        },
      }),
    );
    expect(holdIds).toHaveLength(2);
    const req = await requestOf(requestId);
    expect(req.state).toBe("RETAINED_UNDER_HOLD");
    const retained = req.retainedUnderHold as { paths: string[]; count: number; holds: { holdId: string; reasonCode: string }[] };
    expect([...retained.paths].sort()).toEqual([activity, order, ...[0, 1, 2].map((m) => `${order}/messages/m-${uid}-${m}`)].sort());
    expect(retained.holds.map((h) => h.holdId).sort()).toEqual([...holdIds].sort());
    // Everything not held is gone, including the Auth account (docs/decisions: the account goes once all
    // that may be erased is erased).
    expect(await exists(`tenants/t-acme/users/${uid}`)).toBe(false);
    expect(await exists(`userDirectory/${uid}`)).toBe(false);
    await expect(getAuth(adminApp()).getUser(uid)).rejects.toMatchObject({ code: "auth/user-not-found" });
    for (const p of retained.paths) expect(await exists(p), p).toBe(true);
    // The audit agrees: held data is explained, nothing is stale.
    const mid = await scanRetention({ nowMs: AFTER_GRACE, skipSubjects: true });
    expect(mid.findings.filter((f) => f.code === "STALE_PURGE_ELIGIBLE")).toEqual([]);

    // A run while the holds stand changes nothing and writes no new round.
    const roundsBefore = (await evidence()).filter((e) => e.action === "PURGE_DECIDED").length;
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + DAY_MS }));
    expect((await evidence()).filter((e) => e.action === "PURGE_DECIDED")).toHaveLength(roundsBefore);
    expect(await stateOf(requestId)).toBe("RETAINED_UNDER_HOLD");

    // Two officers release; the next run erases what is left, by itself.
    for (const id of holdIds) await releaseHoldById({ holdId: id, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs: AFTER_GRACE + 2 * DAY_MS });
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + 3 * DAY_MS, asOfMs: AFTER_GRACE + 3 * DAY_MS }));
    expect(await stateOf(requestId)).toBe("PURGED");
    for (let m = 0; m < 3; m++) expect(await exists(`${order}/messages/m-${uid}-${m}`)).toBe(false);
    expect(await exists(activity)).toBe(false);
    // The order stays for finance, masked now that it is free.
    const masked = (await db().doc(order).get()).data()!;
    expect(masked.customerName).toBeUndefined();
    expect(masked.maskedAt).toBeDefined();
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    await expectDeletionsExplained(entries, [...before].filter((p) => !after.has(p)));
    await expectHoldsFenced(entries, before);
    const end = await scanRetention({ nowMs: AFTER_GRACE + 3 * DAY_MS, skipSubjects: true });
    expect(end.findings.filter((f) => f.code === "STALE_PURGE_ELIGIBLE")).toEqual([]);
    expect(end.findings.filter((f) => f.path.includes(uid))).toEqual([]);
  });

  it("an old PURGE_ELIGIBLE mark is not a standing authorisation: it is evaluated again, and the audit reports it", async () => {
    // An event that is not expired, left PURGE_ELIGIBLE by a round that is no longer running.
    await putGoverned("events/e-marked", { type: "X" }, { ageDays: 10 });
    await db().doc("retentionJobs/purge-sweep-old").set({ unitKey: "sweep-old", kind: "sweep", round: 3, phase: "DONE" });
    await db()
      .doc("events/e-marked")
      .update({
        lifecycleState: "PURGE_ELIGIBLE",
        purgeDecision: { allowed: true, reason: "AUTHORIZED_BY_POLICY", policyVersion: "v1", unitKey: "sweep-old", round: 3, decidedAt: Timestamp.fromMillis(T0) },
      });
    await runNightlyPurge(runOptions({ nowMs: T0 + DAY_MS, asOfMs: T0 + DAY_MS }));
    expect(await exists("events/e-marked")).toBe(true);
    const r = await scanRetention({ nowMs: T0 + DAY_MS, skipSubjects: true });
    expect(r.findings.filter((f) => f.code === "STALE_PURGE_ELIGIBLE").map((f) => f.path)).toEqual(["events/e-marked"]);
  });
});
