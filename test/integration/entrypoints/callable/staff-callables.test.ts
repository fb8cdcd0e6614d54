import { beforeEach, describe, expect, it } from "vitest";
import type { Caller } from "../../../../functions/src/entrypoints/callable/shared";
import { runRetentionJobHandler } from "../../../../functions/src/entrypoints/callable/run-retention-job";
import { JOBS } from "../../../../functions/src/jobs/catalog";
import { JOB_NAMES, type JobOptions, type JobRunner } from "../../../../functions/src/kernel/job";
import { call, db, waitFor } from "../../../helpers/emulator";
import { callExpect, docData, expectRefused, freshDemo, readChain, snapshotDatabase, type Tokens } from "./support";

async function expectNothingWritten(action: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await action();
  expect(await snapshotDatabase()).toEqual(before);
}

const O1 = "tenants/t-acme/orders/o-1001";
const O2 = "tenants/t-acme/orders/o-1002";

describe("transitionLifecycle", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });

  it("moves through the state machine with evidence, and back", async () => {
    expect(await callExpect("transitionLifecycle", { path: O1, to: "SOFT_DELETED", reason: "dispute" }, t.rita)).toEqual({ path: O1, from: "ACTIVE", to: "SOFT_DELETED" });
    expect(await callExpect("transitionLifecycle", { path: O1, to: "ACTIVE", reason: "resolved", correlationId: "case-7" }, t.rita)).toEqual({ path: O1, from: "SOFT_DELETED", to: "ACTIVE" });
    const d = await docData(O1);
    expect(d.lifecycleState).toBe("ACTIVE");
    expect(d.softDeletedAt).toBeUndefined();
    expect(d.preDeleteState).toBeUndefined();
    const { entries } = await readChain();
    expect(entries.map((e) => e.entry.decision)).toEqual([
      { reason: "ADMIN_REQUEST", from: "ACTIVE", to: "SOFT_DELETED" },
      { reason: "ADMIN_REQUEST", from: "SOFT_DELETED", to: "ACTIVE" },
    ]);
    expect(entries[1]!.entry.correlationId).toBe("case-7");
  });

  it("refuses: unauthenticated, non-admin callers, bad payloads, unknown and ungoverned paths, illegal moves, holds, LEGAL_HOLD and PURGED targets, open requests; nothing is written", async () => {
    await callExpect("placeRetentionHold", { targetPath: O2, reasonCode: "LITIGATION" }, t.clara);
    await callExpect("requestAccountDeletion", {}, t.ben);
    await expectNothingWritten(async () => {
      const ok = { path: O1, to: "SOFT_DELETED", reason: "r" };
      expectRefused(await call("transitionLifecycle", ok, null), "UNAUTHENTICATED");
      expectRefused(await call("transitionLifecycle", ok, t.ada), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      expectRefused(await call("transitionLifecycle", ok, t.clara), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      for (const bad of [
        { ...ok, to: "DELETED" },
        { ...ok, reason: "" },
        { ...ok, path: "tenants/t-acme/orders" },
        { ...ok, path: "/tenants/t-acme" },
        { ...ok, path: "tenants/__x__" },
        { ...ok, correlationId: "has space" },
        { ...ok, extra: 1 },
        { path: O1, to: "SOFT_DELETED" },
      ]) {
        expectRefused(await call("transitionLifecycle", bad, t.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("transitionLifecycle", { ...ok, path: "tenants/t-acme/orders/o-404" }, t.rita), "NOT_FOUND", "DOCUMENT_NOT_FOUND");
      expectRefused(await call("transitionLifecycle", { ...ok, path: "retentionHolds/h1" }, t.rita), "INVALID_ARGUMENT", "NOT_GOVERNED_PATH");
      expectRefused(await call("transitionLifecycle", { ...ok, to: "ARCHIVED" }, t.rita), "FAILED_PRECONDITION", "INVALID_LIFECYCLE_ACTIVE_TO_ARCHIVED");
      expectRefused(await call("transitionLifecycle", { ...ok, to: "ACTIVE" }, t.rita), "FAILED_PRECONDITION", "INVALID_LIFECYCLE_ACTIVE_TO_ACTIVE");
      expectRefused(await call("transitionLifecycle", { ...ok, to: "LEGAL_HOLD" }, t.rita), "FAILED_PRECONDITION", "HOLD_VIA_PLACE_RETENTION_HOLD");
      // The state machine's reason comes first: PURGE_ONLY_BY_ENGINE is only for PURGE_ELIGIBLE -> PURGED.
      expectRefused(await call("transitionLifecycle", { ...ok, to: "PURGED" }, t.rita), "FAILED_PRECONDITION", "INVALID_LIFECYCLE_ACTIVE_TO_PURGED");
      for (const to of ["ACTIVE", "SOFT_DELETED", "ARCHIVED"]) {
        expectRefused(await call("transitionLifecycle", { path: O2, to, reason: "r" }, t.rita), "FAILED_PRECONDITION", "LEGAL_HOLD");
      }
      expectRefused(await call("transitionLifecycle", { path: "userDirectory/u-1002", to: "ACTIVE", reason: "r" }, t.rita), "FAILED_PRECONDITION", "OPEN_DELETION_REQUEST");
    });
  });

  it("a subtree hold record blocks moves of documents under it, even without the flag (created after the hold)", async () => {
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "tenants/t-acme", reasonCode: "LITIGATION" }, t.clara);
    // The applyRetentionHold task flags the subtree in the background: let it finish, so that it cannot write
    // during the no-write check below. The document created afterwards carries no flag; the record still covers it.
    await waitFor(async () => (await docData(`retentionHolds/${holdId}`)).applied === true, "the subtree hold's flags", 60_000);
    await db().doc("tenants/t-acme/orders/o-new").set({ ...(await docData(O1)), legalHold: false, holdIds: [], lifecycleState: "ACTIVE" });
    await expectNothingWritten(async () => {
      expectRefused(await call("transitionLifecycle", { path: "tenants/t-acme/orders/o-new", to: "SOFT_DELETED", reason: "r" }, t.rita), "FAILED_PRECONDITION", "LEGAL_HOLD");
    });
  });
});

