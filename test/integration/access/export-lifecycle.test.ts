/**
 * An access export's life beyond the happy path, on AtlasMart's registry, in-process on the emulators
 * (docs/decisions/0040-legal-clocks-and-access.md): a build that keeps failing ends FAILED with evidence and an expiry
 * after the queue's last attempt, and blocks no new ask; an erasure deletes its subject's exports (record and parts,
 * with evidence), refuses new ones while it is open, and counts in "fully gone by" the parts a build still under way
 * could write after it.
 */
import { Timestamp } from "firebase-admin/firestore";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildAccessExport, requestAccessExport } from "../../../functions/src/access/index";
import { BUILD_GIVE_UP_MS } from "../../../functions/src/access/rules";
import { exportSubjectDataHandler } from "../../../functions/src/entrypoints/callable/export-subject-data";
import { requestDataExportHandler } from "../../../functions/src/entrypoints/callable/request-data-export";
import { BUILD_RETRY } from "../../../functions/src/entrypoints/tasks/build-data-export";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { runNightlyPurge } from "../../../functions/src/purge/index";
import { purgeSettings } from "../../../functions/src/purge/settings";
import { recoveryWindowMs } from "../../../functions/src/requests/rules/gone-by";
import { settings } from "../../../functions/src/platform/settings";
import { db } from "../../helpers/emulator";
import { AFTER_GRACE, evidence, expectChainVerifies, hold, putCustomer, requestDeletion, reset, runOptions, T0 } from "../purge/support";
import { refusal } from "../../helpers/refusal";

const ADA: Caller = { uid: "u-8001", tenantId: "t-acme", roles: [] };
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const noQueue = (): Promise<void> => Promise.resolve();

const record = async (exportId: string) => (await db().doc(`dataExports/${exportId}`).get()).data();
const partsOf = async (exportId: string) => (await db().collection(`dataExports/${exportId}/exportParts`).get()).size;
const actions = async (action: string) => (await evidence()).filter((e) => e.action === action);
const ask = (uid: string, nowMs: number) => requestAccessExport({ uid, scopes: ["t-acme"], source: "subject", actor: { type: "user", id: uid }, nowMs });

/** What Cloud Tasks does with one build task: runs it, again after each failure, the last time as its final attempt. */
async function buildAsTheQueueDoes(exportId: string, nowMs: number): Promise<string[]> {
  const outcomes: string[] = [];
  for (let attempt = 1; attempt <= BUILD_RETRY.maxAttempts; attempt++) {
    try {
      outcomes.push(await buildAccessExport(exportId, nowMs, { finalAttempt: attempt >= BUILD_RETRY.maxAttempts, attempt }));
      break;
    } catch (err) {
      outcomes.push(`threw:${(err as { code?: string }).code ?? (err as Error).name}`);
    }
  }
  return outcomes;
}

beforeEach(reset);

