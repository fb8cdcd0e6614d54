/**
 * "Fully gone by" and the final ERASURE_COMPLETE entry: the purge's finalize stores the date when a request
 * becomes PURGED (and in the erasure ledger), the status reports it, and the nightly job's completion step
 * records ERASURE_COMPLETE exactly once when the date passes: not before, never for a request retained under a
 * hold, not while an archive copy of the erasure is still in the database, and not twice when two runs race.
 */
import { plannedShredMs } from "../../../functions/src/shred/index";
import { Timestamp } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { readLedger } from "../../../functions/src/erasure/index";
import { releaseHoldById } from "../../../functions/src/holds/index";
import { JOBS } from "../../../functions/src/jobs/catalog";
import { runNightlyJob } from "../../../functions/src/jobs/nightly-purge";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { recordErasureCompletions, type CompletionSummary, type PurgeRunOptions } from "../../../functions/src/purge/index";
import { archiveCopiesOf } from "../../../functions/src/purge/runner/archive";
import { approveTenantClosure, openDeletionRequest } from "../../../functions/src/requests/index";
import { db } from "../../helpers/emulator";
import { AFTER_GRACE, evidence, expectChainVerifies, hold, putCustomer, requestDeletion, reset, runOptions, T0 } from "./support";

/** The defaults (RETENTION_PITR_DAYS 7, RETENTION_BACKUP_RETENTION_DAYS 35): the longer window is 35 days. */
const WINDOW = 35 * DAY_MS;
/** audit-7y, the archive copies' own class. */
const ARCHIVE_DAYS = 2557;

const at = (nowMs: number, over: Partial<PurgeRunOptions> = {}) => runOptions({ sweep: false, nowMs, asOfMs: nowMs, ...over });
const complete = (nowMs: number) => recordErasureCompletions(at(nowMs));
const request = async (id: string) => (await db().doc(`deletionRequests/${id}`).get()).data()!;
const completeEntries = async () => (await evidence()).filter((e) => e.action === "ERASURE_COMPLETE");
const staff = { uid: "c-2001", tenantId: null, roles: ["compliance" as const] };
const status = (requestId: string, nowMs: number) => getDeletionStatusHandler({ requestId }, staff, { nowMs, refreshMs: DAY_MS });
const sum = (runs: CompletionSummary[], k: keyof CompletionSummary) => runs.reduce((n, r) => n + r[k], 0);

