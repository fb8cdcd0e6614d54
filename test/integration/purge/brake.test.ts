import { getAuth } from "firebase-admin/auth";
import { logger } from "firebase-functions";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { approvePurgeRunHandler } from "../../../functions/src/entrypoints/callable/approve-purge-run";
import { chainHash, evidenceDocId, type ChainedEvidence } from "../../../functions/src/evidence/rules";
import { policy } from "../../../functions/src/platform/registry";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { adminApp, db } from "../../helpers/emulator";
import { AFTER_GRACE, allGovernedPaths, evidence, expectChainVerifies, expectDeletionsExplained, putCustomer, putGoverned, requestDeletion, reset, runOptions, T0 } from "./support";

const EXPIRED = 40;
const FRESH = 20;
const HOUR = 3_600_000;
const RITA = { uid: "r-3001", tenantId: null, roles: ["retention-admin" as const] };

interface BrakeSummary {
  status: string;
  wouldDelete: number;
  waiting: { runKey: string; unitKey: string; state: string; approval: string; wouldDelete: number; violations: { kind: string; retentionClass: string | null; count: number; classSize: number | null }[] }[];
  approved: { runKey: string; unitKey: string }[];
  deferred: string[];
}
const brakeOf = (summary: Record<string, unknown>) => summary.brake as BrakeSummary;
const unitsOf = (summary: Record<string, unknown>) => summary.units as UnitReport[];
const outcomeOf = (summary: Record<string, unknown>, unitKey: string) => unitsOf(summary).find((u) => u.unitKey === unitKey);
const record = async (runKey: string) => (await db().doc(`retentionJobs/brake-${runKey}`).get()).data();

async function staff(uid: string, roles: string[]): Promise<void> {
  await getAuth(adminApp()).createUser({ uid }).catch(() => undefined);
  await getAuth(adminApp()).setCustomUserClaims(uid, { roles });
}

/** The first run trips on the events sweep; its key is what an approval names. */
async function trip(): Promise<string> {
  const first = await runNightlyPurge(runOptions({ batchSize: 10 }));
  const w = brakeOf(first).waiting.find((x) => x.unitKey === "sweep-events");
  expect(w).toBeDefined();
  return w!.runKey;
}

const approve = (runKey: string, decision: "APPROVE" | "DENY" = "APPROVE", nowMs = Date.now()) =>
  approvePurgeRunHandler({ runKey, decision, note: "reviewed the expired events" }, RITA, { nowMs, ttlMs: 24 * HOUR });