describe("a build that cannot be made", () => {
  const tmp = process.env.TMPDIR;
  afterEach(() => {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
  });

  it("is retried by the queue, ends FAILED with evidence and an expiry on its last attempt, and blocks no new ask", async () => {
    await putCustomer(ADA.uid);
    const asked = Date.now();
    const { export: first } = await ask(ADA.uid, asked);
    // Every attempt's temporary directory fails (the instance's disk is gone): no retry can get past it.
    process.env.TMPDIR = "/nonexistent/access-export-tmp";
    const outcomes = await buildAsTheQueueDoes(first.exportId, asked);
    expect(outcomes).toEqual([...Array.from({ length: BUILD_RETRY.maxAttempts - 1 }, () => "threw:ENOENT"), "FAILED"]);
    const failed = (await record(first.exportId))!;
    expect(failed).toMatchObject({ state: "FAILED", failure: "ENOENT", parts: 0 });
    expect(failed.lease).toBeUndefined();
    expect((failed.expireAt as Timestamp).toMillis()).toBe(asked + settings.accessExportMs());
    expect(await partsOf(first.exportId)).toBe(0);
    const entries = await actions("ACCESS_EXPORT_FAILED");
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ decision: { reason: "RETRIES_EXHAUSTED", code: "ENOENT" }, detail: { exportId: first.exportId, code: "ENOENT", attempts: BUILD_RETRY.maxAttempts } });
    // The evidence names a code, not the error's text (its paths).
    expect(JSON.stringify(entries[0])).not.toContain("nonexistent");
    // Redelivered after it ended: nothing more happens.
    expect(await buildAccessExport(first.exportId, asked)).toBe("ALREADY_BUILT");

    // A FAILED export is no copy: the subject asks again at once (no cooldown), and that one is built.
    delete process.env.TMPDIR;
    if (tmp !== undefined) process.env.TMPDIR = tmp;
    const again = await requestDataExportHandler({}, ADA, noQueue);
    expect(again).toMatchObject({ created: true, state: "PENDING", expiresAt: null });
    expect(await buildAccessExport(again.exportId, Date.now())).toBe("BUILT");
    expect((await record(again.exportId))!.state).toBe("READY");
    await expectChainVerifies();
  });

  it("a record whose build was lost (never ran, or died without marking it) carries an expiry for TTL and stops counting as live", async () => {
    await putCustomer(ADA.uid);
    const asked = Date.now();
    const { export: lost } = await ask(ADA.uid, asked);
    expect(((await record(lost.exportId))!.expireAt as Timestamp).toMillis()).toBe(asked + BUILD_GIVE_UP_MS + settings.accessExportMs());
    // Staff asking within the give-up time get the same export back, and their ask is evidence all the same.
    const staff = await exportSubjectDataHandler({ uid: ADA.uid, reference: "ticket 4411" }, CLARA, noQueue);
    expect(staff).toMatchObject({ exportId: lost.exportId, created: false });
    const asks = await actions("ACCESS_EXPORT_REQUESTED");
    expect(asks.map((e) => [e.actor.type, (e.decision as { outcome?: string }).outcome ?? "NEW"])).toEqual([
      ["user", "NEW"],
      ["staff", "EXISTING_EXPORT"],
    ]);
    expect(asks[1]!.detail).toHaveProperty("referenceHash");
    // Past the give-up time the lost build blocks nothing: staff get a new one (the subject's own cooldown, a day after
    // her ask, would still apply to her).
    const later = asked + BUILD_GIVE_UP_MS;
    const { export: fresh, created } = await requestAccessExport({ uid: ADA.uid, scopes: ["t-acme"], source: "staff", actor: { type: "staff", id: CLARA.uid }, reference: "ticket 4411", nowMs: later });
    expect(created).toBe(true);
    expect(fresh.exportId).not.toBe(lost.exportId);
  });
});

