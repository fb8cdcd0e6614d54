import type { DocumentSnapshot } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import { handleTtlDeleted } from "../../../functions/src/entrypoints/firestore/ttl-deleted";
import { policy } from "../../../functions/src/platform/registry";
import { ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { approveTenantClosure, openDeletionRequest } from "../../../functions/src/requests/index";
import { db } from "../../helpers/emulator";
import {
  allGovernedPaths,
  expectBatchesDecided,
  expectChainVerifies,
  expectDeletionsExplained,
  hold,
  putCustomer,
  putGoverned,
  putSession,
  requestDeletion,
  reset,
  runOptions,
  T0,
} from "./support";

/**
 * Documents created under a subject while its purge runs are not in the plan. The late sweep finds them under
 * every recursive root the purge deleted and under every parent it deferred, records a decision for them (late
 * batch records) and deletes them children first, so the purge never leaves an orphan under a parent it
 * deleted. A late find the rules keep (here: a hold) stays, and so does its parent.
 */

const UID = "u-71";
/** The customer's session: a recursive root of the erasure (the session and everything under it goes). */
const SESSION = "sessions/s-71";
const TOKEN = `${SESSION}/tokens/tk-s-71`;
const LATE = `${SESSION}/tokens/tk-late`;

/** Issues a new token under the session with its sibling's retention fields: the subject's own data, created now. */
async function issueLateToken(template: Record<string, unknown>): Promise<void> {
  await db().doc(LATE).set({ ...template, kind: "issued while the erasure ran" });
}

/** The batch that deleted the session's planned token has committed; the session's own batch has not run. */
const afterTokenStage = (ctx: PurgeHookContext) => ctx.paths.includes(TOKEN);

async function run(point: "afterExecute" | "inExecute", when: (ctx: PurgeHookContext) => boolean, after?: () => Promise<void>, outcome = "DONE") {
  await reset();
  await putCustomer(UID, { messages: 2, activity: 2 });
  await putSession("s-71", UID, 1);
  const requestId = await requestDeletion(UID);
  const before = await allGovernedPaths();
  expect(before.has(TOKEN)).toBe(true);
  // The planned token as the request left it: the late token's retention fields.
  const template = (await db().doc(TOKEN).get()).data()!;
  let posted = false;
  const summary = await runNightlyPurge(
    runOptions({
      sweep: false,
      batchSize: 2,
      parallelBatches: 1,
      hook: async (ctx: PurgeHookContext) => {
        if (posted || ctx.point !== point || !when(ctx)) return;
        posted = true;
        await issueLateToken(template);
        if (after) await after();
      },
    }),
  );
  expect(posted, `the hook point ${point} fired`).toBe(true);
  expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual([outcome]);
  const entries = await expectChainVerifies();
  const remaining = await allGovernedPaths();
  const state = (await db().doc(`deletionRequests/${requestId}`).get()).get("state") as string;
  return { entries, before, remaining, state, requestId };
}

describe("the late sweep", () => {
  it("deletes a child created under a parent after the children's stage ran (the parent is deferred, then decided again)", async () => {
    const r = await run("afterExecute", afterTokenStage);
    expect(r.remaining.has(LATE)).toBe(false);
    expect(r.remaining.has(SESSION)).toBe(false);
    const late = r.entries.filter((e) => e.action === "PURGE_LATE_FOUND");
    expect(late).toHaveLength(1);
    expect(late[0]!.counts).toMatchObject({ found: 2, refused: 0 });
    await expectDeletionsExplained(r.entries, [...r.before, LATE].filter((p) => !r.remaining.has(p)));
    // The late find was decided in a batch record before its delete, like every planned path.
    const checked = await expectBatchesDecided(r.entries);
    expect(checked).toBeGreaterThanOrEqual(r.before.size - r.remaining.size + 1);
    const recorded = (await db().collection(`retentionJobs/purge-${r.requestId}/batches`).get()).docs.filter((d) => String(d.get("stage")).startsWith("late-"));
    const latePaths = recorded.flatMap((d) => (d.get("items") as { path: string }[]).map((i) => i.path));
    expect(latePaths).toContain(LATE);
    expect(latePaths).toContain(SESSION);
    expect(r.state).toBe("PURGED");
  });

  it("deletes a child created under a parent inside the parent's own delete transaction (no orphan under a deleted root)", async () => {
    const r = await run("inExecute", (ctx) => ctx.paths.includes(SESSION));
    expect(r.remaining.has(SESSION)).toBe(false);
    expect(r.remaining.has(LATE)).toBe(false);
    expect((await db().collection(`${SESSION}/tokens`).get()).size).toBe(0);
    const late = r.entries.filter((e) => e.action === "PURGE_LATE_FOUND");
    expect(late).toHaveLength(1);
    expect(late[0]!.counts).toMatchObject({ found: 1, refused: 0 });
    await expectDeletionsExplained(r.entries, [...r.before, LATE].filter((p) => !r.remaining.has(p)));
    await expectBatchesDecided(r.entries);
    expect(r.state).toBe("PURGED");
  });

  it("keeps a late find the rules refuse (it carries a legal-hold flag), and its parent, and does not report the erasure complete", async () => {
    const r = await run(
      "afterExecute",
      afterTokenStage,
      async () => {
        await db().doc(LATE).update({ legalHold: true });
      },
      "BLOCKED",
    );
    expect(r.remaining.has(LATE)).toBe(true);
    expect(r.remaining.has(SESSION)).toBe(true);
    // Nothing was added to the plan, and the verification failure is on the record.
    expect(r.entries.filter((e) => e.action === "PURGE_LATE_FOUND")).toHaveLength(0);
    expect(r.entries.filter((e) => e.action === "PURGE_VERIFY_FAILED")).toHaveLength(1);
    await expectDeletionsExplained(r.entries, [...r.before].filter((p) => !r.remaining.has(p)));
    // The session's delete stays deferred, so verification refuses to call the erasure complete: the request
    // is BLOCKED (PURGE_VERIFY_FAILED) for an operator, and the next run plans it again.
    expect(r.state).toBe("BLOCKED");
  });
});

describe("the late sweep and a hold that reaches a late find", () => {
  const TENANT = "t-zeta";
  const ORDER = `tenants/${TENANT}/orders/o-u-z1`;
  const MESSAGE = `${ORDER}/messages/m-u-z1-1`;
  const LATE_MESSAGE = `${ORDER}/messages/m-u-z1-late`;

  it("a late find held after its late record is written and before its batch runs is kept, and verification knows which hold keeps it", async () => {
    await reset();
    await putCustomer("u-z1", { tenantId: TENANT, messages: 2, activity: 1 });
    const { request } = await openDeletionRequest({ subject: { type: "tenant", tenantId: TENANT }, source: "staff", actor: { type: "staff", id: "ra-3001" }, nowMs: T0 });
    await approveTenantClosure(request.requestId, { type: "staff", id: "c-2001" }, T0);
    const before = await allGovernedPaths();
    const template = (await db().doc(MESSAGE).get()).data()!;
    let holdId = "";
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        nowMs: T0 + 32 * DAY_MS,
        asOfMs: T0 + 32 * DAY_MS,
        batchSize: 2,
        parallelBatches: 1,
        hook: async (ctx: PurgeHookContext) => {
          // The messages' batch has committed; the order's has not run: a message posted now is a late find.
          if (ctx.point === "afterExecute" && ctx.paths.includes(MESSAGE) && !(await db().doc(LATE_MESSAGE).get()).exists) await db().doc(LATE_MESSAGE).set(template);
          // The late batch that is to delete it: its record names it, its transaction has not run.
          if (ctx.point === "beforeExecute" && holdId === "" && ctx.paths.includes(LATE_MESSAGE)) holdId = await hold(LATE_MESSAGE);
        },
      }),
    );
    expect(holdId, "the hold was placed before the late batch ran").not.toBe("");
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    const entries = await expectChainVerifies();
    const remaining = await allGovernedPaths();
    expect(remaining.has(LATE_MESSAGE)).toBe(true);
    expect(remaining.has(ORDER)).toBe(true);
    expect(entries.filter((e) => e.action === "PURGE_LATE_FOUND")).toHaveLength(1);
    await expectDeletionsExplained(entries, [...before].filter((p) => !remaining.has(p)));
    // Verification took the late batch's outcome in: the message is under that hold (named, so that its release
    // resumes the closure), and what is above it is kept for it.
    const req = (await db().doc(`deletionRequests/${request.requestId}`).get()).data()!;
    expect(req.state).toBe("RETAINED_UNDER_HOLD");
    const held = req.retainedUnderHold as { paths: string[]; holds: { holdId: string | null }[] };
    expect(held.paths).toEqual([LATE_MESSAGE]);
    expect(held.holds.map((h) => h.holdId)).toEqual([holdId]);
  });
});

