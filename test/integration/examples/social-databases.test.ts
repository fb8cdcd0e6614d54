// The social example across its two governed databases (registry v4): the app's content in the primary, the
// activity log in `analytics`. One request erases a member in both; each database is a cell with its own requests,
// holds, fence, evidence and erasure-ledger entry (docs/decisions/0036-several-databases.md).
import { getAuth } from "firebase-admin/auth";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { SOCIAL_ANALYTICS_DOCS, SOCIAL_OBJECTS } from "../../../examples/social/data";
import { SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE, SOCIAL_ANALYTICS_RESTORED_DATABASE, SOCIAL_DATABASE, SOCIAL_RESTORED_DATABASE } from "../../../examples/social/registry";
import { NO_SCOPE, seedSocial, seedSocialAnalytics, seedSocialObjects } from "../../../examples/social/seed";
import { scanRetention } from "../../../functions/src/audit/index";
import { explainAcrossCells, inEveryCell, inEveryCellJob, reconcileCells, runPurgeRequestTask } from "../../../functions/src/cells/index";
import { runEvidenceAnchor } from "../../../functions/src/evidence/index";
import { localAnchors } from "../../../functions/src/platform/anchors";
import { inCellOf, requestTaskId } from "../../../functions/src/purge/runner/tasks";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { handleTtlDeleted, ttlTriggerTargetsByCell } from "../../../functions/src/entrypoints/firestore/ttl-deleted";
import { readLedger } from "../../../functions/src/erasure/index";
import { verifyEvidence } from "../../../functions/src/evidence/index";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";
import { listHolds, placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { runNightlyJob } from "../../../functions/src/jobs/nightly-purge";
import { DAY_MS, PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { inCell } from "../../../functions/src/platform/firestore";
import { readGoverned, toMs } from "../../../functions/src/platform/governed-doc";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { recordErasureCompletions, runNightlyPurge, type PurgeRequestTask, type PurgeRunOptions, type UnitReport } from "../../../functions/src/purge/index";
import { cancelDeletionRequest, openDeletionRequest } from "../../../functions/src/requests/index";
import { replayErasures } from "../../../functions/src/restore/index";
import { existsSync, rmSync } from "node:fs";
import { exportSubject } from "../../../functions/src/export/index";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { planSubject } from "../../../functions/src/plan/index";
import { inDatabase } from "../../../functions/src/platform/firestore";
import { defaultBucket, readObject } from "../../../functions/src/platform/storage";
import { deleteWindowsCol } from "../../../functions/src/holds/fence";
import { clearStorage, putObject } from "../../helpers/storage";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminApp, clearAnchors, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { retentionWith } from "../../helpers/cli";
import { repoRoot } from "../../helpers/policy";
import { onSocialExample } from "../../helpers/social";
import { expectHoldsFenced } from "../purge/support";
import { deleteEvent } from "../ttl/fixtures";

onSocialExample();

const T0 = Date.parse("2026-12-03T09:00:00Z");
const AFTER_GRACE = T0 + 8 * DAY_MS;
const ANA = { type: "user" as const, uid: "u-ana", tenantId: NO_SCOPE };
const ANA_EVENTS = SOCIAL_ANALYTICS_DOCS.filter((d) => d.data.uid === "u-ana").map((d) => d.path);
const OTHERS_EVENTS = SOCIAL_ANALYTICS_DOCS.filter((d) => d.data.uid !== "u-ana").map((d) => d.path);
const DANA = { type: "staff", id: "s-dana" } as const;
const ELI = { type: "staff", id: "s-eli" } as const;
const STAFF = { uid: "s-dana", tenantId: null, roles: ["compliance" as const] };

const runAsOf = (atMs: number, over: Partial<PurgeRunOptions> = {}): PurgeRunOptions => ({
  nowMs: atMs,
  asOfMs: atMs,
  dryRun: false,
  actor: { type: "system", id: "nightlyPurge" },
  correlationId: "social-databases",
  batchSize: 3,
  leaseMs: 60_000,
  ...over,
});

/** A document in one of the example's databases (by logical name). */
const docIn = (cell: string, path: string) => inCell(cell, () => db().doc(path).get());
const existsIn = async (cell: string, path: string) => (await docIn(cell, path)).exists;
const stateIn = async (cell: string, path: string) => readGoverned((await docIn(cell, path)).data())?.lifecycleState;
const requestIn = async (cell: string, id: string) => (await docIn(cell, `deletionRequests/${id}`)).data();
const evidenceIn = (cell: string): Promise<ChainedEvidence[]> => inCell(cell, async () => (await db().collection("deletionAudits").get()).docs.map((d) => d.data() as ChainedEvidence));
const status = (requestId: string, nowMs: number, caller: { uid: string; tenantId: string | null; roles: "compliance"[] } = STAFF) =>
  getDeletionStatusHandler({ requestId }, caller, { nowMs, refreshMs: DAY_MS });

async function expectEveryLedgerVerifies(): Promise<void> {
  const results = await inEveryCell(() => verifyEvidence());
  expect(Object.keys(results)).toEqual([PRIMARY_CELL, SOCIAL_ANALYTICS]);
  for (const [cell, r] of Object.entries(results)) {
    expect(r.findings, cell).toEqual([]);
    expect(r.ok, cell).toBe(true);
    expect(r.macs, cell).toBe("checked");
  }
}

async function freshSeed(): Promise<void> {
  await clearFirestore(SOCIAL_DATABASE);
  await clearFirestore(SOCIAL_ANALYTICS_DATABASE);
  await clearFirestore("erasure-ledger");
  await clearAuth();
  await seedSocial({ nowMs: T0 });
}

async function openAnasRequest(): Promise<string> {
  const { request } = await openDeletionRequest({ subject: ANA, source: "user", actor: { type: "user", id: "u-ana" }, nowMs: T0 });
  return request.requestId;
}

describe("one request erases a member in both databases", () => {
  let requestId: string;

  beforeEach(async () => {
    await freshSeed();
    requestId = await openAnasRequest();
  });

  it("opens a cell request in analytics that soft-deletes her events there and waits for the request of record", async () => {
    const record = await requestIn(PRIMARY_CELL, requestId);
    expect(record).toMatchObject({ state: "PENDING", cells: [SOCIAL_ANALYTICS], cellsOutstanding: true });
    expect(record?.cellOf).toBeUndefined();
    const cell = await requestIn(SOCIAL_ANALYTICS, requestId);
    expect(cell).toMatchObject({ state: "PENDING", cellOf: PRIMARY_CELL, awaitingRecord: true, softDeleteDone: true, uid: "u-ana", softDeleted: ANA_EVENTS.length });
    expect(toMs(cell?.graceEndsAt)).toBe(toMs(record?.graceEndsAt));
    for (const p of ANA_EVENTS) expect(await stateIn(SOCIAL_ANALYTICS, p), p).toBe("SOFT_DELETED");
    for (const p of OTHERS_EVENTS) expect(await stateIn(SOCIAL_ANALYTICS, p), p).toBe("ACTIVE");
    // Each database's evidence is its own chain: the cell's opening and its soft delete are in analytics'.
    const actions = (await evidenceIn(SOCIAL_ANALYTICS)).map((e) => e.action).sort();
    expect(actions).toEqual(["CELL_REQUEST_OPENED", "SUBJECT_SOFT_DELETED"]);
    expect((await evidenceIn(PRIMARY_CELL)).some((e) => e.action === "CELL_REQUEST_OPENED")).toBe(false);
    // The status reads every database: her request is in its grace in both.
    const s = await status(requestId, T0 + 1000);
    expect(s.state).toBe("PENDING");
    expect(s.cells?.map((c) => [c.database, c.state, c.awaitingRecord])).toEqual([
      [PRIMARY_CELL, "PENDING", false],
      [SOCIAL_ANALYTICS, "PENDING", true],
    ]);
    expect(s.fullyGoneByUnknown).toBe("NOT_ERASED_YET");
    expect(s.timeline.some((t) => t.database === SOCIAL_ANALYTICS && t.event === "CELL_OPENED")).toBe(true);
  });

  it("no purge of analytics takes the cell request before the primary's purge has taken the request of record", async () => {
    const early = await inCell(SOCIAL_ANALYTICS, () => runNightlyPurge(runAsOf(AFTER_GRACE, { sweep: false })));
    expect(early.units).toEqual([]);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("PENDING");
    for (const p of ANA_EVENTS) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(true);
  });

  it("erases her in both, each database with its own evidence and erasure-ledger entry; the Auth account goes once, after the last", async () => {
    // The primary's purge first: its part ends PURGED, and the account stays (analytics is not done).
    const primary = await runNightlyPurge(runAsOf(AFTER_GRACE, { sweep: false }));
    expect((primary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    expect((await requestIn(PRIMARY_CELL, requestId))?.state).toBe("PURGED");
    expect((await status(requestId, AFTER_GRACE)).state).toBe("PROCESSING");
    await expect(getAuth(adminApp()).getUser("u-ana")).resolves.toMatchObject({ uid: "u-ana" });
    // The reconciliation releases the cell request (the record was taken); analytics' purge takes it.
    await reconcileCells(DANA, AFTER_GRACE);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.awaitingRecord).toBe(false);
    await expect(getAuth(adminApp()).getUser("u-ana")).resolves.toMatchObject({ uid: "u-ana" });
    const cell = await inCell(SOCIAL_ANALYTICS, () => runNightlyPurge(runAsOf(AFTER_GRACE, { sweep: false })));
    expect((cell.units as UnitReport[]).map((u) => [u.unitKey, u.outcome])).toEqual([[requestId, "DONE"]]);
    for (const p of ANA_EVENTS) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(false);
    for (const p of OTHERS_EVENTS) expect(await stateIn(SOCIAL_ANALYTICS, p), p).toBe("ACTIVE");
    // A cell's finalize never deletes the account; the request of record does, once every cell is done.
    await expect(getAuth(adminApp()).getUser("u-ana")).resolves.toMatchObject({ uid: "u-ana" });
    await reconcileCells(DANA, AFTER_GRACE + 1000);
    await expect(getAuth(adminApp()).getUser("u-ana")).rejects.toMatchObject({ code: "auth/user-not-found" });
    await expect(getAuth(adminApp()).getUser("u-bo")).resolves.toMatchObject({ uid: "u-bo" });
    // Once: one intent and one outcome, in the primary's chain; none in analytics'; and again nothing.
    await reconcileCells(DANA, AFTER_GRACE + 2000);
    const primaryEvidence = await evidenceIn(PRIMARY_CELL);
    expect(primaryEvidence.filter((e) => e.action === "AUTH_ACCOUNT_DELETED")).toHaveLength(1);
    expect(primaryEvidence.filter((e) => e.action === "AUTH_ACCOUNT_DELETE_INTENT")).toHaveLength(1);
    expect((await evidenceIn(SOCIAL_ANALYTICS)).some((e) => e.action.startsWith("AUTH_ACCOUNT"))).toBe(false);
    expect(await requestIn(PRIMARY_CELL, requestId)).toMatchObject({ authDeletion: { state: "DONE" }, cellsOutstanding: false });
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.authDeletion).toBeUndefined();
    // Each database recorded its own purge and its own erasure-ledger entry.
    const analyticsActions = new Set((await evidenceIn(SOCIAL_ANALYTICS)).map((e) => e.action));
    for (const a of ["CELL_REQUEST_RELEASED", "PURGE_DECIDED", "PURGE_BATCH", "PURGE_VERIFIED"]) expect(analyticsActions.has(a), a).toBe(true);
    const ledger = (await readLedger()).filter((e) => e.requestId === requestId);
    expect(ledger.map((e) => e.database ?? PRIMARY_CELL).sort()).toEqual([SOCIAL_ANALYTICS, PRIMARY_CELL].sort());
    await expectEveryLedgerVerifies();
  });

  it("reports PURGED and the latest 'fully gone by' only when both are done, and ERASURE_COMPLETE waits for the last database", async () => {
    await runNightlyJob(runAsOf(AFTER_GRACE));
    const s = await status(requestId, AFTER_GRACE + 1000);
    expect(s.state).toBe("PURGED");
    expect(s.cells?.map((c) => [c.database, c.state])).toEqual([
      [PRIMARY_CELL, "PURGED"],
      [SOCIAL_ANALYTICS, "PURGED"],
    ]);
    const dates = s.cells!.map((c) => Date.parse(c.fullyGoneBy!));
    expect(Date.parse(s.fullyGoneBy!)).toBe(Math.max(...dates));
    expect(s.fullyGoneByUnknown).toBeNull();
    expect(s.erasureCompleteAt).toBeNull();
    // The subject sees the same state and date, and nothing of a hold (there is none here).
    const own = await status(requestId, AFTER_GRACE + 1000, { uid: "u-ana", tenantId: null, roles: [] as "compliance"[] });
    expect([own.state, own.fullyGoneBy]).toEqual([s.state, s.fullyGoneBy]);
    expect(own.staff).toBeUndefined();
    // Past the date: the cell records its own ERASURE_COMPLETE first; the record's waits for it (here the primary's
    // completion runs first, as a run that failed in analytics would leave it) and then records its own.
    const past = Math.max(...dates) + 1000;
    const primaryFirst = await recordErasureCompletions(runAsOf(past));
    expect(primaryFirst).toMatchObject({ due: 1, recorded: 0, waitingForCells: 1 });
    expect((await requestIn(PRIMARY_CELL, requestId))?.erasureComplete).toBe(false);
    await inCell(SOCIAL_ANALYTICS, () => recordErasureCompletions(runAsOf(past)));
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.erasureComplete).toBe(true);
    expect(await recordErasureCompletions(runAsOf(past))).toMatchObject({ recorded: 1 });
    const complete = (await evidenceIn(PRIMARY_CELL)).find((e) => e.action === "ERASURE_COMPLETE");
    expect(complete?.detail).toMatchObject({ latestFullyGoneBy: s.fullyGoneBy, cells: `${SOCIAL_ANALYTICS}:${s.cells![1]!.fullyGoneBy}` });
    expect((await status(requestId, past)).erasureCompleteAt).not.toBeNull();
    await expectEveryLedgerVerifies();
  });

  it("the audit over both databases finds nothing wrong after her erasure", async () => {
    await runNightlyJob(runAsOf(AFTER_GRACE));
    // Before the notifications' 30 days are up (their TTL is not swept by the emulator).
    const audits = await inEveryCell(() => scanRetention({ nowMs: AFTER_GRACE + DAY_MS }));
    expect(Object.keys(audits)).toEqual([PRIMARY_CELL, SOCIAL_ANALYTICS]);
    for (const [cell, a] of Object.entries(audits)) expect(a.findings, cell).toEqual([]);
    expect(audits[SOCIAL_ANALYTICS]!.stats.documents).toBe(OTHERS_EVENTS.length);
  });

  it("a cancel in the grace period restores both databases, and no later run erases anything", async () => {
    const { restored } = await cancelDeletionRequest(requestId, { uid: "u-ana", retentionAdmin: false }, { type: "user", id: "u-ana" }, T0 + DAY_MS);
    expect(restored).toBeGreaterThanOrEqual(ANA_EVENTS.length);
    expect((await requestIn(PRIMARY_CELL, requestId))?.state).toBe("CANCELLED");
    expect(await requestIn(SOCIAL_ANALYTICS, requestId)).toMatchObject({ state: "CANCELLED", awaitingRecord: true });
    for (const p of ANA_EVENTS) expect(await stateIn(SOCIAL_ANALYTICS, p), p).toBe("ACTIVE");
    expect(await stateIn(PRIMARY_CELL, "users/u-ana")).toBe("ACTIVE");
    expect((await status(requestId, T0 + DAY_MS)).state).toBe("CANCELLED");
    expect((await evidenceIn(SOCIAL_ANALYTICS)).map((e) => e.action)).toEqual(expect.arrayContaining(["DELETION_CANCEL_REQUESTED", "SOFT_DELETE_RESTORED", "DELETION_CANCELLED"]));
    await runNightlyJob(runAsOf(AFTER_GRACE));
    for (const p of ANA_EVENTS) expect(await stateIn(SOCIAL_ANALYTICS, p), p).toBe("ACTIVE");
    expect(await existsIn(PRIMARY_CELL, "users/u-ana")).toBe(true);
    await expect(getAuth(adminApp()).getUser("u-ana")).resolves.toMatchObject({ uid: "u-ana" });
    expect((await requestIn(PRIMARY_CELL, requestId))?.cellsOutstanding).toBe(false);
  });

  it("a cancel interrupted before it reached analytics is finished by the nightly reconciliation", async () => {
    // The request of record is cancelled in the primary alone (what a crash after its commit leaves).
    const { cancelDeletionRequest: cancelRecordOnly } = await import("../../../functions/src/requests/service");
    await cancelRecordOnly(requestId, { uid: "u-ana", retentionAdmin: false }, { type: "user", id: "u-ana" }, T0 + DAY_MS);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("PENDING");
    expect((await status(requestId, T0 + DAY_MS)).state).toBe("CANCELLING");
    // Past the grace, the night's job follows the cancel before anything: analytics' events come back, none is erased.
    await runNightlyJob(runAsOf(AFTER_GRACE));
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("CANCELLED");
    for (const p of ANA_EVENTS) expect(await stateIn(SOCIAL_ANALYTICS, p), p).toBe("ACTIVE");
    expect((await status(requestId, AFTER_GRACE)).state).toBe("CANCELLED");
  });
});

describe("the per-request tasks across databases", () => {
  beforeEach(freshSeed);

  it("the primary's task releases analytics' request and enqueues its task, whose run lets the record delete the account", async () => {
    const requestId = await openAnasRequest();
    const queued: PurgeRequestTask[] = [];
    const enqueueRequest = (t: PurgeRequestTask) => {
      // The task the queue would get: stamped with the database it is enqueued from (purge/runner/tasks.ts#inCellOf).
      queued.push(inCellOf(t));
      return Promise.resolve();
    };
    const task: PurgeRequestTask = { requestId, runKey: "0123456789abcdef0123456789abcdef", nowMs: AFTER_GRACE, asOfMs: AFTER_GRACE, correlationId: "tasks" };
    const primary = await runPurgeRequestTask(task, { enqueueRequest, leaseMs: 60_000 });
    expect(primary.outcome).toBe("DONE");
    expect(queued).toEqual([{ ...task, database: SOCIAL_ANALYTICS }]);
    expect(await requestIn(SOCIAL_ANALYTICS, requestId)).toMatchObject({ state: "PENDING", awaitingRecord: false });
    await expect(getAuth(adminApp()).getUser("u-ana")).resolves.toMatchObject({ uid: "u-ana" });
    // The cell's task, as the queue delivers it: in analytics, then the record's account step.
    const cell = await runPurgeRequestTask(queued[0]!, { enqueueRequest, leaseMs: 60_000 });
    expect(cell.outcome).toBe("DONE");
    for (const p of ANA_EVENTS) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(false);
    await expect(getAuth(adminApp()).getUser("u-ana")).rejects.toMatchObject({ code: "auth/user-not-found" });
    expect((await status(requestId, AFTER_GRACE)).state).toBe("PURGED");
    // A retried delivery of either finds nothing left to take, and queues nothing twice.
    expect((await runPurgeRequestTask(queued[0]!, { enqueueRequest, leaseMs: 60_000 })).outcome).toBe("NOT_TAKEN");
    expect((await runPurgeRequestTask(task, { enqueueRequest, leaseMs: 60_000 })).outcome).toBe("NOT_TAKEN");
    expect(queued.map((q) => requestTaskId(q))).toEqual([requestTaskId(queued[0]!), requestTaskId(queued[0]!)]);
    expect(requestTaskId(queued[0]!)).not.toBe(requestTaskId(task));
  });

  it("the evidence anchor job anchors every database's heads, and explain finds a request's evidence in both", async () => {
    const requestId = await openAnasRequest();
    await runNightlyJob(runAsOf(AFTER_GRACE));
    await clearAnchors(SOCIAL_DATABASE);
    await clearAnchors(SOCIAL_ANALYTICS_DATABASE);
    const anchor = await inEveryCellJob(runEvidenceAnchor)({ nowMs: Date.now(), asOfMs: null, dryRun: false, actor: { type: "system", id: "evidenceAnchor" }, correlationId: "anchors" });
    expect(Object.keys((anchor.cells ?? {}))).toEqual([SOCIAL_ANALYTICS]);
    for (const database of [SOCIAL_DATABASE, SOCIAL_ANALYTICS_DATABASE]) {
      const anchors = (await localAnchors(database).get()).docs.map((d) => d.data() as { event: string; anchor: { databaseId: string; heads: object } });
      const periodic = anchors.filter((a) => a.event === "retention.evidence.anchor");
      expect(periodic.length, database).toBe(1);
      expect(periodic[0]!.anchor.databaseId).toBe(database);
      expect(Object.keys(periodic[0]!.anchor.heads).length, database).toBeGreaterThan(0);
    }
    await expectEveryLedgerVerifies();
    // "Why was it deleted?": the request's entries in each database, each named by its database, database by database.
    const first = await explainAcrossCells({ kind: "request", value: requestId }, { pageSize: 100 });
    expect(new Set(first.entries.map((e) => e.database))).toEqual(new Set([PRIMARY_CELL]));
    expect(first.nextCursor).not.toBeNull();
    const second = await explainAcrossCells({ kind: "request", value: requestId }, { pageSize: 100, cursor: first.nextCursor! });
    expect(new Set(second.entries.map((e) => e.database))).toEqual(new Set([SOCIAL_ANALYTICS]));
    expect(second.entries.map((e) => e.action)).toEqual(expect.arrayContaining(["CELL_REQUEST_OPENED", "CELL_REQUEST_RELEASED", "PURGE_VERIFIED"]));
    expect(second.verification.ok).toBe(true);
    expect(second.nextCursor).toBeNull();
    const onlyAnalytics = await explainAcrossCells({ kind: "path", value: ANA_EVENTS[0]! }, { database: SOCIAL_ANALYTICS });
    expect(onlyAnalytics.entries.filter((e) => e.role === "match").map((e) => e.action)).toEqual(expect.arrayContaining(["PURGE_BATCH"]));
  });
});

describe("a hold in the analytics database", () => {
  let requestId: string;
  const HELD = "events/ev-ana-2";

  beforeEach(async () => {
    await freshSeed();
    requestId = await openAnasRequest();
  });

  it("keeps that part (the request of record RETAINED_UNDER_HOLD), and its release lets the next run finish", async () => {
    const { holdId } = await placeHold({ targetPath: HELD, database: SOCIAL_ANALYTICS, reasonCode: "ABUSE_INVESTIGATION", releaseAfterMs: null, actor: DANA, nowMs: T0 + 1000 });
    // The hold lives in analytics, fenced there; the list names its database.
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("PENDING");
    expect((await docIn(SOCIAL_ANALYTICS, `retentionHolds/${holdId}`)).exists).toBe(true);
    expect((await docIn(PRIMARY_CELL, `retentionHolds/${holdId}`)).exists).toBe(false);
    const listed = await listHolds({ callerUid: "s-eli", nowMs: T0 + 2000 });
    expect(listed.items.map((h) => [h.holdId, h.targetPath, h.database])).toEqual([[holdId, HELD, SOCIAL_ANALYTICS]]);
    expect((await listHolds({ callerUid: "s-eli", nowMs: T0 + 2000, database: PRIMARY_CELL })).items).toEqual([]);

    await runNightlyJob(runAsOf(AFTER_GRACE));
    expect((await requestIn(PRIMARY_CELL, requestId))?.state).toBe("PURGED");
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("RETAINED_UNDER_HOLD");
    expect(await existsIn(SOCIAL_ANALYTICS, HELD)).toBe(true);
    for (const p of ANA_EVENTS.filter((x) => x !== HELD)) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(false);
    const s = await status(requestId, AFTER_GRACE + 1000);
    expect(s.state).toBe("RETAINED_UNDER_HOLD");
    expect([s.fullyGoneBy, s.fullyGoneByUnknown]).toEqual([null, "RETAINED_UNDER_HOLD"]);
    expect(s.retained.find((r) => r.path === HELD)).toMatchObject({ database: SOCIAL_ANALYTICS, reasonCode: "ABUSE_INVESTIGATION" });
    expect(s.staff?.retainedUnderHold).toMatchObject({ count: 1, holds: [{ holdId, reasonCode: "ABUSE_INVESTIGATION" }] });
    // The subject is told "a legal obligation", never the hold's reason.
    const own = await status(requestId, AFTER_GRACE + 1000, { uid: "u-ana", tenantId: null, roles: [] as "compliance"[] });
    expect(own.retained.find((r) => r.path === HELD)).toMatchObject({ reasonCode: "LEGAL_OBLIGATION", database: SOCIAL_ANALYTICS });
    // Every database erased all it may: the account goes (decision 0003 across databases).
    await expect(getAuth(adminApp()).getUser("u-ana")).rejects.toMatchObject({ code: "auth/user-not-found" });

    await releaseHoldById({ holdId, reason: "case closed", actor: ELI, nowMs: AFTER_GRACE + 2000 });
    await runNightlyJob(runAsOf(AFTER_GRACE + DAY_MS));
    expect(await existsIn(SOCIAL_ANALYTICS, HELD)).toBe(false);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("PURGED");
    const after = await status(requestId, AFTER_GRACE + DAY_MS);
    expect(after.state).toBe("PURGED");
    expect(after.fullyGoneBy).not.toBeNull();
    // The later cell's date is the request's.
    expect(Date.parse(after.fullyGoneBy!)).toBe(Date.parse(after.cells![1]!.fullyGoneBy!));
    await expectEveryLedgerVerifies();
  });

  it("landing mid-batch in analytics' purge wins, as in the primary: the fence stops the batch that decided before it", async () => {
    await runNightlyPurge(runAsOf(AFTER_GRACE, { sweep: false }));
    await reconcileCells(DANA, AFTER_GRACE);
    const before = new Set(SOCIAL_ANALYTICS_DOCS.map((d) => d.path));
    let placed = false;
    let holdId = "";
    const summary = await inCell(SOCIAL_ANALYTICS, () =>
      runNightlyPurge(
        runAsOf(AFTER_GRACE, {
          sweep: false,
          batchSize: 1,
          parallelBatches: 1,
          // Inside the first delete batch's transaction run, before it commits: a compliance officer holds an event
          // of a later batch. That batch was decided under the old fence generation; it must read the hold and stop.
          hook: async (ctx: PurgeHookContext) => {
            if (placed || ctx.point !== "afterExecute" || ctx.paths.length === 0) return;
            placed = true;
            // An event of a later batch: batches run in name order, one event each.
            const target = ANA_EVENTS.filter((p) => !ctx.paths.includes(p)).at(-1)!;
            ({ holdId } = await placeHold({ targetPath: target, database: SOCIAL_ANALYTICS, reasonCode: "LITIGATION", releaseAfterMs: null, actor: DANA, nowMs: AFTER_GRACE }));
          },
        }),
      ),
    );
    expect(placed).toBe(true);
    expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    const held = (await docIn(SOCIAL_ANALYTICS, `retentionHolds/${holdId}`)).get("targetPath") as string;
    expect(await existsIn(SOCIAL_ANALYTICS, held)).toBe(true);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("RETAINED_UNDER_HOLD");
    const entries = await evidenceIn(SOCIAL_ANALYTICS);
    expect(entries.filter((e) => e.action === "PURGE_HOLD_STOPPED").flatMap((e) => e.paths ?? [])).toContain(held);
    expect(await inCell(SOCIAL_ANALYTICS, () => expectHoldsFenced(entries, before))).toBeGreaterThan(0);
    expect((await status(requestId, AFTER_GRACE + 1000)).state).toBe("RETAINED_UNDER_HOLD");
    await expectEveryLedgerVerifies();
  });
});

describe("the analytics database's TTL trigger", () => {
  beforeEach(freshSeed);

  it("is generated for (analytics, events), and its handler records a sweeper's delete in analytics' own ledger", async () => {
    const targets = ttlTriggerTargetsByCell();
    const target = targets.find((t) => t.cell === SOCIAL_ANALYTICS)!;
    expect(targets.map((t) => [t.cell, t.name, t.pattern])).toEqual([
      [PRIMARY_CELL, "notifications", "notifications/{notificationId}"],
      [SOCIAL_ANALYTICS, "analytics__events", "events/{eventId}"],
    ]);
    // The sweeper deletes an expired event of Bo's (the emulator does not sweep: a plain delete stands in for it).
    const path = "events/ev-bo-1";
    const snap = await docIn(SOCIAL_ANALYTICS, path);
    expect(readGoverned(snap.data())?.expireAtMs).toBe(T0 + 90 * DAY_MS);
    await inCell(SOCIAL_ANALYTICS, () => db().doc(path).delete());
    const event = deleteEvent(snap, "evt-analytics-1", { eventId: "ev-bo-1" }, new Date(T0 + 91 * DAY_MS).toISOString());
    const result = await handleTtlDeleted(target, event);
    expect(result.outcome).toBe("PROCESSED");
    expect((await handleTtlDeleted(target, event)).outcome).toBe("DUPLICATE");
    expect((await docIn(SOCIAL_ANALYTICS, "processedEvents/evt-analytics-1")).get("state")).toBe("DONE");
    expect((await docIn(PRIMARY_CELL, "processedEvents/evt-analytics-1")).exists).toBe(false);
    const ttl = (await evidenceIn(SOCIAL_ANALYTICS)).filter((e) => e.action === "TTL_DELETE");
    expect(ttl.map((e) => e.paths)).toEqual([[path]]);
    expect((await evidenceIn(PRIMARY_CELL)).some((e) => e.action === "TTL_DELETE")).toBe(false);
    await expectEveryLedgerVerifies();
  });
});

describe("a restored copy of the analytics database", () => {
  const replay = (apply: boolean) => replayErasures({ databaseId: SOCIAL_ANALYTICS_RESTORED_DATABASE, cell: SOCIAL_ANALYTICS, apply, actor: DANA, nowMs: AFTER_GRACE + 2 * DAY_MS });

  beforeEach(async () => {
    await freshSeed();
    await openAnasRequest();
    await runNightlyJob(runAsOf(AFTER_GRACE));
    // A backup of analytics taken before she asked, restored after her erasure.
    await clearFirestore(SOCIAL_ANALYTICS_RESTORED_DATABASE);
    await seedSocialAnalytics(T0, SOCIAL_ANALYTICS_RESTORED_DATABASE);
  });

  it("is put right from analytics' erasure-ledger entries: her events erased again there, the others' left", async () => {
    const dry = await replay(false);
    expect(dry.cell).toBe(SOCIAL_ANALYTICS);
    // The ledger holds an entry of each database; the copy of analytics is matched against analytics' alone.
    expect(dry.ledgerEntries).toBe(1);
    expect(dry.subjects.map((s) => [s.kind, s.uid, s.action, s.toDelete])).toEqual([["user", "u-ana", "erase", ANA_EVENTS.length]]);
    const applied = await replay(true);
    expect(applied.problems).toBe(0);
    expect(applied.subjects[0]?.outcome).toMatch(/^DONE\b/);
    await inCell(
      SOCIAL_ANALYTICS,
      async () => {
        for (const p of ANA_EVENTS) expect((await db().doc(p).get()).exists, p).toBe(false);
        for (const p of OTHERS_EVENTS) expect((await db().doc(p).get()).exists, p).toBe(true);
        // The reopened request there is a cell request: the Auth account is none of its business.
        const reopened = (await db().doc(`deletionRequests/${applied.subjects[0]!.requestId}`).get()).data();
        expect(reopened).toMatchObject({ state: "PURGED", cellOf: PRIMARY_CELL });
        expect(reopened?.authDeletion).toBeUndefined();
      },
      SOCIAL_ANALYTICS_RESTORED_DATABASE,
    );
    expect((await replay(false)).toErase).toBe(0);
    // The live databases were not touched by the replay.
    for (const p of OTHERS_EVENTS) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(true);
  });
});

describe("the operator CLI across the two databases", () => {
  // The CLI as an operator runs it on the example's data: a process enforcing the example's registry bundle
  // (`npm run build` writes it), with the suite's databases (the environment this suite set).
  const cli = (args: string[]) => retentionWith(args, { RETENTION_REGISTRY_FILE: join(repoRoot, "functions", "registries", "social.json") });
  const asOf = new Date(AFTER_GRACE + DAY_MS).toISOString();

  it("shows a request's databases, places and releases a hold in analytics, and audits, verifies, exports, explains and plans both", async () => {
    await freshSeed();
    const requestId = await openAnasRequest();
    await runNightlyJob(runAsOf(AFTER_GRACE));

    const shown = await cli(["requests", "show", requestId, "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    const s = JSON.parse(shown.stdout) as { state: string; cells: { database: string; state: string }[] };
    expect(s.state).toBe("PURGED");
    expect(s.cells.map((c) => [c.database, c.state])).toEqual([
      [PRIMARY_CELL, "PURGED"],
      [SOCIAL_ANALYTICS, "PURGED"],
    ]);
    expect((await cli(["requests", "show", requestId])).stdout).toMatch(/DATABASE +STATE +FULLY GONE BY/);

    const placed = await cli(["holds", "place", "events/ev-bo-1", "--database", SOCIAL_ANALYTICS, "--reason-code", "LITIGATION", "--as", "s-dana", "--json"]);
    expect(placed.code, placed.stderr).toBe(0);
    const { holdId, databases } = JSON.parse(placed.stdout) as { holdId: string; databases: string[] };
    expect(databases).toEqual([SOCIAL_ANALYTICS]);
    expect((await docIn(SOCIAL_ANALYTICS, "events/ev-bo-1")).get("holdIds")).toEqual([holdId]);
    const listed = JSON.parse((await cli(["holds", "list", "--json"])).stdout) as { items: { holdId: string; database: string }[] };
    expect(listed.items.map((h) => [h.holdId, h.database])).toEqual([[holdId, SOCIAL_ANALYTICS]]);
    expect(JSON.parse((await cli(["holds", "list", "--database", PRIMARY_CELL, "--json"])).stdout)).toMatchObject({ items: [] });
    const released = await cli(["holds", "release", holdId, "--reason", "case closed", "--as", "s-eli", "--json"]);
    expect(released.code, released.stderr).toBe(0);
    expect((await docIn(SOCIAL_ANALYTICS, `retentionHolds/${holdId}`)).get("state")).toBe("RELEASED");

    const audit = await cli(["audit", "--skip-subjects", "--as-of", asOf, "--json"]);
    expect(audit.code, audit.stdout).toBe(0);
    expect(Object.keys((JSON.parse(audit.stdout) as { databases: object }).databases)).toEqual([PRIMARY_CELL, SOCIAL_ANALYTICS]);
    const verified = await cli(["verify-evidence", "--json"]);
    expect(verified.code, verified.stdout).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, databases: { [PRIMARY_CELL]: { ok: true }, [SOCIAL_ANALYTICS]: { ok: true } } });
    const narrowed = JSON.parse((await cli(["verify-evidence", "--database", SOCIAL_ANALYTICS, "--json"])).stdout) as { databases: object };
    expect(Object.keys(narrowed.databases)).toEqual([SOCIAL_ANALYTICS]);

    // The anchor job, as an operator runs it: every database's heads anchored (an auditor's bundle carries them).
    const anchored = await cli(["run", "evidenceAnchor", "--as", "s-dana", "--json"]);
    expect(anchored.code, anchored.stderr).toBe(0);
    expect(Object.keys((JSON.parse(anchored.stdout) as { cells: object }).cells)).toEqual([SOCIAL_ANALYTICS]);
    const out = join(await mkdtemp(join(tmpdir(), "evidence-")), "bundle");
    const exported = await cli(["export-evidence", "--out", out, "--json"]);
    expect(exported.code, exported.stdout).toBe(0);
    expect(existsSync(join(out, "manifest.json"))).toBe(true);
    expect(existsSync(join(out, "databases", SOCIAL_ANALYTICS, "manifest.json"))).toBe(true);
    const offline = await cli(["verify-evidence", "--bundle", out, "--json"]);
    expect(offline.code, offline.stdout).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ ok: true, databases: { [PRIMARY_CELL]: { ok: true }, [SOCIAL_ANALYTICS]: { ok: true } } });

    const explained = JSON.parse((await cli(["explain", "--request", requestId, "--json"])).stdout) as { entries: { database: string }[]; nextCursor: string | null };
    expect(explained.entries.every((e) => e.database === PRIMARY_CELL)).toBe(true);
    expect(explained.nextCursor).not.toBeNull();
    const plan = JSON.parse((await cli(["plan", "--subject", "u-bo", "--json"])).stdout) as { databases: Record<string, { delete: string[] }> };
    expect(Object.keys(plan.databases)).toEqual([PRIMARY_CELL, SOCIAL_ANALYTICS]);
    expect(plan.databases[SOCIAL_ANALYTICS]!.delete.sort()).toEqual(OTHERS_EVENTS.filter((p) => p.includes("-bo-")).sort());

    await clearFirestore(SOCIAL_ANALYTICS_RESTORED_DATABASE);
    await seedSocialAnalytics(T0, SOCIAL_ANALYTICS_RESTORED_DATABASE);
    const replay = await cli(["replay-erasures", "--database", SOCIAL_ANALYTICS_RESTORED_DATABASE, "--of", SOCIAL_ANALYTICS, "--as", "s-dana", "--json"]);
    expect(replay.code).toBe(1);
    expect(JSON.parse(replay.stdout)).toMatchObject({ databaseId: SOCIAL_ANALYTICS_RESTORED_DATABASE, cell: SOCIAL_ANALYTICS, toErase: 1, subjects: [{ uid: "u-ana", action: "erase" }] });
    const refused = await cli(["replay-erasures", "--database", SOCIAL_ANALYTICS, "--json"]);
    expect(refused.code).toBe(2);
  });
});

