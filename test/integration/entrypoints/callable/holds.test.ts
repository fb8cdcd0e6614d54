import { beforeEach, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { policy } from "../../../../functions/src/platform/registry";
import { toMs } from "../../../../functions/src/platform/governed-doc";
import { writeGoverned } from "../../../../functions/src/platform/governed-repo";
import { call, db, waitFor } from "../../../helpers/emulator";
import { callExpect, docData, expectRefused, freshDemo, readChain, snapshotDatabase, verifyStoredChain, type Tokens } from "./support";

const O2 = "tenants/t-acme/orders/o-1002";
const TENANT_TREE = [
  "tenants/t-acme",
  "tenants/t-acme/orders/o-1001",
  "tenants/t-acme/orders/o-1001/messages/m-001",
  "tenants/t-acme/orders/o-1001/messages/m-002",
  "tenants/t-acme/orders/o-1002",
  "tenants/t-acme/users/u-1001",
  "tenants/t-acme/users/u-1002",
];

async function expectNothingWritten(action: () => Promise<void>): Promise<void> {
  const before = await snapshotDatabase();
  await action();
  expect(await snapshotDatabase()).toEqual(before);
}

const inDays = (d: number) => new Date(Date.now() + d * DAY_MS).toISOString();

describe("retention holds", () => {
  let t: Tokens;
  beforeEach(async () => {
    t = await freshDemo();
  });

  it("placeRetentionHold on a document: a record with the contract's fields, legalHold, LEGAL_HOLD, TTL cleared and kept aside; one evidence entry", async () => {
    const before = await docData("events/e-001");
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "events/e-001", reasonCode: "LITIGATION", releaseAfter: inDays(3), note: "matter 42" }, t.clara);
    const record = await docData(`retentionHolds/${holdId}`);
    expect(record).toMatchObject({
      holdId,
      targetPath: "events/e-001",
      targetType: "document",
      tenantId: "t-acme",
      reasonCode: "LITIGATION",
      state: "ACTIVE",
      placedBy: "c-2001",
      note: "matter 42",
      policyVersion: policy().version,
      affected: 1,
    });
    expect(toMs(record.placedAt)).not.toBeNull();
    expect(toMs(record.releaseAfter)).toBeGreaterThan(Date.now());
    const held = await docData("events/e-001");
    expect(held).toMatchObject({ legalHold: true, holdIds: [holdId], lifecycleState: "LEGAL_HOLD" });
    expect(held.expireAt).toBeUndefined();
    expect(toMs((held.preHold as { expireAt: unknown }).expireAt)).toBe(toMs(before.expireAt));
    const { entries } = await readChain();
    expect(entries.map((e) => e.entry.action)).toEqual(["HOLD_PLACED"]);
    expect(entries[0]!.entry).toMatchObject({ holdId, paths: ["events/e-001"], counts: { affected: 1 }, actor: { type: "staff", id: "c-2001" } });
    expect(JSON.stringify(entries)).not.toContain("matter 42");
    // Placing the same hold again (a retried call) returns the same hold.
    expect(await callExpect("placeRetentionHold", { targetPath: "events/e-001", reasonCode: "LITIGATION", releaseAfter: record.releaseAfter ? new Date(toMs(record.releaseAfter)!).toISOString() : undefined, note: "matter 42" }, t.clara)).toEqual({ holdId });
    expect((await db().collection("retentionHolds").get()).size).toBe(1);
  });

  it("placeRetentionHold on a tenant subtree returns once its record protects the subtree; the task queue then flags every governed document under it", async () => {
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "tenants/t-acme", reasonCode: "REGULATOR_REQUEST" }, t.clara);
    // The record and its evidence exist when the call returns; the hold fence moved with them.
    expect(await docData(`retentionHolds/${holdId}`)).toMatchObject({ targetType: "subtree", tenantId: "t-acme", state: "ACTIVE" });
    const placed = (await readChain()).entries.filter((e) => e.entry.action === "HOLD_PLACED");
    expect(placed).toHaveLength(1);
    expect(placed[0]!.entry.paths).toEqual(["tenants/t-acme"]);
    expect(placed[0]!.entry.detail?.fenceGeneration).toBeTypeOf("number");
    // The applyRetentionHold task flags the documents in the background, then records HOLD_APPLIED.
    await waitFor(async () => (await docData(`retentionHolds/${holdId}`)).applied === true, "the subtree hold applied by its task", 60_000);
    for (const p of TENANT_TREE) expect(await docData(p), p).toMatchObject({ legalHold: true, holdIds: [holdId], lifecycleState: "LEGAL_HOLD" });
    for (const p of ["sessions/s-1001", "events/e-001", "userDirectory/u-1001"]) expect((await docData(p)).legalHold, p).toBe(false);
    expect(await docData(`retentionHolds/${holdId}`)).toMatchObject({ affected: TENANT_TREE.length, applied: true });
    const applied = (await readChain()).entries.filter((e) => e.entry.action === "HOLD_APPLIED");
    expect(applied).toHaveLength(1);
    expect(applied[0]!.entry.counts).toEqual({ affected: TENANT_TREE.length, vanished: 0 });
    expect(applied[0]!.entry.detail?.pathsHash).toMatch(/^[0-9a-f]{64}$/);

    // The two-person rule applies; a second compliance officer releases, and everything is as before.
    expectRefused(await call("releaseRetentionHold", { holdId, reason: "done" }, t.clara), "PERMISSION_DENIED", "TWO_PERSON_RULE");
    expect(await callExpect("releaseRetentionHold", { holdId, reason: "regulator closed the matter" }, t.dev)).toEqual({ holdId, state: "RELEASED" });
    for (const p of TENANT_TREE) {
      const d = await docData(p);
      expect(d, p).toMatchObject({ legalHold: false, holdIds: [], lifecycleState: "ACTIVE" });
      expect(d.preHold, p).toBeUndefined();
    }
    expect(await docData(`retentionHolds/${holdId}`)).toMatchObject({ state: "RELEASED", releasedBy: "c-2002", releaseReason: "regulator closed the matter" });
    const released = (await readChain()).entries.filter((e) => e.entry.action === "HOLD_RELEASED");
    expect(released).toHaveLength(1);
    expect(released[0]!.entry.counts).toEqual({ released: TENANT_TREE.length });
    expect(JSON.stringify(released)).not.toContain("regulator closed");
  });

  it("releaseRetentionHold restores retention from policy and the pre-hold state as of the release", async () => {
    const before = await docData("events/e-002");
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "events/e-002", reasonCode: "FRAUD_INVESTIGATION" }, t.clara);
    // FRAUD_INVESTIGATION is a one-person reason: the placer may release it.
    expect(await callExpect("releaseRetentionHold", { holdId, reason: "cleared" }, t.clara)).toEqual({ holdId, state: "RELEASED" });
    const after = await docData("events/e-002");
    expect(after).toMatchObject({ legalHold: false, holdIds: [], lifecycleState: "ACTIVE" });
    expect(toMs(after.expireAt)).toBe(toMs(before.createdAt)! + 90 * DAY_MS);
    expect(toMs(after.expireAt)).toBe(toMs(before.expireAt));
    // A second hold on a document keeps it held until the last one goes.
    const a = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: O2, reasonCode: "FRAUD_INVESTIGATION" }, t.clara);
    const b = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: O2, reasonCode: "LITIGATION" }, t.clara);
    await callExpect("releaseRetentionHold", { holdId: a.holdId, reason: "x" }, t.clara);
    expect(await docData(O2)).toMatchObject({ legalHold: true, holdIds: [b.holdId], lifecycleState: "LEGAL_HOLD" });
    await callExpect("releaseRetentionHold", { holdId: b.holdId, reason: "x" }, t.dev);
    expect(await docData(O2)).toMatchObject({ legalHold: false, holdIds: [], lifecycleState: "ACTIVE" });
  });

  it("placeRetentionHold refuses: unauthenticated, non-compliance callers, bad payloads, unknown reason codes, deny classes, ungoverned and missing targets; nothing is written", async () => {
    await expectNothingWritten(async () => {
      const ok = { targetPath: O2, reasonCode: "LITIGATION" };
      expectRefused(await call("placeRetentionHold", ok, null), "UNAUTHENTICATED");
      expectRefused(await call("placeRetentionHold", ok, t.ada), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("placeRetentionHold", ok, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      for (const bad of [
        {},
        { targetPath: "tenants", reasonCode: "LITIGATION" },
        { targetPath: "tenants//x", reasonCode: "LITIGATION" },
        { targetPath: O2, reasonCode: "litigation" },
        { targetPath: O2, reasonCode: "LITIGATION", releaseAfter: "next week" },
        { targetPath: O2, reasonCode: "LITIGATION", note: "n".repeat(501) },
        { targetPath: O2, reasonCode: "LITIGATION", placedBy: "someone" },
      ]) {
        expectRefused(await call("placeRetentionHold", bad, t.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      }
      expectRefused(await call("placeRetentionHold", { targetPath: O2, reasonCode: "BECAUSE_I_SAID_SO" }, t.clara), "INVALID_ARGUMENT", "UNKNOWN_REASON_CODE");
      expectRefused(await call("placeRetentionHold", { targetPath: "sessions/s-1001", reasonCode: "LITIGATION" }, t.clara), "FAILED_PRECONDITION", "HOLD_NOT_ALLOWED_FOR_CLASS");
      expectRefused(await call("placeRetentionHold", { targetPath: "sessions/s-1001/tokens/tk-1001", reasonCode: "LITIGATION" }, t.clara), "FAILED_PRECONDITION", "HOLD_NOT_ALLOWED_FOR_CLASS");
      expectRefused(await call("placeRetentionHold", { targetPath: "deletionAudits/000000000001", reasonCode: "LITIGATION" }, t.clara), "INVALID_ARGUMENT", "NOT_GOVERNED_PATH");
      expectRefused(await call("placeRetentionHold", { targetPath: "tenants/t-acme/orders/o-404", reasonCode: "LITIGATION" }, t.clara), "NOT_FOUND", "TARGET_NOT_FOUND");
      expectRefused(await call("placeRetentionHold", { targetPath: "tenants/t-none", reasonCode: "LITIGATION" }, t.clara), "NOT_FOUND", "TARGET_NOT_FOUND");
    });
  });

  it("releaseRetentionHold refuses: unauthenticated, non-compliance, bad payloads, unknown holds, the placer under the two-person policy, before releaseAfter, and twice", async () => {
    const finance = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: O2, reasonCode: "FINANCE_RETENTION", releaseAfter: inDays(30) }, t.clara);
    const litigation = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "events/e-001", reasonCode: "LITIGATION", releaseAfter: inDays(30) }, t.clara);
    await expectNothingWritten(async () => {
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId, reason: "r" }, null), "UNAUTHENTICATED");
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId, reason: "r" }, t.ada), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId, reason: "r" }, t.rita), "PERMISSION_DENIED", "NOT_COMPLIANCE");
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId }, t.dev), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId, reason: "" }, t.dev), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("releaseRetentionHold", { holdId: "../x", reason: "r" }, t.dev), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
      expectRefused(await call("releaseRetentionHold", { holdId: "no-such-hold", reason: "r" }, t.dev), "NOT_FOUND", "HOLD_NOT_FOUND");
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId, reason: "r" }, t.clara), "PERMISSION_DENIED", "TWO_PERSON_RULE");
      expectRefused(await call("releaseRetentionHold", { holdId: finance.holdId, reason: "r" }, t.dev), "FAILED_PRECONDITION", "RELEASE_BEFORE_RELEASE_AFTER");
    });
    // LITIGATION allows early release (by a second person).
    expect(await callExpect("releaseRetentionHold", { holdId: litigation.holdId, reason: "settled" }, t.dev)).toEqual({ holdId: litigation.holdId, state: "RELEASED" });
    await expectNothingWritten(async () => {
      expectRefused(await call("releaseRetentionHold", { holdId: litigation.holdId, reason: "again" }, t.dev), "FAILED_PRECONDITION", "HOLD_NOT_ACTIVE");
    });
    // After releaseAfter, the second person may release the finance hold.
    await db().doc(`retentionHolds/${finance.holdId}`).update({ releaseAfter: new Date(Date.now() - 1000) });
    expect(await callExpect("releaseRetentionHold", { holdId: finance.holdId, reason: "period over" }, t.dev)).toEqual({ holdId: finance.holdId, state: "RELEASED" });
  });

  it("20 concurrent hold placements give 20 holds, and every chain they append to stays linear", async () => {
    const paths = Array.from({ length: 20 }, (_, i) => `events/e-c${String(i).padStart(2, "0")}`);
    for (const p of paths) await writeGoverned(p, { type: "PAGE_VIEW" }, "t-acme", Date.now());
    const placed = await Promise.all(paths.map((targetPath) => callExpect<{ holdId: string }>("placeRetentionHold", { targetPath, reasonCode: "LITIGATION" }, t.clara)));
    expect(new Set(placed.map((p) => p.holdId)).size).toBe(20);
    const { entries, heads } = await readChain();
    expect(entries).toHaveLength(20);
    expect(entries.map((e) => e.entry.paths?.[0]).sort()).toEqual(paths);
    // Each hold's evidence is in its hold's chain; a chain two placements share has both, one after the other.
    const byChain = new Map<string, number[]>();
    for (const { entry } of entries) byChain.set(entry.shard!, [...(byChain.get(entry.shard!) ?? []), entry.seq]);
    for (const [shard, seqs] of byChain) {
      expect(seqs, shard).toEqual(seqs.map((_, i) => i + 1));
      expect(heads.get(shard)).toEqual({ seq: seqs.length, hash: entries.find((e) => e.entry.shard === shard && e.entry.seq === seqs.length)!.entry.hash });
    }
    expect(await verifyStoredChain()).toMatchObject({ ok: true, checked: 20 });
    // 20 parallel calls start 20 Functions-emulator workers: on a loaded 2-core machine that alone has taken
    // longer than the default 60 s.
  }, 240_000);
});
