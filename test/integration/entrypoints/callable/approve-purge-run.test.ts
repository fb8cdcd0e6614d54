/**
 * approvePurgeRun over HTTP, end to end on the emulators: runRetentionJob (with asOf) trips the brake on a
 * mass deletion of events, a retention-admin approves exactly that deletion set, the next run purges it.
 * Then every refusal, each writing nothing.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { writeGoverned } from "../../../../functions/src/platform/governed-repo";
import { call, db } from "../../../helpers/emulator";
import { callExpect, docData, expectRefused, freshDemo, readChain, snapshotDatabase, verifyStoredChain, type Tokens } from "./support";

interface BrakeSummary {
  status: string;
  waiting: { runKey: string; unitKey: string; state: string }[];
  approved: { runKey: string; unitKey: string }[];
}
interface Decided {
  runKey: string;
  state: string;
  expiresAt: string | null;
  evidenceShard: string;
  evidenceSeq: number;
}

const EVENTS = 60;

async function expectNothingWritten(action: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await action();
  expect(await snapshotDatabase()).toEqual(before);
}

describe("approvePurgeRun", () => {
  let t: Tokens;
  let asOf: string;
  beforeEach(async () => {
    t = await freshDemo();
    const now = Date.now();
    for (let i = 0; i < EVENTS; i++) await writeGoverned(`events/bulk-${String(i).padStart(2, "0")}`, { type: "X" }, "t-acme", now);
    // A hundred days on, every event (class event-90d) has expired: all of a class, far over the brake's share.
    asOf = new Date(now + 100 * DAY_MS).toISOString();
  }, 120_000);

  const purge = async () => (await callExpect<{ brake: BrakeSummary; units: { unitKey: string; outcome: string }[] }>("runRetentionJob", { job: "nightlyPurge", asOf }, t.rita));

  it("a tripped run waits under its key; the admin's approval is recorded with the caller and lets exactly that set run once", async () => {
    const first = await purge();
    const waiting = first.brake.waiting.find((w) => w.unitKey === "sweep-events")!;
    expect(waiting).toMatchObject({ state: "WAITING" });
    expect(first.units.find((u) => u.unitKey === "sweep-events")?.outcome).toBe("BRAKE_REFUSED");
    expect((await db().collection("events").count().get()).data().count).toBe(EVENTS + 2);

    const decided = await callExpect<Decided>("approvePurgeRun", { runKey: waiting.runKey, decision: "APPROVE", note: "expired telemetry, checked" }, t.rita);
    expect(decided).toMatchObject({ runKey: waiting.runKey, state: "APPROVED" });
    // Approvals expire (RETENTION_BRAKE_APPROVAL_HOURS, 24 on the emulators).
    const hours = (Date.parse(decided.expiresAt!) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    const entry = (await readChain()).entries.find((e) => e.entry.shard === decided.evidenceShard && e.entry.seq === decided.evidenceSeq)!.entry;
    expect(entry).toMatchObject({ action: "PURGE_BRAKE_DECIDED", actor: { type: "staff", id: "r-3001" }, detail: { runKey: waiting.runKey, decision: "APPROVE", approver: "r-3001" } });
    expect(await docData(`retentionJobs/brake-${waiting.runKey}`)).toMatchObject({ state: "APPROVED", decision: { by: "r-3001", note: "expired telemetry, checked" } });

    const second = await purge();
    expect(second.brake.approved).toEqual([{ runKey: waiting.runKey, unitKey: "sweep-events" }]);
    expect(second.units.find((u) => u.unitKey === "sweep-events")?.outcome).toBe("DONE");
    expect((await db().collection("events").count().get()).data().count).toBe(0);
    expect(await docData(`retentionJobs/brake-${waiting.runKey}`)).toMatchObject({ state: "USED" });
    expect((await verifyStoredChain()).ok).toBe(true);

    // Used: a second decision on it is refused.
    expectRefused(await call("approvePurgeRun", { runKey: waiting.runKey, decision: "APPROVE", note: "again" }, t.rita), "FAILED_PRECONDITION", "BRAKE_RUN_USED");
  });

  it("a DENY is recorded, keeps the set held back, and may revoke an approval not yet used", async () => {
    const { runKey } = (await purge()).brake.waiting.find((w) => w.unitKey === "sweep-events")!;
    await callExpect("approvePurgeRun", { runKey, decision: "APPROVE", note: "first look" }, t.rita);
    const denied = await callExpect<Decided>("approvePurgeRun", { runKey, decision: "DENY", note: "on second thoughts, no" }, t.rita);
    expect(denied).toMatchObject({ runKey, state: "DENIED", expiresAt: null });
    const next = await purge();
    expect(next.units.find((u) => u.unitKey === "sweep-events")?.outcome).toBe("BRAKE_REFUSED");
    expect(next.brake.waiting).toEqual([expect.objectContaining({ runKey, state: "DENIED" })]);
    expect((await db().collection("events").count().get()).data().count).toBe(EVENTS + 2);
  });

  it("refuses: unauthenticated, non-admin callers, bad payloads, unknown run keys, an approval that stands; nothing is written", async () => {
    const { runKey } = (await purge()).brake.waiting.find((w) => w.unitKey === "sweep-events")!;
    await callExpect("approvePurgeRun", { runKey, decision: "APPROVE", note: "ok" }, t.rita);
    await expectNothingWritten(async () => {
      const ok = { runKey, decision: "APPROVE", note: "n" };
      expectRefused(await call("approvePurgeRun", ok, null), "UNAUTHENTICATED", "UNAUTHENTICATED");
      expectRefused(await call("approvePurgeRun", ok, t.ada), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      expectRefused(await call("approvePurgeRun", ok, t.clara), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      for (const bad of [
        {},
        { ...ok, runKey: runKey.toUpperCase() },
        { ...ok, runKey: `${runKey}0` },
        { ...ok, runKey: "brake-approval" },
        { ...ok, decision: "MAYBE" },
        { ...ok, note: "" },
        { ...ok, note: "x".repeat(501) },
        { runKey, decision: "APPROVE" },
        { ...ok, approvedBy: "r-3001" },
        null,
      ]) {
        expectRefused(await call("approvePurgeRun", bad, t.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("approvePurgeRun", { ...ok, runKey: "0".repeat(32) }, t.rita), "NOT_FOUND", "BRAKE_RUN_NOT_FOUND");
      expectRefused(await call("approvePurgeRun", ok, t.rita), "FAILED_PRECONDITION", "ALREADY_APPROVED");
    });
  });
});