/**
 * A server-side writer adds the subject's data to a collection the data map reaches by query (an activity record for
 * the uid) after the plan, or writes a deleted one again. Nothing the final sweep walks down from reaches it: the
 * request's data map is asked again. What only delete entries reach, and nothing keeps, is deleted by a late batch;
 * anything else leaves the request BLOCKED (LATE_FIND_UNPLANNED) for the next plan, never PURGED with it there.
 */
describe("a document the data map reaches, written after the plan", () => {
  const UID = "u-72";
  const NEW = `activity/a-${UID}-late`;
  const AGAIN = `activity/a-${UID}-00`;

  /** Runs the request's purge; `write` runs once every planned batch has run, before the final sweep. */
  async function erase(wrote: string, write: () => Promise<void>, outcome: "DONE" | "BLOCKED", prepare?: () => Promise<void>) {
    await reset();
    await putCustomer(UID, { messages: 1, activity: 2 });
    await prepare?.();
    const requestId = await requestDeletion(UID);
    const before = await allGovernedPaths();
    let written = false;
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 2,
        parallelBatches: 1,
        hook: async (ctx: PurgeHookContext) => {
          if (written || ctx.point !== "beforeFinalize") return;
          written = true;
          await write();
        },
      }),
    );
    expect(written).toBe(true);
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual([outcome]);
    const entries = await expectChainVerifies();
    const remaining = await allGovernedPaths();
    // Each deletion once; a path deleted, written again and deleted again is counted by its own test.
    if (wrote !== AGAIN) await expectDeletionsExplained(entries, [...new Set([...before, wrote])].filter((p) => !remaining.has(p)));
    await expectBatchesDecided(entries);
    const state = async () => (await db().doc(`deletionRequests/${requestId}`).get()).get("state") as string;
    return { entries, state };
  }

  it("a new document only a delete entry reaches is deleted by a late batch, and the request is PURGED", async () => {
    const r = await erase(NEW, () => putGoverned(NEW, { subjectUid: UID, type: "SIGNED_IN" }).then(() => undefined), "DONE");
    expect((await db().doc(NEW).get()).exists).toBe(false);
    const late = r.entries.filter((e) => e.action === "PURGE_LATE_FOUND");
    expect(late).toHaveLength(1);
    expect(late[0]!.counts).toMatchObject({ found: 1, refused: 0, fromDataMap: 1 });
    expect(await r.state()).toBe("PURGED");
  });

  it("a document the round deleted, written again, is deleted again", async () => {
    const r = await erase(AGAIN, async () => {
      expect((await db().doc(AGAIN).get()).exists, "its batch deleted it").toBe(false);
      await putGoverned(AGAIN, { subjectUid: UID, type: "SIGNED_IN" });
    }, "DONE");
    expect((await db().doc(AGAIN).get()).exists).toBe(false);
    // Two deletions of the path, each in the evidence of the batch that decided it: the planned one and a late one.
    const naming = r.entries.filter((e) => e.action === "PURGE_BATCH" && (e.paths ?? []).includes(AGAIN));
    expect(naming).toHaveLength(2);
    expect(r.entries.filter((e) => e.action === "PURGE_LATE_FOUND")).toHaveLength(1);
    expect(await r.state()).toBe("PURGED");
  });

  it("a new document a hold keeps is LATE_FIND_UNPLANNED: the request is BLOCKED, and the next plan retains it under the hold", async () => {
    const r = await erase(NEW, async () => {
      await putGoverned(NEW, { subjectUid: UID, type: "SIGNED_IN" });
      await db().doc(NEW).update({ legalHold: true });
    }, "BLOCKED");
    const failed = r.entries.filter((e) => e.action === "PURGE_VERIFY_FAILED");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.paths).toEqual([NEW]);
    expect(failed[0]!.counts).toMatchObject({ LATE_FIND_UNPLANNED: 1 });
    expect(r.entries.filter((e) => e.action === "PURGE_LATE_FOUND")).toHaveLength(0);
    expect(await r.state()).toBe("BLOCKED");
    await runNightlyPurge(runOptions({ sweep: false }));
    expect((await db().doc(NEW).get()).exists).toBe(true);
    expect(await r.state()).toBe("RETAINED_UNDER_HOLD");
  });

  it("a new document the destroy predicate refuses stays, and is LATE_FIND_UNPLANNED: the request is BLOCKED, not PURGED", async () => {
    const r = await erase(NEW, async () => {
      await putGoverned(NEW, { subjectUid: UID, type: "SIGNED_IN" });
      // A state the lifecycle does not know: the plan rules let it through, the destroy predicate refuses it.
      await db().doc(NEW).update({ lifecycleState: "SOMETHING_ELSE" });
    }, "BLOCKED");
    const failed = r.entries.filter((e) => e.action === "PURGE_VERIFY_FAILED");
    expect(failed[0]!.paths).toEqual([NEW]);
    expect(failed[0]!.counts).toMatchObject({ LATE_FIND_UNPLANNED: 1 });
    expect((await db().doc(NEW).get()).exists).toBe(true);
  });

  it("a new document a recursive entry reaches (a session) is left to the next plan, which erases it with its subtree", async () => {
    const SESSION = `sessions/s-${UID}-late`;
    const TOKEN = `${SESSION}/tokens/tk-late`;
    const r = await erase(SESSION, async () => {
      await putGoverned(SESSION, { uid: UID }, { ageDays: 0 });
      await putGoverned(TOKEN, { kind: "refresh" }, { ageDays: 0 });
    }, "BLOCKED");
    const failed = r.entries.filter((e) => e.action === "PURGE_VERIFY_FAILED");
    expect(failed[0]!.paths).toEqual([SESSION]);
    expect(failed[0]!.counts).toMatchObject({ LATE_FIND_UNPLANNED: 1 });
    expect((await db().doc(TOKEN).get()).exists, "nothing under it was touched").toBe(true);
    await runNightlyPurge(runOptions({ sweep: false }));
    expect(await r.state()).toBe("PURGED");
    for (const p of [SESSION, TOKEN]) expect((await db().doc(p).get()).exists, p).toBe(false);
  });

  it("what is written under a recursive entry's missing document (the profile) is left to the next plan", async () => {
    const PROFILE = `tenants/t-acme/users/${UID}`;
    const NOTE = `${PROFILE}/notes/n-late`;
    const r = await erase(
      NOTE,
      () => db().doc(NOTE).set({ text: "written by a server under the missing profile" }).then(() => undefined),
      "BLOCKED",
      // The profile is gone before the plan: it is no root of the round, and nothing the sweep walks reaches under it.
      () => db().doc(PROFILE).delete().then(() => undefined),
    );
    const failed = r.entries.filter((e) => e.action === "PURGE_VERIFY_FAILED");
    expect(failed[0]!.paths).toEqual([NOTE]);
    expect(failed[0]!.counts).toMatchObject({ LATE_FIND_UNPLANNED: 1 });
    expect((await db().doc(NOTE).get()).exists).toBe(true);
  });
});

