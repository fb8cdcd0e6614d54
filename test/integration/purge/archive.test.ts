import { beforeEach, describe, expect, it } from "vitest";
import { Timestamp, type DocumentReference } from "firebase-admin/firestore";
import { archiveIdFor } from "../../../functions/src/purge/rules/archive";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { hashCanonical } from "../../../functions/src/kernel/canonical";
import { DataKeys, dataKeyIdFor, openCopy } from "../../../functions/src/shred/index";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/service";
import { db } from "../../helpers/emulator";
import { allGovernedPaths, evidence, expectBefore, expectChainVerifies, expectDeletionsExplained, hold, pathCounts, putGoverned, reset, runOptions, T0 } from "./support";

const OLD = "auditRecords/ar-old";
const OLD2 = "auditRecords/ar-old-2";
const ageDays = 2600; // audit-7y is 2,557 days: these records are past their retainUntil
const archiveIdOf = (path: string) => archiveIdFor(path, T0 - ageDays * DAY_MS);

async function sweepAudit(hook?: (ctx: PurgeHookContext) => Promise<void>): Promise<UnitReport | undefined> {
  const summary = await runNightlyPurge(runOptions({ hook }));
  return (summary.units as UnitReport[]).find((u) => u.unitKey === "sweep-auditRecords");
}