describe("a user's erasure: the date, and ERASURE_COMPLETE once it passes", () => {
  let purged: string;
  let held: string;
  let holdId: string;

  beforeEach(async () => {
    await reset();
    delete process.env.RETENTION_PITR_DAYS;
    delete process.env.RETENTION_BACKUP_RETENTION_DAYS;
    await putCustomer("u-81", { messages: 1, activity: 1 });
    await putCustomer("u-82", { messages: 1, activity: 1 });
    purged = await requestDeletion("u-81");
    held = await requestDeletion("u-82");
    holdId = await hold("activity/a-u-82-00");
  });

  it("stores the date at PURGED, reports it, and records ERASURE_COMPLETE exactly once after it, also when two runs race", async () => {
    const first = await runNightlyJob(at(AFTER_GRACE));
    expect(first.erasureComplete).toEqual({ due: 0, recorded: 0, waitingForArchive: 0, skipped: 0 });
    const goneByMs = AFTER_GRACE + WINDOW;

    // PURGED: the date, what it was computed from, and the explicit flag the completion step queries on.
    const r = await request(purged);
    expect(r.state).toBe("PURGED");
    expect((r.fullyGoneBy as Timestamp).toMillis()).toBe(goneByMs);
    // AtlasMart's processors agreed to 30 days at most: inside the 35 days of backups, so the date stays theirs.
    expect(r.fullyGoneByBasis).toEqual({ purgedAt: Timestamp.fromMillis(AFTER_GRACE), pitrDays: 7, backupRetentionDays: 35, archivesRetainUntil: null, processorsDeadline: Timestamp.fromMillis(AFTER_GRACE + 30 * DAY_MS) });
    expect(r.erasureComplete).toBe(false);
    expect(await status(purged, AFTER_GRACE)).toMatchObject({ state: "PURGED", fullyGoneBy: new Date(goneByMs).toISOString(), fullyGoneByUnknown: null, erasureCompleteAt: null });

    // Retained under a hold: data is still live, so there is no date, and no flag to find it by.
    const h = await request(held);
    expect(h.state).toBe("RETAINED_UNDER_HOLD");
    expect(h.fullyGoneBy).toBeUndefined();
    expect(h.erasureComplete).toBeUndefined();
    expect(await status(held, AFTER_GRACE)).toMatchObject({ fullyGoneBy: null, fullyGoneByUnknown: "RETAINED_UNDER_HOLD", erasureCompleteAt: null });

    // The erasure ledger keeps the date too (a date, nothing personal); the held request's entry has none yet.
    const ledger = new Map((await readLedger()).map((e) => [e.requestId, e]));
    expect(ledger.get(purged)?.fullyGoneByMs).toBe(goneByMs);
    expect(ledger.get(held)?.fullyGoneByMs).toBeNull();

    // Not before the date.
    expect(await complete(goneByMs - 1)).toEqual({ due: 0, recorded: 0, waitingForArchive: 0, skipped: 0 });
    expect(await completeEntries()).toEqual([]);

    // A dry run at the date says what it would record, and writes nothing.
    expect(await recordErasureCompletions(at(goneByMs, { dryRun: true }))).toEqual({ due: 1, recorded: 1, waitingForArchive: 0, skipped: 0 });
    expect(await completeEntries()).toEqual([]);
    expect((await request(purged)).erasureComplete).toBe(false);

    // At the date, two runs at once: one entry.
    const raced = await Promise.all([complete(goneByMs), complete(goneByMs)]);
    expect(sum(raced, "recorded")).toBe(1);
    expect(sum(raced, "due")).toBeGreaterThanOrEqual(1);
    // And again, later, as runRetentionJob and `retention run` start the nightly job (the catalog): nothing more.
    const again = await (await JOBS.nightlyPurge!())(at(goneByMs + DAY_MS));
    expect(again.erasureComplete).toMatchObject({ recorded: 0 });

    const entries = await completeEntries();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      requestId: purged,
      actor: { type: "system", id: "nightlyPurge" },
      decision: { reason: "RECOVERY_WINDOWS_PASSED" },
      atMs: goneByMs,
      detail: { fullyGoneBy: new Date(goneByMs).toISOString(), purgedAt: new Date(AFTER_GRACE).toISOString(), pitrDays: 7, backupRetentionDays: 35, archivesRetainUntil: null },
    });
    const done = await request(purged);
    expect(done).toMatchObject({ erasureComplete: true, erasureCompleteAt: Timestamp.fromMillis(goneByMs) });
    expect((done.timeline as { event: string }[]).filter((t) => t.event === "ERASURE_COMPLETE")).toHaveLength(1);
    expect(await status(purged, goneByMs + DAY_MS)).toMatchObject({ fullyGoneBy: new Date(goneByMs).toISOString(), erasureCompleteAt: new Date(goneByMs).toISOString() });
    await expectChainVerifies();

    // Never for the request retained under the hold, however late.
    const decade = AFTER_GRACE + 3650 * DAY_MS;
    expect((await runNightlyJob(at(decade))).erasureComplete).toMatchObject({ recorded: 0 });
    expect((await completeEntries()).map((e) => e.requestId)).toEqual([purged]);

    // Once the hold goes, the next run purges it: now it has a date (the ledger's entry gets it), and its own entry after it.
    await releaseHoldById({ holdId, reason: "settled", actor: { type: "staff", id: "c-2002" }, nowMs: decade });
    await runNightlyJob(at(decade + DAY_MS));
    const later = await request(held);
    expect(later.state).toBe("PURGED");
    expect((later.fullyGoneBy as Timestamp).toMillis()).toBe(decade + DAY_MS + WINDOW);
    expect((await readLedger()).find((e) => e.requestId === held)?.fullyGoneByMs).toBe(decade + DAY_MS + WINDOW);
    expect((await complete(decade + DAY_MS + WINDOW)).recorded).toBe(1);
    expect((await completeEntries()).map((e) => e.requestId).sort()).toEqual([purged, held].sort());
    await expectChainVerifies();
  });

  it("counts the recovery windows the deployment configured: PITR alone gives 7 days, then the processors' 30 days", async () => {
    process.env.RETENTION_PITR_DAYS = "7";
    process.env.RETENTION_BACKUP_RETENTION_DAYS = "0";
    try {
      await runNightlyJob(at(AFTER_GRACE));
      const r = await request(purged);
      expect(r.fullyGoneByBasis).toMatchObject({ pitrDays: 7, backupRetentionDays: 0, processorsDeadline: Timestamp.fromMillis(AFTER_GRACE + 30 * DAY_MS) });
      // The recovery copies are gone after 7 days; the email platform and the payment provider may hold theirs for 30.
      expect(r.fullyGoneBy).toEqual(Timestamp.fromMillis(AFTER_GRACE + 30 * DAY_MS));
    } finally {
      delete process.env.RETENTION_PITR_DAYS;
      delete process.env.RETENTION_BACKUP_RETENTION_DAYS;
    }
  });
});

