/**
 * A request group across two governed databases (docs/decisions/0035-request-groups.md, 0036-several-databases.md):
 * the workspaces test app with a second database, `activity`, holding each workspace's activity events
 * (workspaces/{workspaceId}/activity/{eventId}, by `uid`). Ada is in two workspaces: one request opens a member per
 * workspace, and each member a cell request in `activity`. The group's Auth account goes once, and only when every
 * member is PURGED in the primary and every member's activity part is done: it survives while one member's activity
 * part is not done, whichever of the deciders (a member's finalize, a cell's task, the nightly reconciliation) comes
 * last, and however many of them run at once.
 */
import { Auth, getAuth } from "firebase-admin/auth";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { finishRecordAccounts, inEveryCell, reconcileCells, runPurgeRequestTask } from "../../../functions/src/cells/index";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { verifyEvidence } from "../../../functions/src/evidence/index";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";
import { runNightlyJob } from "../../../functions/src/jobs/nightly-purge";
import { DAY_MS, PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { RegistrySchema, type Registry } from "../../../functions/src/kernel/policy-schema";
import { inCell } from "../../../functions/src/platform/firestore";
import { writeGoverned } from "../../../functions/src/platform/governed-repo";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { runNightlyPurge, type PurgeHook, type PurgeRequestTask, type PurgeRunOptions } from "../../../functions/src/purge/index";
import { PATH_LOOKUP, WORKSPACES_DATABASE, workspacesRegistry } from "../../fixtures/workspaces/registry";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { seedWorkspaceDocs } from "../../fixtures/workspaces/seed";
import { useDatabase } from "../purge/support";

const ACTIVITY = "activity";
const ACTIVITY_DB = "workspaces-activity";

/** The workspaces test registry with a second governed database: each workspace's activity events, by uid. */
function registryWithActivity(): Registry {
  const base = workspacesRegistry([PATH_LOOKUP]);
  return RegistrySchema.parse({
    ...base,
    databases: [{ id: ACTIVITY, description: "Each workspace's activity events (test registry)." }],
    collections: [...base.collections, { pattern: "workspaces/{workspaceId}/activity/{eventId}", database: ACTIVITY, retentionClass: "user-delete", description: "A member's activity event." }],
    dataMap: {
      ...base.dataMap,
      user: [...base.dataMap.user, { id: "activity", kind: "query", database: ACTIVITY, collection: "workspaces/{workspaceId}/activity", where: [["uid", "==", "{uid}"]], action: "delete" }],
    },
  });
}

const previous = { db: process.env.RETENTION_DATABASE_ID, dbs: process.env.RETENTION_DATABASES };
useDatabase(WORKSPACES_DATABASE);
process.env.RETENTION_DATABASES = `${ACTIVITY}=${ACTIVITY_DB}`;
beforeAll(() => useRegistryForTests(registryWithActivity()));
afterAll(() => {
  useRegistryForTests(undefined);
  if (previous.dbs === undefined) delete process.env.RETENTION_DATABASES;
  else process.env.RETENTION_DATABASES = previous.dbs;
  if (previous.db !== undefined) process.env.RETENTION_DATABASE_ID = previous.db;
});
afterEach(() => vi.restoreAllMocks());

const ADA: Caller = { uid: "u-ada", tenantId: null, roles: [] };
const CREATED = Date.parse("2026-06-01T00:00:00Z");
const ADA_ACTIVITY = { "w-a": "workspaces/w-a/activity/e-1", "w-b": "workspaces/w-b/activity/e-2" } as const;
const BEN_ACTIVITY = "workspaces/w-a/activity/e-3";
const ACTOR = { type: "system", id: "group-cells-suite" } as const;

/** Ada in w-a and w-b (Ben in w-a), her profile and docs in the primary, her activity in each workspace in `activity`. */
async function seed(): Promise<void> {
  await clearFirestore(WORKSPACES_DATABASE);
  await clearFirestore(ACTIVITY_DB);
  await clearAuth();
  await seedWorkspaceDocs("member");
  await inCell(ACTIVITY, async () => {
    await writeGoverned(ADA_ACTIVITY["w-a"], { uid: "u-ada", kind: "opened" }, "w-a", CREATED);
    await writeGoverned(ADA_ACTIVITY["w-b"], { uid: "u-ada", kind: "edited" }, "w-b", CREATED);
    await writeGoverned(BEN_ACTIVITY, { uid: "u-ben", kind: "opened" }, "w-a", CREATED);
  });
  const auth = getAuth(adminApp());
  for (const uid of ["u-ada", "u-ben"]) await auth.createUser({ uid, email: `${uid}@example.test` });
}

const existsIn = async (cell: string, path: string) => (await inCell(cell, () => db().doc(path).get())).exists;
const requestIn = async (cell: string, id: string) => (await inCell(cell, () => db().doc(`deletionRequests/${id}`).get())).data();
const evidenceIn = (cell: string): Promise<ChainedEvidence[]> => inCell(cell, async () => (await db().collection("deletionAudits").get()).docs.map((d) => d.data() as ChainedEvidence));
const accountEvidence = async (cell: string) => (await evidenceIn(cell)).filter((e) => e.action.startsWith("AUTH_ACCOUNT"));
const accountExists = async (uid: string) =>
  getAuth(adminApp())
    .getUser(uid)
    .then(() => true)
    .catch(() => false);
const runOpts = (atMs: number, over: Partial<PurgeRunOptions> = {}): PurgeRunOptions => ({
  nowMs: atMs,
  asOfMs: atMs,
  dryRun: false,
  actor: { type: "system", id: "nightlyPurge" },
  correlationId: "group-cells",
  batchSize: 2,
  leaseMs: 60_000,
  ...over,
});
/** A member's purgeRequest task in `activity`, as the queue delivers it once the primary's task has released it. */
const activityTask = (requestId: string, atMs: number): PurgeRequestTask => ({ requestId, runKey: "0123456789abcdef0123456789abcdef", nowMs: atMs, asOfMs: atMs, correlationId: "group-cells", database: ACTIVITY });
const runTask = (task: PurgeRequestTask) => runPurgeRequestTask(task, { enqueueRequest: () => Promise.resolve(), leaseMs: 60_000 });

async function expectEveryChainVerifies(): Promise<void> {
  const results = await inEveryCell(() => verifyEvidence());
  expect(Object.keys(results)).toEqual([PRIMARY_CELL, ACTIVITY]);
  for (const [cell, r] of Object.entries(results)) expect([cell, r.ok, r.findings]).toEqual([cell, true, []]);
}

/** One intent and one outcome, both in the primary's evidence, both naming the group; none in `activity`. */
async function expectAccountTakenOnce(groupId: string): Promise<void> {
  expect(await accountExists("u-ada")).toBe(false);
  expect(await accountExists("u-ben")).toBe(true);
  const taken = await accountEvidence(PRIMARY_CELL);
  expect(taken.map((e) => [e.action, e.detail?.groupId]).sort()).toEqual([
    ["AUTH_ACCOUNT_DELETED", groupId],
    ["AUTH_ACCOUNT_DELETE_INTENT", groupId],
  ]);
  expect(await accountEvidence(ACTIVITY)).toEqual([]);
  // One member carries the account's record, and its timeline says it once each.
  const members = await Promise.all([groupId, ...(await otherMembers(groupId))].map((id) => requestIn(PRIMARY_CELL, id)));
  const recorded = members.filter((m) => m?.authDeletion !== undefined);
  expect(recorded.map((m) => (m?.authDeletion as { state?: unknown } | undefined)?.state)).toEqual(["DONE"]);
  const events = members.flatMap((m) => (m?.timeline as { event: string }[]).map((t) => t.event)).filter((e) => e.startsWith("AUTH_ACCOUNT"));
  expect(events.sort()).toEqual(["AUTH_ACCOUNT_DELETED", "AUTH_ACCOUNT_DELETE_INTENT"]);
}

async function otherMembers(groupId: string): Promise<string[]> {
  const snap = await inCell(PRIMARY_CELL, () => db().collection("deletionRequests").where("groupId", "==", groupId).get());
  return snap.docs.map((d) => d.id).filter((id) => id !== groupId);
}

/** Ada asks once: a group of two, each member with its cell request in `activity`. Returns the lead and the other. */
async function openGroup(): Promise<{ groupId: string; a: string; b: string; afterGrace: number }> {
  const opened = await requestAccountDeletionHandler({ reason: "leaving" }, ADA);
  const groupId = opened.requestId;
  expect(opened.group?.requests.map((r) => r.scope)).toEqual(["w-a", "w-b"]);
  const b = opened.group!.requests.find((r) => r.scope === "w-b")!.requestId;
  for (const id of [groupId, b]) {
    expect(await requestIn(PRIMARY_CELL, id)).toMatchObject({ groupId, cells: [ACTIVITY], cellsOutstanding: true });
    expect(await requestIn(ACTIVITY, id)).toMatchObject({ groupId, cellOf: PRIMARY_CELL, state: "PENDING", awaitingRecord: true });
  }
  return { groupId, a: groupId, b, afterGrace: Date.parse(opened.graceEndsAt) + DAY_MS };
}

/** The primary's purge takes both members (PURGED there), and the reconciliation releases their activity parts. */
async function purgePrimary(at: number, ids: { a: string; b: string }): Promise<void> {
  await inCell(PRIMARY_CELL, () => runNightlyPurge(runOpts(at, { sweep: false })));
  for (const id of [ids.a, ids.b]) expect((await requestIn(PRIMARY_CELL, id))?.state).toBe("PURGED");
  await reconcileCells(ACTOR, at);
  for (const id of [ids.a, ids.b]) expect(await requestIn(ACTIVITY, id)).toMatchObject({ state: "PENDING", awaitingRecord: false });
}

describe("a request group across two databases: the Auth account", () => {
  beforeEach(seed);

  it("survives while one member's activity part is not done, and goes once when it is; a redelivered task or a second nightly run changes nothing", async () => {
    const { groupId, a, b, afterGrace } = await openGroup();
    // Both members end PURGED in the primary: the account stays, neither activity part is done.
    await purgePrimary(afterGrace, { a, b });
    expect(await accountExists("u-ada")).toBe(true);
    expect(await accountEvidence(PRIMARY_CELL)).toEqual([]);

    // The lead's activity part finishes (its task: the cell's purge, then the record's account step): w-b's is not done.
    expect((await runTask(activityTask(a, afterGrace))).outcome).toBe("DONE");
    expect(await existsIn(ACTIVITY, ADA_ACTIVITY["w-a"])).toBe(false);
    expect(await existsIn(ACTIVITY, ADA_ACTIVITY["w-b"])).toBe(true);
    expect((await requestIn(ACTIVITY, a))?.state).toBe("PURGED");
    expect((await requestIn(ACTIVITY, b))?.state).toBe("PENDING");
    expect(await accountExists("u-ada")).toBe(true);
    // The nightly reconciliation and each member's account step ask again: still waiting.
    await reconcileCells(ACTOR, afterGrace);
    expect(await inCell(PRIMARY_CELL, () => finishRecordAccounts(a, ACTOR, afterGrace))).toBe("WAITING_FOR_CELLS");
    expect(await inCell(PRIMARY_CELL, () => finishRecordAccounts(b, ACTOR, afterGrace))).toBe("WAITING_FOR_CELLS");
    expect(await accountExists("u-ada")).toBe(true);
    expect([...(await accountEvidence(PRIMARY_CELL)), ...(await accountEvidence(ACTIVITY))]).toEqual([]);
    for (const id of [a, b]) expect((await requestIn(PRIMARY_CELL, id))?.cellsOutstanding).toBe(true);

    // The other member's activity part finishes last: its task takes the account, once, on the group's lead.
    expect((await runTask(activityTask(b, afterGrace))).outcome).toBe("DONE");
    expect(await existsIn(ACTIVITY, ADA_ACTIVITY["w-b"])).toBe(false);
    expect(await existsIn(ACTIVITY, BEN_ACTIVITY)).toBe(true);
    await expectAccountTakenOnce(groupId);
    expect((await requestIn(PRIMARY_CELL, a))?.authDeletion).toMatchObject({ state: "DONE", groupId, outcome: "deleted" });
    // The member whose task took it is settled; the lead is by the next reconciliation (nothing more to take).
    expect((await requestIn(PRIMARY_CELL, b))?.cellsOutstanding).toBe(false);

    // A redelivered task of each activity part, and a second nightly run: nothing more is taken or recorded.
    const before = { primary: (await evidenceIn(PRIMARY_CELL)).length, activity: (await evidenceIn(ACTIVITY)).length };
    for (const id of [a, b]) expect((await runTask(activityTask(id, afterGrace))).outcome).toBe("NOT_TAKEN");
    await runNightlyJob(runOpts(afterGrace + DAY_MS));
    expect({ primary: (await evidenceIn(PRIMARY_CELL)).length, activity: (await evidenceIn(ACTIVITY)).length }).toEqual(before);
    await expectAccountTakenOnce(groupId);
    for (const id of [a, b]) expect((await requestIn(PRIMARY_CELL, id))?.cellsOutstanding).toBe(false);
    await expectEveryChainVerifies();
  });

  it("every decider at once (both members' account steps, the nightly reconciliation, twice each) takes it once", async () => {
    const { groupId, a, b, afterGrace } = await openGroup();
    await purgePrimary(afterGrace, { a, b });
    // Both activity parts finish through the cell's own purge, which leaves the account to the record's step.
    await inCell(ACTIVITY, () => runNightlyPurge(runOpts(afterGrace, { sweep: false })));
    for (const id of [a, b]) expect((await requestIn(ACTIVITY, id))?.state).toBe("PURGED");
    expect(await accountExists("u-ada")).toBe(true);
    // Now every decider finds every part done, concurrently, each in its own transactions against the emulator.
    const deciders = [
      () => inCell(PRIMARY_CELL, () => finishRecordAccounts(a, ACTOR, afterGrace)),
      () => inCell(PRIMARY_CELL, () => finishRecordAccounts(b, ACTOR, afterGrace)),
      () => reconcileCells(ACTOR, afterGrace).then(() => "RECONCILED"),
    ];
    const outcomes = await Promise.all([...deciders, ...deciders].map((d) => d()));
    expect(outcomes.filter((o) => o !== "RECONCILED")).toEqual(["DONE", "DONE", "DONE", "DONE"]);
    await expectAccountTakenOnce(groupId);
    await expectEveryChainVerifies();
  });

  it("a member's finalize in the primary takes it once when it is the last (its activity part and the other member's are done)", async () => {
    const { groupId, a, b, afterGrace } = await openGroup();
    // The w-b member goes first, in both databases.
    await inCell(PRIMARY_CELL, () => runNightlyPurge(runOpts(afterGrace, { sweep: false, requestIds: [b] })));
    await reconcileCells(ACTOR, afterGrace);
    expect((await runTask(activityTask(b, afterGrace))).outcome).toBe("DONE");
    expect(await accountExists("u-ada")).toBe(true);
    // The lead's primary round, stalled before its finalize (taken: PROCESSING): meanwhile the reconciliation releases
    // its activity part and that part's task erases it and asks for the account, which waits for the lead.
    const during: string[] = [];
    const hook: PurgeHook = async (ctx) => {
      if (ctx.point !== "beforeFinalize" || ctx.unitKey !== a || during.length > 0) return;
      expect((await requestIn(PRIMARY_CELL, a))?.state).toBe("PROCESSING");
      await reconcileCells(ACTOR, afterGrace);
      during.push((await runTask(activityTask(a, afterGrace))).outcome);
      during.push(String(await accountExists("u-ada")));
    };
    await inCell(PRIMARY_CELL, () => runNightlyPurge(runOpts(afterGrace, { sweep: false, requestIds: [a], hook })));
    expect(during).toEqual(["DONE", "true"]);
    // The lead's round ended PURGED last: its finalize transaction recorded the intent on itself.
    await expectAccountTakenOnce(groupId);
    expect((await requestIn(PRIMARY_CELL, a))?.authDeletion).toMatchObject({ state: "DONE", groupId });
    await runNightlyJob(runOpts(afterGrace + DAY_MS));
    await expectAccountTakenOnce(groupId);
    for (const id of [a, b]) expect((await requestIn(PRIMARY_CELL, id))?.cellsOutstanding).toBe(false);
  });

  it("a crash between the intent and the outcome is finished by the nightly job, once", async () => {
    const { groupId, a, b, afterGrace } = await openGroup();
    await purgePrimary(afterGrace, { a, b });
    expect((await runTask(activityTask(a, afterGrace))).outcome).toBe("DONE");
    // The last activity part's task crashes in Auth's delete, after the intent's commit (the process dies there).
    const crash = vi.spyOn(Auth.prototype, "deleteUser").mockRejectedValueOnce(new Error("process died"));
    await expect(runTask(activityTask(b, afterGrace))).rejects.toThrow("process died");
    expect(crash).toHaveBeenCalledTimes(1);
    expect(await accountExists("u-ada")).toBe(true);
    expect((await accountEvidence(PRIMARY_CELL)).map((e) => e.action)).toEqual(["AUTH_ACCOUNT_DELETE_INTENT"]);
    expect((await requestIn(PRIMARY_CELL, a))?.authDeletion).toMatchObject({ state: "INTENT", groupId });
    for (const id of [a, b]) expect((await requestIn(PRIMARY_CELL, id))?.cellsOutstanding).toBe(true);
    // The nightly job (its resume, then the reconciliation's account step) finishes it: the outcome once.
    await runNightlyJob(runOpts(afterGrace + DAY_MS));
    await expectAccountTakenOnce(groupId);
    for (const id of [a, b]) expect((await requestIn(PRIMARY_CELL, id))?.cellsOutstanding).toBe(false);
    await runNightlyJob(runOpts(afterGrace + 2 * DAY_MS));
    await expectAccountTakenOnce(groupId);
  });
});