describe("an erasure and the subject's exports", () => {
  it("a new export is refused while the erasure is open; the erasure deletes the exports with evidence, held data or not", async () => {
    await putCustomer(ADA.uid);
    const { export: made } = await ask(ADA.uid, T0 - DAY_MS);
    expect(await buildAccessExport(made.exportId, T0 - DAY_MS)).toBe("BUILT");
    const parts = await partsOf(made.exportId);
    expect(parts).toBeGreaterThan(0);

    // Her profile is under a hold: the purge keeps it, and still deletes her copy of it.
    await hold(`tenants/t-acme/users/${ADA.uid}`);
    const requestId = await requestDeletion(ADA.uid);
    // The one made before is still hers during the grace period (its expiry is a week after it was built)...
    expect(await ask(ADA.uid, T0 + DAY_MS)).toMatchObject({ created: false, export: { exportId: made.exportId } });
    // ... but once it has expired no new one is made while the erasure is open, for her or for staff.
    const before = await evidence();
    const expired = T0 + 7 * DAY_MS;
    expect(await refusal(ask(ADA.uid, expired))).toBe("failed-precondition/ERASURE_OPEN");
    expect(await refusal(requestAccessExport({ uid: ADA.uid, scopes: ["t-acme"], source: "staff", actor: { type: "staff", id: CLARA.uid }, reference: "letter", nowMs: expired }))).toBe("failed-precondition/ERASURE_OPEN");
    expect((await db().collection("dataExports").get()).docs.map((d) => d.id)).toEqual([made.exportId]);
    expect(await evidence()).toEqual(before);

    await runNightlyPurge(runOptions());
    const request = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(request.state).toBe("RETAINED_UNDER_HOLD");
    expect(await record(made.exportId)).toBeUndefined();
    expect(await partsOf(made.exportId)).toBe(0);
    const erased = await actions("ACCESS_EXPORT_ERASED");
    expect(erased).toHaveLength(1);
    expect(erased[0]).toMatchObject({ requestId, decision: { reason: "SUBJECT_ERASED", state: "READY" }, counts: { parts }, detail: { exportId: made.exportId } });
    // RETAINED_UNDER_HOLD is still open: still refused.
    expect(await refusal(ask(ADA.uid, AFTER_GRACE + DAY_MS))).toBe("failed-precondition/ERASURE_OPEN");
    // A second run finds nothing more to delete, and records nothing more.
    await runNightlyPurge(runOptions({ nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    expect(await actions("ACCESS_EXPORT_ERASED")).toHaveLength(1);
    await expectChainVerifies();
  });

  it("an export whose build is under way is deleted too, and 'fully gone by' waits for the parts that build could still write", async () => {
    await putCustomer(ADA.uid);
    const { export: building } = await ask(ADA.uid, T0 - DAY_MS);
    // A build in another process holds the export's lease, mid-way: it has written a part and stalls.
    const leaseEnd = Date.now() + 10 * 60_000;
    await db().doc(`dataExports/${building.exportId}`).update({ state: "RUNNING", lease: { owner: "build-stalled", expiresAt: Timestamp.fromMillis(leaseEnd) } });
    await db().doc(`dataExports/${building.exportId}/exportParts/000000`).set({ index: 0, file: "manifest.json", chunk: 0, encoding: "utf8", data: "{}", expireAt: Timestamp.fromMillis(T0 + 6 * DAY_MS) });
    const requestId = await requestDeletion(ADA.uid);

    await runNightlyPurge(runOptions());
    const request = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(request.state).toBe("PURGED");
    expect(await record(building.exportId)).toBeUndefined();
    expect(await partsOf(building.exportId)).toBe(0);
    expect((await actions("ACCESS_EXPORT_ERASED"))[0]).toMatchObject({ requestId, decision: { state: "RUNNING" }, counts: { parts: 1 } });
    // The stalled build may still write parts, each expiring at most the download period after its lease ends: the
    // date waits for that expiry and the recovery windows after it.
    const survives = leaseEnd + settings.accessExportMs();
    expect((request.fullyGoneByBasis as { exportsExpireAt: Timestamp }).exportsExpireAt.toMillis()).toBe(survives);
    expect((request.fullyGoneBy as Timestamp).toMillis()).toBe(survives + recoveryWindowMs(purgeSettings.recoveryWindows()));
    // When it wakes, the build finds its export gone and builds nothing.
    expect(await buildAccessExport(building.exportId, Date.now())).toBe("GONE");
    expect(await partsOf(building.exportId)).toBe(0);
    // Erased: a new ask is the subject's again.
    expect(await ask(ADA.uid, Date.now())).toMatchObject({ created: true });
    await expectChainVerifies();
  });

  it("that expiry outlives a first round retained under a hold: the round that ends PURGED still counts it", async () => {
    await putCustomer(ADA.uid);
    const { export: building } = await ask(ADA.uid, T0 - DAY_MS);
    const leaseEnd = Date.now() + 10 * 60_000;
    await db().doc(`dataExports/${building.exportId}`).update({ state: "RUNNING", lease: { owner: "build-stalled", expiresAt: Timestamp.fromMillis(leaseEnd) } });
    const holdId = await hold(`tenants/t-acme/users/${ADA.uid}`);
    const requestId = await requestDeletion(ADA.uid);
    await runNightlyPurge(runOptions());
    const retained = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(retained.state).toBe("RETAINED_UNDER_HOLD");
    const survives = leaseEnd + settings.accessExportMs();
    expect((retained.exportsExpireAt as Timestamp).toMillis()).toBe(survives);
    expect(await record(building.exportId)).toBeUndefined();

    await releaseHoldById({ holdId, reason: "dispute settled", actor: { type: "staff", id: "c-2002" }, nowMs: AFTER_GRACE + DAY_MS });
    await runNightlyPurge(runOptions({ nowMs: AFTER_GRACE + 2 * DAY_MS, asOfMs: AFTER_GRACE + 2 * DAY_MS }));
    const purged = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(purged.state).toBe("PURGED");
    expect((purged.fullyGoneByBasis as { exportsExpireAt: Timestamp }).exportsExpireAt.toMillis()).toBe(survives);
    expect((purged.fullyGoneBy as Timestamp).toMillis()).toBe(survives + recoveryWindowMs(purgeSettings.recoveryWindows()));
    expect(await actions("ACCESS_EXPORT_ERASED")).toHaveLength(1);
    await expectChainVerifies();
  });
});