describe("mass-deletion brake", () => {
  let before: Set<string>;

  beforeEach(async () => {
    await reset();
    // 40 of 60 events are expired: 67% of a class above the minimum size (the registry's limit is 50%).
    const { brakeMaxShareOfClass, brakeMinClassSize } = policy().registry.purge;
    expect(EXPIRED + FRESH).toBeGreaterThanOrEqual(brakeMinClassSize);
    expect(EXPIRED / (EXPIRED + FRESH)).toBeGreaterThan(brakeMaxShareOfClass);
    for (let i = 0; i < EXPIRED; i++) await putGoverned(`events/old-${String(i).padStart(2, "0")}`, { type: "X" }, { ageDays: 100 });
    for (let i = 0; i < FRESH; i++) await putGoverned(`events/new-${String(i).padStart(2, "0")}`, { type: "X" }, { ageDays: 1 });
    await staff(RITA.uid, ["retention-admin"]);
    before = await allGovernedPaths();
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("holds back only the unit that tripped it: an unrelated erasure is purged in the same run", async () => {
    const errors = vi.spyOn(logger, "error");
    const ada = await putCustomer("u-ada");
    const requestId = await requestDeletion("u-ada");
    const beforeAll = await allGovernedPaths();
    const summary = await runNightlyPurge(runOptions({ batchSize: 10 }));
    const brake = brakeOf(summary);
    expect(brake.status).toBe("TRIPPED");
    expect(brake.waiting).toEqual([
      expect.objectContaining({ unitKey: "sweep-events", state: "WAITING", approval: "NONE", wouldDelete: EXPIRED }),
    ]);
    expect(brake.waiting[0]!.violations).toEqual([expect.objectContaining({ kind: "CLASS_SHARE", retentionClass: "event-90d", count: EXPIRED, classSize: EXPIRED + FRESH })]);
    const runKey = brake.waiting[0]!.runKey;
    expect(outcomeOf(summary, "sweep-events")).toMatchObject({ outcome: "BRAKE_REFUSED", reason: "MASS_DELETION_BRAKE" });
    // The erasure met its date: planned, purged, verified in the run that held the sweep back.
    expect(outcomeOf(summary, requestId)?.outcome).toBe("DONE");
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("PURGED");
    const after = await allGovernedPaths();
    const gone = [...beforeAll].filter((p) => !after.has(p));
    expect(gone.length).toBeGreaterThan(0);
    expect(gone.every((p) => ada.includes(p))).toBe(true);
    for (const p of before) if (p.startsWith("events/")) expect(after.has(p), p).toBe(true);
    const states = (await db().collection("events").get()).docs.map((d) => d.get("lifecycleState") as string);
    expect(new Set(states)).toEqual(new Set(["ACTIVE"]));
    // What waits is recorded where a console can list it.
    const rec = await record(runKey);
    expect(rec).toMatchObject({
      runKey,
      state: "WAITING",
      units: ["sweep-events"],
      kind: "sweep",
      countsByClass: { "event-90d": EXPIRED },
      wouldDelete: EXPIRED,
      trips: 1,
      decision: null,
    });
    expect(rec!.manifestHashes).toEqual([{ unitKey: "sweep-events", manifestHash: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown }]);
    const entries = await expectChainVerifies();
    const trips = entries.filter((e) => e.action === "PURGE_BRAKE_TRIPPED");
    expect(trips).toHaveLength(1);
    expect(trips[0]!.detail).toMatchObject({ runKey, unitKey: "sweep-events", approval: "NONE" });
    expect(trips[0]!.manifestHash).toBe((rec!.manifestHashes as { manifestHash: string }[])[0]!.manifestHash);
    await expectDeletionsExplained(entries, gone);
    expect(errors).toHaveBeenCalledWith("purge.brake.tripped", expect.objectContaining({ runKey, total: EXPIRED }));
    // The sweep's lease is given back: the next run may try again.
    expect((await db().doc("retentionJobs/purge-sweep-events").get()).get("lease")).toBeUndefined();
  });

  it("keeps the key an approval binds to while the same deletion set waits, whatever else the runs hold", async () => {
    const runKey = await trip();
    // Between the runs, an unrelated erasure becomes due.
    await putCustomer("u-ben");
    const requestId = await requestDeletion("u-ben");
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(second).waiting.map((w) => [w.unitKey, w.runKey])).toEqual([["sweep-events", runKey]]);
    expect(outcomeOf(second, requestId)?.outcome).toBe("DONE");
    expect(await record(runKey)).toMatchObject({ state: "WAITING", trips: 2 });
    // A third run, with nothing else due, still names the same set.
    const third = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(third).waiting[0]?.runKey).toBe(runKey);
  });

  it("runs exactly the approved set once after approvePurgeRun, recording the real approver", async () => {
    const runKey = await trip();
    const decided = await approve(runKey);
    expect(decided).toMatchObject({ runKey, state: "APPROVED", evidenceShard: expect.stringMatching(/^s\d{4}$/) as string, evidenceSeq: expect.any(Number) as number });
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(second)).toMatchObject({ status: "APPROVED", approved: [{ runKey, unitKey: "sweep-events" }], waiting: [] });
    expect(outcomeOf(second, "sweep-events")?.outcome).toBe("DONE");
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(EXPIRED);
    expect(gone.every((p) => p.startsWith("events/old-"))).toBe(true);
    const entries = await expectChainVerifies();
    const decision = entries.find((e) => e.action === "PURGE_BRAKE_DECIDED")!;
    expect(decision).toMatchObject({ shard: decided.evidenceShard, seq: decided.evidenceSeq, actor: { type: "staff", id: "r-3001" }, decision: { reason: "RETENTION_ADMIN_APPROVED" } });
    expect(decision.detail).toMatchObject({ runKey, decision: "APPROVE", approver: "r-3001", expiresAtMs: Date.parse(decided.expiresAt!) });
    expect(JSON.stringify(decision)).not.toContain("reviewed the expired events");
    const used = entries.filter((e) => e.action === "PURGE_BRAKE_APPROVED");
    expect(used).toHaveLength(1);
    expect(used[0]!.detail).toMatchObject({ runKey, unitKey: "sweep-events", approvedBy: "r-3001", approvalShard: decided.evidenceShard, approvalSeq: decided.evidenceSeq });
    await expectDeletionsExplained(entries, gone);
    const rec = await record(runKey);
    expect(rec).toMatchObject({ state: "USED", decision: { decision: "APPROVE", by: "r-3001", note: "reviewed the expired events", evidenceShard: decided.evidenceShard, evidenceSeq: decided.evidenceSeq } });
    // Used once: the callable refuses to decide on it again.
    await expect(approve(runKey)).rejects.toMatchObject({ reason: "BRAKE_RUN_USED" });
  });

  it("no hand-written document stands in for an approval", async () => {
    const runKey = await trip();
    // The old approval document, naming a real retention-admin.
    await db().doc(`retentionJobs/brake-approval-${runKey}`).set({ runKey, approvedBy: "r-3001", approvedAt: new Date() });
    // The record set to APPROVED by hand, pointing at evidence that is not a decision.
    const tripEntry = (await evidence()).find((e) => e.action === "PURGE_BRAKE_TRIPPED")!;
    await db().doc(`retentionJobs/brake-${runKey}`).update({
      state: "APPROVED",
      decision: { decision: "APPROVE", by: "r-3001", at: new Date(), expiresAt: new Date(Date.now() + HOUR), note: "", evidenceShard: tripEntry.shard!, evidenceSeq: tripEntry.seq, evidenceHash: tripEntry.hash },
    });
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(second).waiting).toEqual([expect.objectContaining({ runKey, state: "WAITING", approval: "NOT_A_DECISION" })]);
    expect(await allGovernedPaths()).toEqual(before);
    expect(await record(runKey)).toMatchObject({ state: "WAITING", lastApprovalProblem: "NOT_A_DECISION" });

    // A real approval, then its record edited: a longer expiry than the one approved.
    const decided = await approve(runKey);
    await db().doc(`retentionJobs/brake-${runKey}`).update({ "decision.expiresAt": new Date(Date.parse(decided.expiresAt!) + 30 * 24 * HOUR) });
    const third = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(third).waiting[0]).toMatchObject({ runKey, approval: "WRONG_EXPIRY" });

    // A real approval of another deletion set, copied onto this one.
    const other = "f".repeat(32);
    await db().doc(`retentionJobs/brake-${other}`).set({ runKey: other, state: "WAITING", units: ["x"], wouldDelete: 1, decision: null });
    const forOther = await approve(other);
    const otherDecision = (await record(other))!.decision as Record<string, unknown>;
    await db().doc(`retentionJobs/brake-${runKey}`).update({ state: "APPROVED", decision: otherDecision });
    expect(forOther.state).toBe("APPROVED");
    const fourth = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(fourth).waiting[0]).toMatchObject({ runKey, approval: "WRONG_RUN_KEY" });

    // The evidence entry edited to match a forged record: the chain no longer proves it.
    const again = await approve(runKey);
    const againRef = db().doc(`deletionAudits/${evidenceDocId(again.evidenceShard, again.evidenceSeq)}`);
    const genuine = (await againRef.get()).data() as ChainedEvidence;
    await againRef.update({ "detail.expiresAtMs": Date.parse(again.expiresAt!) + 1 });
    await db().doc(`retentionJobs/brake-${runKey}`).update({ "decision.expiresAt": new Date(Date.parse(again.expiresAt!) + 1) });
    const fifth = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(fifth).waiting[0]).toMatchObject({ runKey, approval: "EVIDENCE_EDITED" });

    // The same edit with the entry re-hashed and the record pointing at the new hash: every link holds, and only
    // the MAC, which needs the evidence key the database does not hold, tells the forgery from the approval.
    const { seq, prevHash, hash: _genuineHash, mac, keyId, ...hashed } = genuine;
    const longer = { ...hashed, detail: { ...hashed.detail, expiresAtMs: Date.parse(again.expiresAt!) + 30 * 24 * HOUR } };
    const forgedHash = chainHash(prevHash, seq, longer);
    await againRef.set({ ...longer, seq, prevHash, hash: forgedHash, mac, keyId });
    // (The fifth run put the record back to WAITING; the forger sets it to APPROVED again.)
    await db().doc(`retentionJobs/brake-${runKey}`).update({ state: "APPROVED", "decision.expiresAt": new Date(Date.parse(again.expiresAt!) + 30 * 24 * HOUR), "decision.evidenceHash": forgedHash });
    const sixth = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(sixth).waiting[0]).toMatchObject({ runKey, approval: "EVIDENCE_NOT_SIGNED" });
    expect(await allGovernedPaths()).toEqual(before);
    expect((await evidence()).filter((e) => e.action === "PURGE_BRAKE_APPROVED")).toEqual([]);

    // Nor can a forged approval block a real decision.
    await db().doc(`retentionJobs/brake-${runKey}`).update({
      state: "APPROVED",
      decision: { decision: "APPROVE", by: "r-3001", at: new Date(), expiresAt: new Date(Date.now() + 365 * 24 * HOUR), note: "", evidenceShard: tripEntry.shard!, evidenceSeq: tripEntry.seq, evidenceHash: tripEntry.hash },
    });
    await expect(approve(runKey, "APPROVE")).resolves.toMatchObject({ state: "APPROVED" });
  });

  it("an approval expires, and an approver who lost the role no longer counts", async () => {
    const runKey = await trip();
    const decided = await approve(runKey);
    const expiresAtMs = Date.parse(decided.expiresAt!);
    const late = await runNightlyPurge(runOptions({ batchSize: 10, clock: () => expiresAtMs + 1 }));
    expect(brakeOf(late).waiting[0]).toMatchObject({ runKey, state: "WAITING", approval: "APPROVAL_EXPIRED" });
    expect(await allGovernedPaths()).toEqual(before);
    // Expired, it may be approved again; the approver then loses the retention-admin role.
    await approve(runKey);
    await staff(RITA.uid, ["compliance"]);
    const demoted = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(brakeOf(demoted).waiting[0]).toMatchObject({ runKey, approval: "APPROVER_NOT_RETENTION_ADMIN" });
    expect(await allGovernedPaths()).toEqual(before);
  });

  it("a DENY is recorded and keeps the set held back, run after run", async () => {
    const runKey = await trip();
    const denied = await approve(runKey, "DENY");
    expect(denied).toMatchObject({ state: "DENIED", expiresAt: null });
    for (let i = 0; i < 2; i++) {
      const run = await runNightlyPurge(runOptions({ batchSize: 10 }));
      expect(outcomeOf(run, "sweep-events")).toMatchObject({ outcome: "BRAKE_REFUSED", reason: "BRAKE_DENIED" });
      expect(brakeOf(run).waiting[0]).toMatchObject({ runKey, state: "DENIED", approval: "DENIED" });
    }
    expect(await allGovernedPaths()).toEqual(before);
    expect(await record(runKey)).toMatchObject({ state: "DENIED", decision: { decision: "DENY", by: "r-3001", expiresAt: null } });
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "PURGE_BRAKE_DECIDED").map((e) => [e.actor.id, e.decision.reason, e.detail?.decision])).toEqual([["r-3001", "RETENTION_ADMIN_DENIED", "DENY"]]);
  });

  it("asks again under a new key when the data changed after the approval", async () => {
    const runKey = await trip();
    await approve(runKey);
    await putGoverned("events/old-extra", { type: "X" }, { ageDays: 100 });
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    const w = brakeOf(second).waiting[0]!;
    expect(w.runKey).not.toBe(runKey);
    expect(w).toMatchObject({ unitKey: "sweep-events", state: "WAITING", approval: "NONE" });
    expect((await allGovernedPaths()).size).toBe(before.size + 1);
    // The approved set did not run, so its approval stands, unused.
    expect(await record(runKey)).toMatchObject({ state: "APPROVED" });
  });

  it("a dry run reports what the brake would say and writes nothing", async () => {
    const summary = await runNightlyPurge(runOptions({ dryRun: true }));
    expect(summary).toMatchObject({ dryRun: true, wouldDelete: EXPIRED, brake: { tripped: true, admitted: [], deferred: [] } });
    expect((summary.brake as { waiting: { unitKey: string }[] }).waiting).toEqual([expect.objectContaining({ unitKey: "sweep-events", wouldDelete: EXPIRED })]);
    expect(summary.units).toEqual([expect.objectContaining({ unitKey: "sweep-events", delete: EXPIRED })]);
    expect(await allGovernedPaths()).toEqual(before);
    const control = await Promise.all(["deletionAudits", "retentionJobs", "archives"].map(async (c) => (await db().collection(c).get()).size));
    expect(control).toEqual([0, 0, 0]);
  });
});

