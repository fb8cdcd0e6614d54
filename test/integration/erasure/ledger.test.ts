/**
 * The purge's ledger write: before PURGED, never without it, and idempotent.
 */
import { Timestamp } from "firebase-admin/firestore";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { keyedSubjectHash } from "../../../functions/src/evidence/index";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/index";
import { clearFirestore, db } from "../../helpers/emulator";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { AFTER_GRACE, PURGE_TEST_DATABASE, putCustomer, requestDeletion, reset, runOptions } from "../purge/support";

const LEDGER = "ledger-tests";

const outcome = (units: unknown, id: string) => (units as UnitReport[]).find((u) => u.unitKey === id);
const state = async (id: string) => (await db().doc(`deletionRequests/${id}`).get()).get("state") as string;
/** The purge collects a unit's failure and rethrows it as the cause of PURGE_RUN_FAILED. */
async function failure(run: Promise<unknown>): Promise<string> {
  const err = await run.then(
    () => null,
    (e: unknown) => e as Error & { cause?: unknown },
  );
  expect(err?.message).toMatch(/^PURGE_RUN_FAILED/);
  return err?.cause instanceof Error ? err.cause.message : String(err?.cause);
}
const ledgerDoc = (id: string) => db(LEDGER).collection("erasureLedger").doc(id);

describe("the purge and the erasure ledger", () => {
  const previous = process.env.RETENTION_LEDGER_DATABASE_ID;
  beforeAll(() => {
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
  });
  afterAll(() => {
    if (previous === undefined) delete process.env.RETENTION_LEDGER_DATABASE_ID;
    else process.env.RETENTION_LEDGER_DATABASE_ID = previous;
  });
  beforeEach(async () => {
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
    await reset();
    await clearFirestore(LEDGER);
  });

  it("writes the entry before the request says PURGED: no ledger, no PURGED; the next run finishes both", async () => {
    await putCustomer("u-71", { messages: 1, activity: 1 });
    const id = await requestDeletion("u-71");
    // A ledger that cannot be written (here: pointed at the governed database, which it refuses).
    process.env.RETENTION_LEDGER_DATABASE_ID = PURGE_TEST_DATABASE;
    expect(await failure(runNightlyPurge(runOptions({ sweep: false })))).toMatch(/^LEDGER_IN_GOVERNED_DATABASE/);
    expect(await state(id)).toBe("PROCESSING");
    expect((await db().collection("erasureLedger").get()).size).toBe(0);
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
    const run = await runNightlyPurge(runOptions({ sweep: false, clock: () => Date.now() + 120_000 }));
    expect(outcome(run.units, id)?.outcome).toBe("DONE");
    expect(await state(id)).toBe("PURGED");
    expect((await ledgerDoc(id).get()).data()).toMatchObject({ requestId: id, subjectKind: "user", subjectHash: keyedSubjectHash("u-71"), tenantHash: keyedSubjectHash("t-acme") });
    // With the request's "fully gone by" date: the purge's time plus the longer recovery window (35 days of backups).
    expect((await ledgerDoc(id).get()).get("fullyGoneBy")).toEqual(Timestamp.fromMillis(AFTER_GRACE + 35 * DAY_MS));
  });

  it("an entry already there for the same erasure is kept as it is (a retried finalize, a replay), but for a later 'fully gone by' date", async () => {
    await putCustomer("u-72", { messages: 1 });
    const id = await requestDeletion("u-72");
    const first = { requestId: id, subjectKind: "user", subjectHash: keyedSubjectHash("u-72"), tenantHash: keyedSubjectHash("t-acme"), policyVersion: "v1", erasedAt: Timestamp.fromMillis(1_000), masked: [], schema: 1 };
    await ledgerDoc(id).set(first);
    const run = await runNightlyPurge(runOptions({ sweep: false }));
    expect(outcome(run.units, id)?.outcome).toBe("DONE");
    expect(await state(id)).toBe("PURGED");
    expect((await ledgerDoc(id).get()).data()).toEqual({ ...first, fullyGoneBy: Timestamp.fromMillis(AFTER_GRACE + 35 * DAY_MS) });
  });

  it("an entry under the request's id that names another subject stops the purge before PURGED", async () => {
    await putCustomer("u-73", { messages: 1 });
    const id = await requestDeletion("u-73");
    await ledgerDoc(id).set({ requestId: id, subjectKind: "user", subjectHash: keyedSubjectHash("someone-else"), tenantHash: keyedSubjectHash("t-acme"), schema: 1 });
    expect(await failure(runNightlyPurge(runOptions({ sweep: false })))).toMatch(/^LEDGER_ENTRY_CONFLICT/);
    expect(await state(id)).toBe("PROCESSING");
  });
});