describe("her objects across the two databases: one bucket, planned, deleted, held, exported and replayed once, with the primary", () => {
  // The avatars and uploads are held with users/{uid}, a document of the primary: the primary's part of her request
  // takes them, in delete windows ordered by the primary's fence (kernel/policy.ts#cellOfEntry); analytics' never lists them.
  const ANA_OBJECTS = SOCIAL_OBJECTS.filter((o) => o.name.startsWith("users/u-ana/")).map((o) => o.name);
  const OTHERS_OBJECTS = SOCIAL_OBJECTS.filter((o) => !o.name.startsWith("users/u-ana/")).map((o) => o.name);
  const gs = (name: string) => objectPath(defaultBucket(), name);
  const generationOf = async (name: string) => (await readObject(defaultBucket(), name))?.generation ?? null;
  /** Every PURGE_OBJECTS line of every database's evidence, with the database it is in. */
  const objectLines = async (): Promise<string[]> => {
    const lines: string[] = [];
    for (const cell of [PRIMARY_CELL, SOCIAL_ANALYTICS]) {
      for (const e of await evidenceIn(cell)) if (e.action === "PURGE_OBJECTS") lines.push(...String(e.detail?.objects ?? "").split("\n").map((l) => `${cell} ${l}`));
    }
    return lines.sort();
  };
  let requestId: string;

  beforeEach(async () => {
    await clearStorage();
    await freshSeed();
    await seedSocialObjects();
    requestId = await openAnasRequest();
  });
  // The bucket is shared by every suite of the run: leave nothing behind.
  afterAll(clearStorage);

  it("are planned and exported in the primary's part only, and each is deleted once, with one evidence line, whatever the runs", async () => {
    const generations = new Map(await Promise.all(ANA_OBJECTS.map(async (n) => [n, (await generationOf(n))!] as const)));
    const plans = await inEveryCell(() => planSubject(ANA, AFTER_GRACE));
    expect(plans[PRIMARY_CELL]?.objects.map((o) => o.path).sort()).toEqual(ANA_OBJECTS.map(gs).sort());
    expect(plans[SOCIAL_ANALYTICS]?.objects).toEqual([]);
    expect(plans[SOCIAL_ANALYTICS]?.delete.some((p) => p.startsWith("gs://"))).toBe(false);
    // Her export holds both databases' documents and each object once.
    const out = await mkdtemp(join(tmpdir(), "social-databases-export-"));
    rmSync(out, { recursive: true, force: true });
    const manifest = await exportSubject({ subject: ANA, outDir: out, nowMs: T0 + 1000 });
    expect((manifest.objects ?? []).map((o) => o.name).sort()).toEqual([...ANA_OBJECTS].sort());
    expect(manifest.files.map((f) => f.file)).toContain("analytics--events.jsonl");
    rmSync(out, { recursive: true, force: true });

    await runNightlyJob(runAsOf(AFTER_GRACE));
    for (const n of ANA_OBJECTS) expect(await generationOf(n), n).toBeNull();
    for (const n of OTHERS_OBJECTS) expect(await generationOf(n), n).not.toBeNull();
    for (const p of ANA_EVENTS) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(false);
    expect((await requestIn(PRIMARY_CELL, requestId))?.state).toBe("PURGED");
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("PURGED");
    const once = ANA_OBJECTS.map((n) => `${PRIMARY_CELL} ${gs(n)}#${generations.get(n)} deleted`).sort();
    expect(await objectLines()).toEqual(once);
    // The deletes ran in delete windows of the primary, decided on the primary's fence (the one a hold on her profile
    // advances); every window is closed, and analytics opened none.
    const windowed = (await evidenceIn(PRIMARY_CELL)).filter((e) => e.action === "PURGE_OBJECTS");
    expect(windowed.length).toBeGreaterThan(0);
    expect(windowed.map((e) => [typeof e.detail?.window, typeof e.detail?.decidedGeneration])).toEqual(windowed.map(() => ["string", "number"]));
    for (const cell of [PRIMARY_CELL, SOCIAL_ANALYTICS]) expect((await inCell(cell, () => deleteWindowsCol().get())).size, cell).toBe(0);
    // The only request that counts the buckets' soft delete in its 'fully gone by' is the primary's part.
    expect((await requestIn(PRIMARY_CELL, requestId))?.objectsErased).toBe(true);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.objectsErased).toBeUndefined();

    // Another night, and the per-request tasks run again: nothing more is deleted or recorded.
    await runNightlyJob(runAsOf(AFTER_GRACE + DAY_MS));
    // A redelivered task of each part (the primary's and analytics'), taken again: nothing is left to take.
    const again = AFTER_GRACE + DAY_MS;
    const task: PurgeRequestTask = { requestId, runKey: "fedcba9876543210fedcba9876543210", nowMs: again, asOfMs: again, correlationId: "objects-again" };
    for (const t of [task, { ...task, database: SOCIAL_ANALYTICS }]) expect((await runPurgeRequestTask(t, { enqueueRequest: () => Promise.resolve(), leaseMs: 60_000 })).outcome).toBe("NOT_TAKEN");
    expect(await objectLines()).toEqual(once);
    await expectEveryLedgerVerifies();

    // Her avatar comes back (a bucket restore): a restored copy of analytics puts back no object; one of the primary does.
    const back = ANA_OBJECTS.find((n) => n.endsWith("avatar.jpg"))!;
    await putObject(defaultBucket(), back, "ana's avatar, back");
    await clearFirestore(SOCIAL_ANALYTICS_RESTORED_DATABASE);
    await seedSocialAnalytics(T0, SOCIAL_ANALYTICS_RESTORED_DATABASE);
    const ofAnalytics = await replayErasures({ databaseId: SOCIAL_ANALYTICS_RESTORED_DATABASE, cell: SOCIAL_ANALYTICS, apply: true, actor: DANA, nowMs: AFTER_GRACE + 2 * DAY_MS });
    expect(ofAnalytics.subjects.map((x) => [x.uid, x.toDeleteObjects])).toEqual([["u-ana", 0]]);
    expect(await generationOf(back)).not.toBeNull();
    await clearFirestore(SOCIAL_RESTORED_DATABASE);
    await inDatabase(SOCIAL_RESTORED_DATABASE, () => seedSocial({ nowMs: T0, withAuth: false, analytics: false }));
    const ofPrimary = await replayErasures({ databaseId: SOCIAL_RESTORED_DATABASE, apply: true, actor: DANA, nowMs: AFTER_GRACE + 2 * DAY_MS });
    expect(ofPrimary.subjects.map((x) => [x.uid, x.toDeleteObjects])).toEqual([["u-ana", 1]]);
    expect(ofPrimary.problems).toBe(0);
    expect(await generationOf(back)).toBeNull();
  });

  it("a hold on her profile keeps them (marked, RETAINED_UNDER_HOLD) while analytics' part is erased; a gs:// target is refused in either database", async () => {
    for (const database of [PRIMARY_CELL, SOCIAL_ANALYTICS]) {
      await expect(placeHold({ targetPath: gs(ANA_OBJECTS[0]!), database, reasonCode: "LITIGATION", releaseAfterMs: null, actor: DANA, nowMs: T0 + 500 })).rejects.toMatchObject({ reason: "INVALID_TARGET_PATH" });
    }
    const { holdId } = await placeHold({ targetPath: "users/u-ana", reasonCode: "LITIGATION", releaseAfterMs: null, actor: DANA, nowMs: T0 + 1000 });
    for (const n of ANA_OBJECTS) expect((await readObject(defaultBucket(), n))?.holdIds, n).toEqual([holdId]);
    const generations = new Map(await Promise.all(ANA_OBJECTS.map(async (n) => [n, (await generationOf(n))!] as const)));
    await runNightlyJob(runAsOf(AFTER_GRACE));
    for (const n of ANA_OBJECTS) expect(await generationOf(n), n).toBe(generations.get(n));
    expect(await objectLines()).toEqual([]);
    // The hold is the primary's: analytics' part has nothing it covers, and is erased.
    for (const p of ANA_EVENTS) expect(await existsIn(SOCIAL_ANALYTICS, p), p).toBe(false);
    expect((await requestIn(SOCIAL_ANALYTICS, requestId))?.state).toBe("PURGED");
    expect((await status(requestId, AFTER_GRACE + 1000)).state).toBe("RETAINED_UNDER_HOLD");
    // Released, the next run deletes them, each once.
    await releaseHoldById({ holdId, reason: "case closed", actor: ELI, nowMs: AFTER_GRACE + 2000 });
    for (const n of ANA_OBJECTS) expect((await readObject(defaultBucket(), n))?.holdIds, n).toEqual([]);
    await runNightlyJob(runAsOf(AFTER_GRACE + DAY_MS));
    for (const n of ANA_OBJECTS) expect(await generationOf(n), n).toBeNull();
    expect(await objectLines()).toEqual(ANA_OBJECTS.map((n) => `${PRIMARY_CELL} ${gs(n)}#${generations.get(n)} deleted`).sort());
    expect((await status(requestId, AFTER_GRACE + DAY_MS + 1000)).state).toBe("PURGED");
    await expectEveryLedgerVerifies();
  });
});