/**
 * The window the probe cannot close (docs/PURGE-ENGINE.md, "Why every item is probed"): a child created under an
 * item after its batch probed and before that batch commits. The token (a leaf) is probed, found empty and deleted;
 * a server-side writer adds a document under it inside that transaction. The final sweep finds it under the
 * session (a recursive root): one the rules refuse stays under its deleted parent, and the request is BLOCKED with a
 * LATE_FIND_STRANDED finding, never PURGED.
 */
describe("a refused child created under a parent between its probe and its commit", () => {
  const UNDER_TOKEN = `${TOKEN}/uses/u-late`;

  it("is listed as stranded, and the request is BLOCKED (LATE_FIND_STRANDED), never PURGED", async () => {
    await reset();
    await putCustomer(UID, { messages: 2, activity: 2 });
    await putSession("s-71", UID, 1);
    const requestId = await requestDeletion(UID);
    const before = await allGovernedPaths();
    const template = (await db().doc(TOKEN).get()).data()!;
    let posted = false;
    const summary = await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 2,
        parallelBatches: 1,
        hook: async (ctx: PurgeHookContext) => {
          if (posted || ctx.point !== "inExecute" || !ctx.paths.includes(TOKEN)) return;
          posted = true;
          await db().doc(UNDER_TOKEN).set({ ...template, legalHold: true });
        },
      }),
    );
    expect(posted, "the token's delete transaction ran").toBe(true);
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["BLOCKED"]);
    const entries = await expectChainVerifies();
    const remaining = await allGovernedPaths();
    // The token went (its batch probed before the child existed); the child stays, read by name (under a deleted
    // parent it is not reachable by walking down from existing documents).
    expect(remaining.has(TOKEN)).toBe(false);
    expect((await db().doc(UNDER_TOKEN).get()).exists).toBe(true);
    const failed = entries.filter((e) => e.action === "PURGE_VERIFY_FAILED");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.paths).toContain(UNDER_TOKEN);
    expect(failed[0]!.counts).toMatchObject({ LATE_FIND_STRANDED: 1 });
    await expectDeletionsExplained(entries, [...before].filter((p) => !remaining.has(p)));
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("BLOCKED");
  });
});