describe("a tenant's closure: its archive copies set the date, and ERASURE_COMPLETE waits until they are gone", () => {
  it("dates the closure from its archives' end of retention, and records ERASURE_COMPLETE only once no copy is left", async () => {
    await reset();
    await putCustomer("u-y1", { tenantId: "t-yota", messages: 1, activity: 1 });
    await putCustomer("u-y2", { tenantId: "t-yota", messages: 1, activity: 1 });
    const { request: opened } = await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-yota" }, source: "staff", actor: { type: "staff", id: "ra-3001" }, nowMs: T0 });
    await approveTenantClosure(opened.requestId, { type: "staff", id: "c-2001" }, T0);
    const purgedAtMs = T0 + 31 * DAY_MS;
    await runNightlyJob(at(purgedAtMs));
    const r = await request(opened.requestId);
    expect(r.state).toBe("PURGED");
    expect(r.purgeCounts).toMatchObject({ archived: 2 });
    const archivesEnd = purgedAtMs + ARCHIVE_DAYS * DAY_MS;
    // The copies are sealed: gone once their key is shredded (the night after their end) and the KMS key destroyed
    // 30 days later, before their backups would have expired (35 days).
    const shredAtMs = plannedShredMs(archivesEnd)!;
    const goneByMs = shredAtMs + 30 * DAY_MS;
    expect(goneByMs).toBeLessThan(archivesEnd + WINDOW);
    expect(r.fullyGoneByBasis).toMatchObject({ archivesRetainUntil: Timestamp.fromMillis(archivesEnd), archivesShredAt: Timestamp.fromMillis(shredAtMs), archiveKeyDestroyDays: 30 });
    expect((r.fullyGoneBy as Timestamp).toMillis()).toBe(goneByMs);
    expect(await status(opened.requestId, purgedAtMs)).toMatchObject({ fullyGoneBy: new Date(goneByMs).toISOString(), fullyGoneByUnknown: null });

    // Not at the erasure's own window: the archive copies are the last ones.
    expect((await complete(purgedAtMs + WINDOW)).due).toBe(0);
    // At the date the copies are still in the database (the emulator never sweeps TTL): it waits, and the date moves
    // to a recovery window from now, since the copies' own backups outlive them by that much.
    expect(await complete(goneByMs)).toEqual({ due: 1, recorded: 0, waitingForArchive: 1, skipped: 0 });
    expect(await completeEntries()).toEqual([]);
    const movedMs = goneByMs + WINDOW;
    expect(((await request(opened.requestId)).fullyGoneBy as Timestamp).toMillis()).toBe(movedMs);
    expect(await status(opened.requestId, goneByMs)).toMatchObject({ fullyGoneBy: new Date(movedMs).toISOString() });
    // The TTL sweeper's stand-in deletes the expired copies; nothing is recorded before the moved date, then once.
    for (const d of (await db().collection("archives").get()).docs) await d.ref.delete();
    expect(await complete(goneByMs + DAY_MS)).toEqual({ due: 0, recorded: 0, waitingForArchive: 0, skipped: 0 });
    expect(await complete(movedMs)).toEqual({ due: 1, recorded: 1, waitingForArchive: 0, skipped: 0 });
    expect((await completeEntries()).map((e) => [e.requestId, e.detail?.fullyGoneBy])).toEqual([[opened.requestId, new Date(movedMs).toISOString()]]);
    await expectChainVerifies();
  });
});

describe("what an erasure archived, as finalize reads it", () => {
  beforeEach(reset);
  const put = (id: string, unitKey: string, fields: Record<string, unknown>) => db().doc(`archives/${id}`).set({ unitKey, sourcePath: `x/${id}`, legalHold: false, ...fields });

  it("no copy; the latest end among its copies (another unit's are not its own); a held copy; a copy without an end", async () => {
    expect(await archiveCopiesOf("req-a")).toEqual({ any: false, latestRetainUntilMs: null, held: false, sealed: false });
    await put("arc-1", "req-a", { retainUntil: Timestamp.fromMillis(T0 + DAY_MS) });
    await put("arc-2", "req-a", { retainUntil: Timestamp.fromMillis(T0 + 5 * DAY_MS) });
    await put("arc-3", "req-b", { retainUntil: Timestamp.fromMillis(T0 + 99 * DAY_MS), legalHold: true });
    expect(await archiveCopiesOf("req-a")).toEqual({ any: true, latestRetainUntilMs: T0 + 5 * DAY_MS, held: false, sealed: false });
    // Sealed copies (decision 0038): the latest one names its data key.
    await db().doc("archives/arc-2").update({ dataKey: `dk-${"0".repeat(40)}#g1` });
    expect(await archiveCopiesOf("req-a")).toEqual({ any: true, latestRetainUntilMs: T0 + 5 * DAY_MS, held: false, sealed: true });
    await db().doc("archives/arc-1").update({ legalHold: true });
    expect(await archiveCopiesOf("req-a")).toEqual({ any: true, latestRetainUntilMs: T0 + 5 * DAY_MS, held: true, sealed: true });
    await put("arc-4", "req-c", {});
    expect(await archiveCopiesOf("req-c")).toEqual({ any: true, latestRetainUntilMs: null, held: false, sealed: false });
  });
});
