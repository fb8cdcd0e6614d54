import { getAuth } from "firebase-admin/auth";
import { logger } from "firebase-functions";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { policy } from "../../../functions/src/infra/registry";
import { runNightlyPurge } from "../../../functions/src/jobs/nightly-purge";
import { adminApp, db } from "../../helpers/emulator";
import { allGovernedPaths, evidence, expectChainVerifies, expectDeletionsExplained, putGoverned, reset, runOptions } from "./support";

const EXPIRED = 40;
const FRESH = 20;

async function approve(runKey: string, approvedBy: string): Promise<void> {
  await db().doc(`retentionJobs/brake-approval-${runKey}`).set({ runKey, approvedBy, approvedAt: new Date() });
}

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
    before = await allGovernedPaths();
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("trips on a run above its threshold, deletes and marks nothing, and records why at ERROR", async () => {
    const errors = vi.spyOn(logger, "error");
    const summary = await runNightlyPurge(runOptions({ batchSize: 10 }));
    const brake = summary.brake as { status: string; runKey: string; wouldDelete: number; violations: { kind: string; retentionClass: string }[] };
    expect(brake.status).toBe("TRIPPED");
    expect(brake.wouldDelete).toBe(EXPIRED);
    expect(brake.violations).toEqual([expect.objectContaining({ kind: "CLASS_SHARE", retentionClass: "event-90d", count: EXPIRED, classSize: EXPIRED + FRESH })]);
    const units = summary.units as { unitKey: string; outcome: string }[];
    expect(units.find((u) => u.unitKey === "sweep-events")?.outcome).toBe("BRAKE_REFUSED");
    expect(units.filter((u) => u.outcome !== "BRAKE_REFUSED" && u.outcome !== "NOTHING_TO_DO")).toEqual([]);
    expect(await allGovernedPaths()).toEqual(before);
    const states = (await db().collection("events").get()).docs.map((d) => d.get("lifecycleState") as string);
    expect(new Set(states)).toEqual(new Set(["ACTIVE"]));
    const entries = await expectChainVerifies();
    expect(entries.map((e) => e.action)).toEqual(["PURGE_BRAKE_TRIPPED"]);
    expect(entries[0]!.detail).toMatchObject({ runKey: brake.runKey, approval: "NONE" });
    expect(errors).toHaveBeenCalledWith("purge.brake.tripped", expect.objectContaining({ runKey: brake.runKey, total: EXPIRED }));
    // The lease is given back: the next run may try again.
    expect((await db().doc("retentionJobs/purge-sweep-events").get()).get("lease")).toBeUndefined();
  });

  it("ignores an approval by someone who is not a retention-admin", async () => {
    const first = await runNightlyPurge(runOptions({ batchSize: 10 }));
    const runKey = (first.brake as { runKey: string }).runKey;
    await getAuth(adminApp()).createUser({ uid: "c-2001" });
    await getAuth(adminApp()).setCustomUserClaims("c-2001", { roles: ["compliance"] });
    await approve(runKey, "c-2001");
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(second.brake).toMatchObject({ status: "TRIPPED", runKey });
    expect(await allGovernedPaths()).toEqual(before);
    const trips = (await evidence()).filter((e) => e.action === "PURGE_BRAKE_TRIPPED");
    expect(trips.map((e) => e.detail?.approval)).toEqual(["NONE", "APPROVER_NOT_RETENTION_ADMIN"]);
  });

  it("lets a run through that a retention-admin approved, for exactly that deletion set", async () => {
    const first = await runNightlyPurge(runOptions({ batchSize: 10 }));
    const runKey = (first.brake as { runKey: string }).runKey;
    await getAuth(adminApp()).createUser({ uid: "r-3001" });
    await getAuth(adminApp()).setCustomUserClaims("r-3001", { roles: ["retention-admin"] });
    await approve(runKey, "r-3001");
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(second.brake).toMatchObject({ status: "APPROVED", runKey });
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toHaveLength(EXPIRED);
    expect(gone.every((p) => p.startsWith("events/old-"))).toBe(true);
    const entries = await expectChainVerifies();
    const approved = entries.filter((e) => e.action === "PURGE_BRAKE_APPROVED");
    expect(approved).toHaveLength(1);
    expect(approved[0]!.detail).toMatchObject({ runKey, approvedBy: "r-3001" });
    await expectDeletionsExplained(entries, gone);
  });

  it("asks again when the data changed after the approval", async () => {
    const first = await runNightlyPurge(runOptions({ batchSize: 10 }));
    const runKey = (first.brake as { runKey: string }).runKey;
    await getAuth(adminApp()).createUser({ uid: "r-3001" });
    await getAuth(adminApp()).setCustomUserClaims("r-3001", { roles: ["retention-admin"] });
    await approve(runKey, "r-3001");
    await putGoverned("events/old-extra", { type: "X" }, { ageDays: 100 });
    const second = await runNightlyPurge(runOptions({ batchSize: 10 }));
    expect(second.brake).toMatchObject({ status: "TRIPPED" });
    expect((second.brake as { runKey: string }).runKey).not.toBe(runKey);
    expect((await allGovernedPaths()).size).toBe(before.size + 1);
  });

  it("a dry run reports what the brake would say and writes nothing", async () => {
    const summary = await runNightlyPurge(runOptions({ dryRun: true }));
    expect(summary).toMatchObject({ dryRun: true, wouldDelete: EXPIRED, brake: { tripped: true } });
    expect(summary.units).toEqual([expect.objectContaining({ unitKey: "sweep-events", delete: EXPIRED })]);
    expect(await allGovernedPaths()).toEqual(before);
    const control = await Promise.all(["deletionAudits", "retentionJobs", "archives"].map(async (c) => (await db().collection(c).get()).size));
    expect(control).toEqual([0, 0, 0]);
  });
});