describe("the late sweep and the TTL trigger", () => {
  it("a marked session deferred by its planned batch and deleted by a late batch is the purge's own delete to the TTL trigger", async () => {
    await reset();
    await putCustomer(UID, { messages: 2, activity: 2 });
    await putSession("s-71", UID, 1);
    await requestDeletion(UID);
    const template = (await db().doc(TOKEN).get()).data()!;
    let posted = false;
    // The session as each batch that is about to delete it reads it: the last one is the version deleted.
    let last: DocumentSnapshot | null = null;
    await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 2,
        parallelBatches: 1,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point === "beforeExecute" && ctx.paths.includes(SESSION)) last = await db().doc(SESSION).get();
          if (posted || ctx.point !== "afterExecute" || !afterTokenStage(ctx)) return;
          posted = true;
          await issueLateToken(template);
        },
      }),
    );
    expect(posted).toBe(true);
    expect((await db().doc(SESSION).get()).exists).toBe(false);
    const snap = last as DocumentSnapshot | null;
    expect(snap?.exists).toBe(true);
    const sessions = ttlTriggerTargets(policy()).find((t) => t.name === "sessions")!;
    const event = { id: "evt-late-session", time: new Date().toISOString(), data: { data: () => snap!.data(), ref: { path: SESSION }, updateTime: snap!.updateTime }, params: { sessionId: "s-71" } };
    const r = await handleTtlDeleted(sessions, event);
    expect(r).toMatchObject({ outcome: "WORKFLOW_SKIPPED", classification: "WORKFLOW", writes: 0 });
  });
});
