import { getAuth } from "firebase-admin/auth";
import { beforeAll, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { isBusinessVisible } from "../../../functions/src/kernel/visibility";
import { readGoverned } from "../../../functions/src/platform/governed-doc";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { scanRetention } from "../../../functions/src/audit/scan";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import { policy } from "../../../functions/src/platform/registry";
import { hasDeleteTrigger } from "../../../functions/src/ttl/rules";
import { adminApp, db } from "../../helpers/emulator";
import {
  AFTER_GRACE,
  allGovernedPaths,
  expectBefore,
  expectChainVerifies,
  expectBatchesDecided,
  expectDeletionsExplained,
  hold,
  pathCounts,
  putGoverned,
  putSession,
  requestDeletion,
  reset,
  runOptions,
  T0,
} from "./support";

async function visible(path: string, nowMs: number): Promise<boolean> {
  const g = readGoverned((await db().doc(path).get()).data());
  return g !== null && isBusinessVisible({ lifecycleState: g.lifecycleState, expireAtMs: g.expireAtMs }, nowMs);
}

describe("nightly purge: the end-to-end scenario", () => {
  let requestId: string;
  let before: Set<string>;
  let heldBefore: Record<string, unknown> | undefined;
  const eligible = [
    // the user in the soft-delete workflow (grace over): profile, nested message, session and its token, external copies
    "tenants/t-acme/users/u-1001",
    "tenants/t-acme/orders/o-1001/messages/m-001",
    "tenants/t-acme/orders/o-1001/messages/m-101",
    "tenants/t-acme/orders/o-1002/messages/m-102",
    "sessions/s-1001",
    "sessions/s-1001/tokens/tk-1001",
    "userDirectory/u-1001",
    "activity/a-001",
    "activity/a-101",
    "activity/a-102",
    "activity/a-103",
    // expired session (with its token) and an event past its TTL, found by the policy sweep
    "sessions/s-old",
    "sessions/s-old/tokens/tk-s-old",
    "events/e-old",
  ];

  beforeAll(async () => {
    await reset();
    await seedDemo({ nowMs: T0 });
    // More of the user's data, so the purge crosses several batch boundaries.
    await putGoverned("tenants/t-acme/orders/o-1001/messages/m-101", { authorId: "u-1001", text: "any news?" }, { ageDays: 3 });
    await putGoverned("tenants/t-acme/orders/o-1002/messages/m-102", { authorId: "u-1001", text: "thanks" }, { ageDays: 2 });
    for (const a of ["a-101", "a-102", "a-103"]) await putGoverned(`activity/${a}`, { subjectUid: "u-1001", type: "VIEWED" }, { ageDays: 1 });
    await putSession("s-old", "u-1002", 40);
    await putGoverned("events/e-old", { type: "PAGE_VIEW" }, { ageDays: 100 });
    await hold("auditRecords/ar-001");
    requestId = await requestDeletion("u-1001");
    before = await allGovernedPaths();
    heldBefore = (await db().doc("auditRecords/ar-001").get()).data();
  });

  it("hides soft-deleted and expired data from business reads before anything is deleted", async () => {
    const at = T0 + DAY_MS;
    expect(await visible("sessions/s-1002", at)).toBe(true);
    expect(await visible("events/e-001", at)).toBe(true);
    expect(await visible("sessions/s-old", at)).toBe(false);
    expect(await visible("events/e-old", at)).toBe(false);
    expect(await visible("tenants/t-acme/users/u-1001", at)).toBe(false);
    expect(await visible("userDirectory/u-1001", at)).toBe(false);
    expect(await visible("tenants/t-acme/users/u-1002", at)).toBe(true);
    expect(await visible("auditRecords/ar-001", at)).toBe(false);
    for (const p of eligible) expect(before.has(p), p).toBe(true);
  });

  it("deletes exactly the eligible set, keeps and masks the rest, and explains every deletion", async () => {
    const summary = await runNightlyPurge(runOptions({ batchSize: 3 }));
    const units = summary.units as { unitKey: string; outcome: string; counts?: Record<string, number> }[];
    expect(units.find((u) => u.unitKey === requestId)?.outcome).toBe("DONE");
    expect(units.find((u) => u.unitKey === "sweep-sessions")?.outcome).toBe("DONE");
    expect(units.find((u) => u.unitKey === "sweep-events")?.outcome).toBe("DONE");

    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p)).sort();
    expect(gone).toEqual([...eligible].sort());
    expect([...after].filter((p) => !before.has(p))).toEqual([]);

    // The held audit record is intact and carries no TTL value.
    const held = (await db().doc("auditRecords/ar-001").get()).data();
    expect(held).toEqual(heldBefore);
    expect(held?.legalHold).toBe(true);
    expect(held?.expireAt).toBeUndefined();

    // Orders kept for finance: the customer's fields are gone, the record is back in use.
    for (const o of ["tenants/t-acme/orders/o-1001", "tenants/t-acme/orders/o-1002"]) {
      const d = (await db().doc(o).get()).data()!;
      expect(d.customerName, o).toBeUndefined();
      expect(d.shippingAddress, o).toBeUndefined();
      expect(d.maskedAt, o).toBeDefined();
      expect(d.lifecycleState, o).toBe("ACTIVE");
      expect(d.totalMinor, o).toBeTypeOf("number");
    }
    // Another customer's data and message are untouched.
    expect((await db().doc("tenants/t-acme/orders/o-1001/messages/m-002").get()).get("lifecycleState")).toBe("ACTIVE");

    const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(req.state).toBe("PURGED");
    expect(req.lease).toBeUndefined();
    expect((req.timeline as { event: string }[]).map((t) => t.event)).toEqual(expect.arrayContaining(["PURGE_STARTED", "AUTH_ACCOUNT_DELETE_INTENT", "AUTH_ACCOUNT_DELETED", "PURGED"]));
    await expect(getAuth(adminApp()).getUser("u-1001")).rejects.toMatchObject({ code: "auth/user-not-found" });
    await expect(getAuth(adminApp()).getUser("u-1002")).resolves.toMatchObject({ uid: "u-1002" });

    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, eligible);
    // The decision was written before the delete: each deleted path is in its batch record, decided first.
    expect(await expectBatchesDecided(entries)).toBe(eligible.length);
    // Documents a delete trigger watches were also marked PURGE_ELIGIBLE before their delete, so the
    // trigger leaves the evidence to the purge.
    const markedAt = new Map<string, ChainedEvidence>();
    for (const e of entries) if (e.action === "PURGE_ELIGIBLE_MARKED") for (const p of e.paths ?? []) markedAt.set(p, e);
    for (const e of entries.filter((x) => x.action === "PURGE_BATCH")) {
      for (const p of (e.paths ?? []).filter((x) => hasDeleteTrigger(policy(), x))) await expectBefore(markedAt.get(p)!, e);
    }
    expect(markedAt.size).toBeGreaterThan(0);
    expect(entries.filter((e) => e.action === "PURGE_BATCH").length).toBeGreaterThanOrEqual(5);
    expect(pathCounts(entries, "PURGE_MASK").get("tenants/t-acme/orders/o-1001")).toBe(1);
    const verified = entries.filter((e) => e.action === "PURGE_VERIFIED" && e.requestId === requestId);
    expect(verified).toHaveLength(1);
    expect(verified[0]!.manifestHash).toBe(req.manifestHash);
    // Evidence holds paths and hashes, never the deleted content.
    const text = JSON.stringify(entries);
    for (const secret of ["Ada Lovelace", "Where is my parcel?", "1 Analytical Way", "any news?"]) expect(text).not.toContain(secret);
  });

  it("leaves nothing unsafe for the retention audit", async () => {
    const audit = await scanRetention({ nowMs: AFTER_GRACE, skipSubjects: true });
    const unsafe = audit.findings.filter((f) =>
      ["UNKNOWN_CLASS", "INVALID_LIFECYCLE_STATE", "MISSING_TTL", "HOLD_WITH_TTL", "SOFT_DELETE_QUERY_LEAK", "EXPIRED_BUT_VISIBLE", "ORPHANED_SUBCOLLECTION", "ARCHIVE_UNVERIFIED"].includes(f.code),
    );
    expect(unsafe).toEqual([]);
  });

  it("finds nothing left to do on a second run", async () => {
    const summary = await runNightlyPurge(runOptions({ batchSize: 3 }));
    expect(summary.candidates).toBe(0);
    expect((summary.units as { outcome: string }[]).every((u) => u.outcome === "NOTHING_TO_DO")).toBe(true);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, eligible);
  });
});