describe("planDeletion", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });

  it("plans a tenant: the tree, nested data and external copies, the finance records archived first, retained records and their reasons; evidence has the manifest hash", async () => {
    const plan = await callExpect<{
      delete: string[];
      archive: { path: string; reasonCode: string }[];
      retain: { path: string; reasonCode: string }[];
      externalCopiesToReview: string[];
      policyVersion: string;
      manifestHash: string;
    }>(
      "planDeletion",
      { tenantId: "t-acme" },
      t.dev,
    );
    expect(plan.delete).toContain("tenants/t-acme/orders/o-1001/messages/m-002");
    expect(plan.delete).toContain("sessions/s-1002/tokens/tk-1002");
    // The tenant's orders are kept as verified archive copies, then deleted with the rest of the tree.
    expect(plan.delete).toEqual(expect.arrayContaining(["tenants/t-acme", "tenants/t-acme/orders/o-1001", "tenants/t-acme/orders/o-1002"]));
    expect(plan.archive.map((a) => [a.path, a.reasonCode])).toEqual([
      ["tenants/t-acme/orders/o-1001", "FINANCE_RETENTION"],
      ["tenants/t-acme/orders/o-1002", "FINANCE_RETENTION"],
    ]);
    expect(plan.retain.map((r) => [r.path, r.reasonCode])).toEqual([["auditRecords/ar-001", "AUDIT_RETENTION"]]);
    expect(plan.externalCopiesToReview).toEqual(["activity/a-001", "activity/a-002", "userDirectory/u-1001", "userDirectory/u-1002"]);
    const last = (await readChain()).entries.at(-1)!.entry;
    expect(last).toMatchObject({ action: "PLAN_PREVIEWED", manifestHash: plan.manifestHash, actor: { type: "staff", id: "c-2002" } });
  });

  it("refuses: unauthenticated, non-compliance callers, bad payloads, unknown subjects; nothing is written", async () => {
    await expectNothingWritten(async () => {
      expectRefused(await call("planDeletion", { subjectUid: "u-1001" }, null), "UNAUTHENTICATED");
      expectRefused(await call("planDeletion", { subjectUid: "u-1001" }, t.ada), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("planDeletion", { subjectUid: "u-1001" }, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      for (const bad of [{}, { subjectUid: "u-1001", tenantId: "t-acme" }, { subjectUid: "" }, { tenantId: "a/b" }, { subjectUid: ["u-1001"] }, null]) {
        expectRefused(await call("planDeletion", bad, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("planDeletion", { subjectUid: "u-nobody" }, t.clara), "NOT_FOUND", "SUBJECT_NOT_FOUND");
      expectRefused(await call("planDeletion", { tenantId: "t-nobody" }, t.clara), "NOT_FOUND", "SUBJECT_NOT_FOUND");
    });
  });
});

describe("runRetentionJob", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });
  const rita: Caller = { uid: "r-3001", tenantId: null, roles: ["retention-admin"] };

  it("refuses: unauthenticated, non-admin callers and bad payloads; nothing is written", async () => {
    await expectNothingWritten(async () => {
      expectRefused(await call("runRetentionJob", { job: "retentionAudit" }, null), "UNAUTHENTICATED");
      expectRefused(await call("runRetentionJob", { job: "retentionAudit" }, t.clara), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      expectRefused(await call("runRetentionJob", { job: "retentionAudit" }, t.ada), "PERMISSION_DENIED", "NOT_RETENTION_ADMIN");
      for (const bad of [{}, { job: "dropEverything" }, { job: "retentionAudit", dryRun: "yes" }, { job: "retentionAudit", asOf: "tomorrow" }, { job: "retentionAudit", force: true }]) {
        expectRefused(await call("runRetentionJob", bad, t.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
    });
  });

  it("runs a registered job with asOf (emulator only) and records JOB_RUN with the asOf", async () => {
    const seen: JobOptions[] = [];
    const fake: JobRunner = (opts) => {
      seen.push(opts);
      return Promise.resolve({ job: "expiryBackfill", dryRun: opts.dryRun, asOf: opts.asOfMs === null ? null : new Date(opts.asOfMs).toISOString(), updated: 0 });
    };
    const asOf = "2027-01-15T00:00:00.000Z";
    const summary = await runRetentionJobHandler({ job: "expiryBackfill", dryRun: true, asOf }, rita, {
      jobs: { expiryBackfill: () => Promise.resolve(fake) },
      onEmulator: true,
      wallMs: Date.now(),
    });
    expect(summary).toEqual({ job: "expiryBackfill", dryRun: true, asOf, updated: 0 });
    expect(seen[0]).toMatchObject({ nowMs: Date.parse(asOf), asOfMs: Date.parse(asOf), dryRun: true, actor: { type: "staff", id: "r-3001" } });
    const last = (await readChain()).entries.at(-1)!.entry;
    expect(last).toMatchObject({ action: "JOB_RUN", asOfMs: Date.parse(asOf), detail: { job: "expiryBackfill", dryRun: true }, correlationId: seen[0]!.correlationId });
  });

  it("refuses asOf off the emulators (AS_OF_NOT_ALLOWED) and jobs that are not registered (JOB_NOT_AVAILABLE), writing nothing", async () => {
    await expectNothingWritten(async () => {
      await expect(
        runRetentionJobHandler({ job: "retentionAudit", asOf: "2027-01-15T00:00:00Z" }, rita, { jobs: JOBS, onEmulator: false, wallMs: Date.now() }),
      ).rejects.toMatchObject({ reason: "AS_OF_NOT_ALLOWED", kind: "failed-precondition" });
      await expect(runRetentionJobHandler({ job: "nightlyPurge" }, rita, { jobs: {}, onEmulator: true, wallMs: Date.now() })).rejects.toMatchObject({
        reason: "JOB_NOT_AVAILABLE",
        kind: "failed-precondition",
      });
    });
  });

  it("over HTTP, each job either runs (registered) and is on the record, or is reported not available", async () => {
    for (const job of JOB_NAMES) {
      const before = (await readChain()).entries.length;
      const r = await call<{ job: string; dryRun: boolean; asOf: string | null }>("runRetentionJob", { job, dryRun: true, asOf: "2030-01-01T00:00:00Z" }, t.rita);
      if (JOBS[job]) {
        if (!r.ok) throw new Error(`${job}: ${JSON.stringify(r.error)}`);
        expect(r.data).toMatchObject({ job, dryRun: true });
        const run = (await readChain()).entries.slice(before).find((e) => e.entry.action === "JOB_RUN");
        expect(run?.entry).toMatchObject({ asOfMs: Date.parse("2030-01-01T00:00:00Z"), detail: { job, dryRun: true } });
      } else {
        expectRefused(r, "FAILED_PRECONDITION", "JOB_NOT_AVAILABLE");
        expect((await readChain()).entries.length).toBe(before);
      }
    }
  });
});