describe("mass-deletion brake: the run's limits", () => {
  beforeEach(async () => {
    await reset();
  });

  it("admits erasures oldest due first until the run would trip, and runs the rest in the next run", async () => {
    // Two customers whose erasures each delete 29 user-delete documents of 100: fine alone (29%), together 58%.
    const a = await putCustomer("u-a", { activity: 25 });
    const b = await putCustomer("u-b", { activity: 25 });
    for (let i = 0; i < 42; i++) await putGoverned(`activity/filler-${String(i).padStart(2, "0")}`, { subjectUid: "u-keep", type: "X" }, { ageDays: 5 });
    const sizeOf = async () => (await db().collection("activity").count().get()).data().count;
    expect(await sizeOf()).toBe(92);
    const older = await requestDeletion("u-a", "t-acme", T0);
    const younger = await requestDeletion("u-b", "t-acme", T0 + HOUR);
    const first = await runNightlyPurge(runOptions({ batchSize: 50, sweep: false }));
    expect(outcomeOf(first, older)?.outcome).toBe("DONE");
    expect(outcomeOf(first, younger)).toMatchObject({ outcome: "BRAKE_DEFERRED", reason: "BRAKE_RUN_LIMIT" });
    expect(brakeOf(first)).toMatchObject({ status: "DEFERRED", waiting: [], deferred: [younger] });
    expect((await db().doc(`deletionRequests/${younger}`).get()).get("state")).toBe("PENDING");
    const deferredEntry = (await evidence()).find((e) => e.action === "PURGE_BRAKE_DEFERRED")!;
    expect(deferredEntry).toMatchObject({ decision: { reason: "BRAKE_RUN_LIMIT" }, counts: { units: 1 }, detail: { units: younger } });
    // The next run takes it first, with no approval needed.
    const next = await runNightlyPurge(runOptions({ batchSize: 50, sweep: false, nowMs: AFTER_GRACE + HOUR, asOfMs: AFTER_GRACE + HOUR }));
    expect(outcomeOf(next, younger)?.outcome).toBe("DONE");
    const left = await allGovernedPaths();
    for (const p of [...a, ...b].filter((x) => x.startsWith("activity/") || x.startsWith("userDirectory/"))) expect(left.has(p), p).toBe(false);
    await expectChainVerifies();
  });
});