describe("archive workflow (audit-7y)", () => {
  let before: Set<string>;

  beforeEach(async () => {
    await reset();
    await putGoverned(OLD, { action: "REFUND_ISSUED", actorUid: "u-1", amountMinor: 1200, at: new Timestamp(1_700_000_000, 123_456_000) }, { ageDays });
    await putGoverned(OLD2, { action: "EXPORT", actorUid: "u-2" }, { ageDays });
    await putGoverned("auditRecords/ar-new", { action: "LOGIN", actorUid: "u-3" }, { ageDays: 10 });
    before = await allGovernedPaths();
  });

  it("archives, verifies by read-back, then purges; the copy carries its own policy's retention, never born expired", async () => {
    const unit = await sweepAudit();
    expect(unit?.outcome).toBe("DONE");
    expect(await allGovernedPaths()).toEqual(new Set(["auditRecords/ar-new"]));
    const archive = (await db().doc(`archives/${archiveIdOf(OLD)}`).get()).data()!;
    expect(archive).toMatchObject({
      sourcePath: OLD,
      verified: true,
      retentionClass: "audit-7y",
      lifecycleState: "ARCHIVED",
      tenantId: "t-acme",
      legalHold: false,
      sealed: { v: 1, alg: "AES-256-GCM" },
    });
    // The business data is stored only as ciphertext, under the scope's data key (a sweep's copy: its document's scope).
    expect(archive.data).toBeUndefined();
    expect(archive.dataKey).toBe(`${dataKeyIdFor({ kind: "scope", id: "t-acme" })}#g1`);
    expect(JSON.stringify(archive)).not.toContain("REFUND_ISSUED");
    const opened = await openCopy(archive, archiveIdOf(OLD), new DataKeys());
    expect(opened).toMatchObject({ ok: true, plain: { action: "REFUND_ISSUED", actorUid: "u-1", amountMinor: 1200 } });
    // The recorded hash is of the plaintext the seal opens to.
    expect(archive.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(archive.sha256).toBe(hashCanonical((opened as { plain: unknown }).plain));
    // Firestore keeps microseconds: the copy equals the source as stored.
    expect((opened as { plain: { at: unknown } }).plain.at).toEqual({ $timestamp: "1700000000.123456000" });
    expect(archive.verifiedAt).toBeInstanceOf(Timestamp);
    // Its own retention: the archives collection's class (audit-7y), counted from the archiving time (the run's
    // now), never the source's end of retention, which had passed: the copy is not born expired.
    const archivedAt = (archive.archivedAt as Timestamp).toMillis();
    expect(archivedAt).toBe(runOptions().nowMs);
    expect((archive.createdAt as Timestamp).toMillis()).toBe(archivedAt);
    const retainUntil = (archive.retainUntil as Timestamp).toMillis();
    expect(retainUntil).toBe(archivedAt + 2557 * DAY_MS);
    expect((archive.expireAt as Timestamp).toMillis()).toBe(retainUntil);
    expect(retainUntil).toBeGreaterThan(archivedAt);
    // The source's retention stays on the copy as a record.
    expect(archive.source).toMatchObject({ retentionClass: "audit-7y" });
    expect(((archive.source as { retainUntil: Timestamp }).retainUntil).toMillis()).toBe(T0 - ageDays * DAY_MS + 2557 * DAY_MS);
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, [OLD, OLD2]);
    expect(pathCounts(entries, "ARCHIVE_CREATED").get(OLD)).toBe(1);
    expect(pathCounts(entries, "ARCHIVE_VERIFIED").get(OLD)).toBe(1);
    const verified = entries.find((e) => e.action === "ARCHIVE_VERIFIED")!;
    expect(verified.detail?.archiveManifestHash).toBe(archive.archiveManifestHash);
    // Verified before anything was deleted (one unit's evidence is one chain, in commit order).
    await expectBefore(verified, entries.find((e) => e.action === "PURGE_BATCH")!);
  });

  for (const [name, damage] of [
    ["corrupted", async (ref: DocumentReference) => {
      const ct = Buffer.from((await ref.get()).get("sealed.ct") as string, "base64");
      ct[0] = ct[0]! ^ 1;
      await ref.update({ "sealed.ct": ct.toString("base64") });
    }],
    ["missing", (ref: DocumentReference) => ref.delete()],
  ] as const) {
    it(`blocks the purge with ARCHIVE_NOT_VERIFIED when the archive is ${name}, and deletes nothing`, async () => {
      const unit = await sweepAudit(async (ctx) => {
        if (ctx.point === "afterArchiveWrite") await damage(db().doc(`archives/${archiveIdOf(OLD)}`));
      });
      expect(unit).toMatchObject({ outcome: "BLOCKED", reason: "ARCHIVE_NOT_VERIFIED" });
      expect(await allGovernedPaths()).toEqual(before);
      for (const p of [OLD, OLD2]) expect((await db().doc(p).get()).get("lifecycleState")).toBe("ACTIVE");
      const entries = await expectChainVerifies();
      expect(entries.filter((e) => ["PURGE_BATCH", "PURGE_ELIGIBLE_MARKED"].includes(e.action))).toEqual([]);
      const blocked = entries.filter((e) => e.action === "PURGE_BLOCKED");
      expect(blocked).toHaveLength(1);
      expect(blocked[0]!.decision.reason).toBe("ARCHIVE_NOT_VERIFIED");
      expect(blocked[0]!.paths).toEqual([OLD]);
      // No copy is marked verified when its slice failed; the audit's ARCHIVE_UNVERIFIED will name it.
      expect((await db().doc(`archives/${archiveIdOf(OLD2)}`).get()).get("verified")).toBe(false);
      expect((await db().doc("retentionJobs/purge-sweep-auditRecords").get()).get("phase")).toBe("BLOCKED");
    });
  }

  it("refuses to replace a damaged archive on the next run: it stays blocked until someone looks", async () => {
    await sweepAudit(async (ctx) => {
      if (ctx.point === "afterArchiveWrite") await db().doc(`archives/${archiveIdOf(OLD)}`).update({ "sealed.tag": Buffer.alloc(16).toString("base64") });
    });
    const unit = await sweepAudit();
    expect(unit).toMatchObject({ outcome: "BLOCKED", reason: "ARCHIVE_NOT_VERIFIED" });
    expect(await allGovernedPaths()).toEqual(before);
    expect((await evidence()).filter((e) => e.action === "PURGE_BATCH")).toEqual([]);
  });

  it("honours a hold placed after the copy was made: the source stays and the archive loses its expiry", async () => {
    let holdId = "";
    const unit = await sweepAudit(async (ctx) => {
      if (ctx.point === "afterArchiveWrite") holdId = await hold(OLD);
    });
    expect(unit?.outcome).toBe("DONE");
    const after = await allGovernedPaths();
    expect(after.has(OLD)).toBe(true);
    expect(after.has(OLD2)).toBe(false);
    const archive = (await db().doc(`archives/${archiveIdOf(OLD)}`).get()).data()!;
    expect(archive.legalHold).toBe(true);
    expect(archive.holdIds).toEqual([holdId]);
    expect(archive.expireAt).toBeUndefined();
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, [OLD2]);
    expect(pathCounts(entries, "PURGE_BATCH").has(OLD)).toBe(false);
  });

  it("an archive copy can be held like any governed document: placeRetentionHold on archives/{id}, no expiry while held, its own back on release", async () => {
    expect((await sweepAudit())?.outcome).toBe("DONE");
    const path = `archives/${archiveIdOf(OLD)}`;
    const expireAt = ((await db().doc(path).get()).get("expireAt") as Timestamp).toMillis();
    const { holdId } = await placeHold({ targetPath: path, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: T0 });
    const held = (await db().doc(path).get()).data()!;
    expect(held).toMatchObject({ legalHold: true, holdIds: [holdId], lifecycleState: "LEGAL_HOLD", verified: true });
    expect(held.expireAt).toBeUndefined();
    expect((await db().doc(`retentionHolds/${holdId}`).get()).data()).toMatchObject({ targetPath: path, state: "ACTIVE", targetType: "document" });
    const placed = (await evidence()).filter((e) => e.action === "HOLD_PLACED");
    expect(placed.map((e) => e.paths)).toEqual([[path]]);
    await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs: T0 });
    const released = (await db().doc(path).get()).data()!;
    expect(released).toMatchObject({ legalHold: false, holdIds: [], lifecycleState: "ARCHIVED" });
    expect((released.expireAt as Timestamp).toMillis()).toBe(expireAt);
    await expectChainVerifies();
  });
});
