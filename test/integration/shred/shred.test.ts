/**
 * Crypto-shredded archives (decision 0038): copies sealed under their subject's data key, the key shredded when the
 * last copy's retention ends, and a backup of the app database and of the key store, taken before the shred and
 * restored into second databases as the restore drill does, yields nothing readable afterwards.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { exportTenant, verifyExportDir } from "../../../functions/src/export/subject";
import type { Timestamp } from "firebase-admin/firestore";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { inDatabase } from "../../../functions/src/platform/firestore";
import { explainEvidence } from "../../../functions/src/evidence/index";
import { scanRetention } from "../../../functions/src/audit/scan";
import { archiveIdFor } from "../../../functions/src/purge/rules/archive";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import { releaseHoldById } from "../../../functions/src/holds/service";
import { DataKeys, dataKeyIdFor, keyForSubject, openCopy, sealPlaintextArchives, shredMarkerRef, type ShredSummary } from "../../../functions/src/shred/index";
import { LOCAL_KMS_DATABASE, LocalKeys } from "../../../functions/src/platform/kms";
import { sourceHash } from "../../../functions/src/purge/runner/archive";
import { Timestamp as Ts } from "firebase-admin/firestore";
import { kekIdOf, newDataKey, open, periodOf, sealAad, type Sealed } from "../../../functions/src/shred/rules";
import { clearFirestore, db } from "../../helpers/emulator";
import { dumpDatabase as dump, restoreInto } from "../../helpers/restore";
import { AFTER_GRACE, evidence, expectChainVerifies, hold, InjectedCrash, pathCounts, putGoverned, reset, runOptions, T0 } from "../purge/support";

const LEDGER = "shred-ledger";
const APP_RESTORED = "shred-app-restored";
const LEDGER_RESTORED = "shred-ledger-restored";
/** A second ledger database: its local key ring is another ring (platform/kms.ts names a local ring after its ledger). */
const LEDGER_ROTATED = "shred-ledger-rotated";
const ageDays = 2600; // past audit-7y's 2,557 days: the sweep archives them
const ACME = "auditRecords/ar-acme";
const BETA = "auditRecords/ar-beta";
const PERSONAL = ["Ada Lovelace", "ada@example.com", "Ben Okafor", "ben@example.com"];
/** The copies end 2,557 days after the archiving run; their period ends at the next UTC midnight. */
const SHRED_AT = AFTER_GRACE + 2559 * DAY_MS;
const copyOf = (path: string) => `archives/${archiveIdFor(path, T0 - ageDays * DAY_MS)}`;

async function archiveBoth(): Promise<void> {
  await putGoverned(ACME, { action: "REFUND_ISSUED", actorName: "Ada Lovelace", actorEmail: "ada@example.com" }, { ageDays, tenantId: "t-acme" });
  await putGoverned(BETA, { action: "EXPORT", actorName: "Ben Okafor", actorEmail: "ben@example.com" }, { ageDays, tenantId: "t-beta" });
  const run = await runNightlyPurge(runOptions());
  expect((run.units as { unitKey: string; outcome: string }[]).find((u) => u.unitKey === "sweep-auditRecords")?.outcome).toBe("DONE");
}

async function shredRun(nowMs: number, over: Parameters<typeof runOptions>[0] = {}): Promise<ShredSummary> {
  const run = await runNightlyPurge(runOptions({ nowMs, asOfMs: nowMs, ...over }));
  return run.shred as ShredSummary;
}

const opened = async (path: string, databaseId?: string) => {
  const read = async () => openCopy((await db().doc(path).get()).data()!, path.split("/")[1]!, new DataKeys());
  return databaseId ? inDatabase(databaseId, read) : read();
};

describe("crypto-shredded archives", () => {
  const previousLedger = process.env.RETENTION_LEDGER_DATABASE_ID;

  beforeAll(() => {
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
  });
  afterAll(() => {
    if (previousLedger === undefined) delete process.env.RETENTION_LEDGER_DATABASE_ID;
    else process.env.RETENTION_LEDGER_DATABASE_ID = previousLedger;
  });

  beforeEach(async () => {
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
    await reset();
    for (const d of [LEDGER, APP_RESTORED, LEDGER_RESTORED, LEDGER_ROTATED]) await clearFirestore(d);
  });

  it("stores a copy's personal fields only as ciphertext: unreadable without its key, readable with it", async () => {
    await archiveBoth();
    const raw = (await db().doc(copyOf(ACME)).get()).data()!;
    const text = JSON.stringify(raw);
    for (const p of PERSONAL) expect(text).not.toContain(p);
    // Retention, source path and hash stay readable for the audit, holds and verification.
    expect(raw).toMatchObject({ sourcePath: ACME, retentionClass: "audit-7y", verified: true, dataKey: `${dataKeyIdFor({ kind: "scope", id: "t-acme" })}#g1` });
    expect(raw.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: true, plain: { actorName: "Ada Lovelace" } });
    // One key per scope: the other scope's copy is under another key, and neither key opens the other's copy.
    expect((await db().doc(copyOf(BETA)).get()).get("dataKey")).not.toBe(raw.dataKey);
    expect(() => open(newDataKey(), raw.sealed as Sealed, sealAad(copyOf(ACME).split("/")[1]!, ACME, String(raw.dataKey)))).toThrow(/SEAL_INVALID/);
    // The key store is in the ledger's database, not the governed one, and holds no key in the clear.
    const keys = await db(LEDGER).collection("archiveKeys").get();
    expect(keys.size).toBe(2);
    expect(keys.docs.every((d) => (d.get("wrapped") as Uint8Array | undefined)?.length !== undefined && (d.get("wrapped") as Uint8Array).length > 32)).toBe(true);
    expect((await db().collection("archiveKeys").get()).size).toBe(0);
    // Without its key record the copy cannot be opened at all.
    await db(LEDGER).doc(`archiveKeys/${dataKeyIdFor({ kind: "scope", id: "t-acme" })}`).delete();
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: false, reason: "KEY_MISSING" });
  });

  it("the audit reports an active data key no copy names any more (ORPHANED_DATA_KEY), and no sealed copy as plaintext", async () => {
    await archiveBoth();
    await db().doc(copyOf(BETA)).delete();
    const findings = (await scanRetention({ nowMs: AFTER_GRACE + 2 * DAY_MS, pageSize: 50 })).findings.filter((f) => ["ORPHANED_DATA_KEY", "ARCHIVE_PLAINTEXT"].includes(f.code));
    expect(findings.map((f) => `${f.code} ${f.path}`)).toEqual([`ORPHANED_DATA_KEY archiveKeys/${dataKeyIdFor({ kind: "scope", id: "t-beta" })}`]);
    // Not within the day its key was made (a key is made just before its first copy).
    expect((await scanRetention({ nowMs: AFTER_GRACE + 1000, pageSize: 50 })).findings.filter((f) => f.code === "ORPHANED_DATA_KEY")).toEqual([]);
  });

  it("the scope's export opens its archive copies for the departing customer; once shredded they are gone from it", async () => {
    await archiveBoth();
    const dir = mkdtempSync(join(tmpdir(), "shred-export-"));
    await exportTenant({ tenantId: "t-acme", outDir: join(dir, "before"), nowMs: AFTER_GRACE });
    const lines = readFileSync(join(dir, "before", "archives.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { path: string; data: { sourcePath: string; data: Record<string, unknown> } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ path: copyOf(ACME), data: { sourcePath: ACME, data: { actorName: "Ada Lovelace", actorEmail: "ada@example.com" } } });
    expect((await verifyExportDir(join(dir, "before"))).ok).toBe(true);
    await shredRun(SHRED_AT);
    await exportTenant({ tenantId: "t-acme", outDir: join(dir, "after"), nowMs: SHRED_AT });
    expect(existsSync(join(dir, "after", "archives.jsonl"))).toBe(false);
  });

  it("shreds at the end of retention: a pre-shred backup of the app database and the key store, restored, yields no readable personal field", async () => {
    await archiveBoth();
    // The backups, taken before the shred: the app database, and the ledger's database with the wrapped keys.
    await restoreInto(db(), db(APP_RESTORED));
    await restoreInto(db(LEDGER), db(LEDGER_RESTORED));
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER_RESTORED;
    expect(await opened(copyOf(ACME), APP_RESTORED)).toMatchObject({ ok: true }); // readable before the shred
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;

    // A night before the period ends: nothing is due.
    expect(await shredRun(SHRED_AT - 2 * DAY_MS)).toEqual({ shredded: 0, moved: 0, kekDestroyed: 0 });
    const summary = await shredRun(SHRED_AT);
    expect(summary).toEqual({ shredded: 2, moved: 0, kekDestroyed: 1 });

    const entries = await expectChainVerifies();
    const shredded = entries.filter((e) => e.action === "ARCHIVE_SHREDDED");
    expect(shredded).toHaveLength(2);
    for (const e of shredded) {
      expect(e.decision.reason).toBe("ARCHIVE_RETENTION_ENDED");
      expect(e.detail).toMatchObject({ destroyDelayDays: 30, fullyGoneByMs: SHRED_AT + 30 * DAY_MS });
    }
    const tomb = (await db(LEDGER).doc(`archiveKeys/${dataKeyIdFor({ kind: "scope", id: "t-acme" })}`).get()).data()!;
    expect(tomb).toMatchObject({ state: "SHREDDED", generation: 1 });
    expect(tomb.wrapped).toBeUndefined();
    const kek = (await db(LEDGER).collection("archiveKeks").get()).docs.map((d) => d.data());
    expect(kek).toHaveLength(1);
    expect(kek[0]).toMatchObject({ state: "DESTROY_SCHEDULED" });
    expect((kek[0]!.destroyAt as Timestamp).toMillis()).toBe(SHRED_AT + 30 * DAY_MS);
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: false, reason: "SHREDDED", shreddedAtMs: SHRED_AT });

    // The restore: the pre-shred copies, read with the pre-shred key store, stay sealed.
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER_RESTORED;
    for (const p of [ACME, BETA]) expect(await opened(copyOf(p), APP_RESTORED)).toMatchObject({ ok: false, reason: "KEK_UNAVAILABLE" });
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
    for (const d of [APP_RESTORED, LEDGER_RESTORED]) {
      const text = [...(await dump(db(d))).values()].join("\n");
      for (const p of PERSONAL) expect(text, `${d} holds ${p} in the clear`).not.toContain(p);
    }
    // explain, by the copy or by its source, says the copy was shredded and when it is gone for good.
    for (const value of [copyOf(ACME), ACME]) {
      const explained = await explainEvidence({ kind: "path", value });
      expect(explained.summary.some((l) => l.startsWith("archive copy crypto-shredded:") && l.includes(new Date(SHRED_AT + 30 * DAY_MS).toISOString())), value).toBe(true);
      expect(explained.verification.ok).toBe(true);
    }
    // A second run finds nothing more to do and writes no second entry.
    expect(await shredRun(SHRED_AT + DAY_MS)).toEqual({ shredded: 0, moved: 0, kekDestroyed: 0 });
    expect((await evidence()).filter((e) => e.action === "ARCHIVE_SHREDDED")).toHaveLength(2);
  });

  it("a held copy is not shredded: its key moves to a later period and the day's KEK still goes; released, it is shredded the next night", async () => {
    await archiveBoth();
    const holdId = await hold(copyOf(ACME), SHRED_AT - DAY_MS);
    expect(await shredRun(SHRED_AT)).toEqual({ shredded: 1, moved: 1, kekDestroyed: 1 });
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: true, plain: { actorName: "Ada Lovelace" } });
    expect(await opened(copyOf(BETA))).toMatchObject({ ok: false, reason: "SHREDDED" });
    // Held: looked at again every night, moved a night on each time.
    expect(await shredRun(SHRED_AT + DAY_MS)).toEqual({ shredded: 0, moved: 1, kekDestroyed: 1 });
    await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs: SHRED_AT + DAY_MS });
    expect(await shredRun(SHRED_AT + 2 * DAY_MS)).toEqual({ shredded: 1, moved: 0, kekDestroyed: 1 });
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: false, reason: "SHREDDED" });
    await expectChainVerifies();
  });

  it("a hold that lands while the shred runs stops the keys it covers (through the shred's hook)", async () => {
    await archiveBoth();
    const acmeKey = dataKeyIdFor({ kind: "scope", id: "t-acme" });
    const betaKey = dataKeyIdFor({ kind: "scope", id: "t-beta" });
    let placed = "";
    const summary = await shredRun(SHRED_AT, {
      afterShredDecision: async (dataKeyId) => {
        if (placed) return;
        // After the first key's decision committed, a hold lands on the other key's copy.
        placed = dataKeyId === acmeKey ? BETA : ACME;
        await hold(copyOf(placed), SHRED_AT);
      },
    });
    expect(summary).toEqual({ shredded: 1, moved: 1, kekDestroyed: 1 });
    expect(await opened(copyOf(placed))).toMatchObject({ ok: true });
    expect(await opened(copyOf(placed === ACME ? BETA : ACME))).toMatchObject({ ok: false, reason: "SHREDDED" });
    expect([acmeKey, betaKey]).toContain(dataKeyIdFor({ kind: "scope", id: placed === ACME ? "t-acme" : "t-beta" }));
  });

  it("a copy written while the shred decides on its key is never sealed under the shredded generation: the writer and the migration take the next one", async () => {
    await archiveBoth();
    const acmeKey = dataKeyIdFor({ kind: "scope", id: "t-acme" });
    const betaKey = dataKeyIdFor({ kind: "scope", id: "t-beta" });
    // Each key's shred decision has committed (its marker) and its tombstone has not, when another process seals a
    // copy under it: for acme, another purge run archives a new record of the scope; for beta, the backfill seals a
    // copy of the scope written in the clear.
    const LATE = "auditRecords/ar-acme-late";
    const CLEAR = "archives/arc-clear-beta";
    const clearData = { action: "LOGIN", actorName: "Cleo Clear" };
    const raced = new Set<string>();
    const summary = await shredRun(SHRED_AT, {
      afterShredDecision: async (dataKeyId, verdict) => {
        if (raced.has(dataKeyId)) return;
        raced.add(dataKeyId);
        expect(verdict.shred).toBe(true);
        if (dataKeyId === acmeKey) {
          await putGoverned(LATE, { action: "REFUND_ISSUED", actorName: "Ada Later", actorEmail: "ada.later@example.com" }, { ageDays, tenantId: "t-acme" });
          const run = await runNightlyPurge(runOptions({ nowMs: SHRED_AT, asOfMs: SHRED_AT, shred: false }));
          expect((run.units as { unitKey: string; outcome: string }[]).find((u) => u.unitKey === "sweep-auditRecords")?.outcome).toBe("DONE");
        } else {
          await db().doc(CLEAR).set({ archiveId: CLEAR.split("/")[1], sourcePath: "auditRecords/ar-clear", sha256: sourceHash(clearData), data: clearData, tenantId: "t-beta", unitKey: "sweep-auditRecords", retentionClass: "audit-7y", retainUntil: Ts.fromMillis(SHRED_AT + 1000 * DAY_MS), verified: true });
          expect(await sealPlaintextArchives({ nowMs: SHRED_AT, actor: { type: "system", id: "expiryBackfill" }, restart: true })).toMatchObject({ sealed: 1 });
        }
      },
    });
    expect([...raced].sort()).toEqual([acmeKey, betaKey].sort());
    expect(summary.shredded).toBe(2);
    // Each found the marker on g1 and sealed under g2; the shred's tombstone of g1 found g2 and left it.
    expect((await db().doc(copyOf(LATE)).get()).get("dataKey")).toBe(`${acmeKey}#g2`);
    expect((await db().doc(CLEAR).get()).get("dataKey")).toBe(`${betaKey}#g2`);
    expect(await opened(copyOf(LATE))).toMatchObject({ ok: true, plain: { actorName: "Ada Later" } });
    expect(await opened(CLEAR)).toMatchObject({ ok: true, plain: { actorName: "Cleo Clear" } });
    for (const p of [ACME, BETA]) expect(await opened(copyOf(p))).toMatchObject({ ok: false, reason: "SHREDDED" });
    for (const k of [acmeKey, betaKey]) expect((await db(LEDGER).doc(`archiveKeys/${k}`).get()).data()).toMatchObject({ state: "ACTIVE", generation: 2 });
    // The invariant: every copy that no longer opens had reached the end of its retention; none still retained is sealed for good.
    for (const d of (await db().collection("archives").get()).docs) {
      const o = await opened(d.ref.path);
      if (!o.ok) expect((d.get("retainUntil") as Timestamp).toMillis(), `${d.ref.path} unreadable while retained (${o.reason})`).toBeLessThanOrEqual(SHRED_AT);
    }
    // The next night's shred leaves the new generations alone (their copies end years later).
    expect(await shredRun(SHRED_AT + DAY_MS)).toMatchObject({ shredded: 0 });
    for (const p of [copyOf(LATE), CLEAR]) expect(await opened(p)).toMatchObject({ ok: true });
    await expectChainVerifies();
  });

  it("Firestore serialises the shred's decision against a writer when both transactions read before either commits (the shapes decision 0038 relies on)", async () => {
    // The decision reads the key's copies (a query on dataKey) and writes the marker; the writer reads the marker and
    // writes a copy under the key. Each stalls after its reads until the other has read; whichever then commits, the
    // other is retried and sees its write: never a marker and a copy under its generation both.
    const ref = `${dataKeyIdFor({ kind: "scope", id: "t-race" })}#g1`;
    const marker = shredMarkerRef(dataKeyIdFor({ kind: "scope", id: "t-race" }), 1);
    for (const first of ["writer", "shred"] as const) {
      await marker.delete();
      const copy = db().doc(`archives/arc-race-${first}`);
      let shredRead!: () => void;
      let writerRead!: () => void;
      const shredHasRead = new Promise<void>((r) => (shredRead = r));
      const writerHasRead = new Promise<void>((r) => (writerRead = r));
      let shredTries = 0;
      let writerTries = 0;
      const shred = db().runTransaction(async (tx) => {
        shredTries++;
        const copies = await tx.get(db().collection("archives").where("dataKey", "==", ref));
        shredRead();
        if (shredTries === 1) await writerHasRead;
        if (first === "writer" && shredTries === 1) await new Promise((r) => setTimeout(r, 300));
        if (!copies.empty) return "kept";
        tx.create(marker, { dataKey: ref });
        return "shredded";
      });
      const writer = db().runTransaction(async (tx) => {
        writerTries++;
        if (writerTries === 1) await shredHasRead;
        const m = await tx.get(marker);
        writerRead();
        if (m.exists) return "refused";
        if (first === "shred" && writerTries === 1) await new Promise((r) => setTimeout(r, 300));
        tx.create(copy, { dataKey: ref });
        return "written";
      });
      const outcome = await Promise.all([shred, writer]);
      const state = { marker: (await marker.get()).exists, copy: (await copy.get()).exists };
      // Which one wins is the lock manager's choice; that only one does, and the other saw it, is the invariant.
      expect([["kept", "written"], ["shredded", "refused"]], first).toContainEqual(outcome);
      expect(state, first).toEqual(outcome[0] === "kept" ? { marker: false, copy: true } : { marker: true, copy: false });
      expect(shredTries + writerTries, first).toBeGreaterThanOrEqual(3);
    }
  });

  it("a key ring rotation wraps a subject's active key again under the new ring and keeps its generation: its copies stay readable", async () => {
    await archiveBoth();
    const acme = { kind: "scope", id: "t-acme" } as const;
    const acmeKey = dataKeyIdFor(acme);
    // The key store moves to another ledger database, whose local ring is another ring (as a new KMS key ring would be).
    await restoreInto(db(LEDGER), db(LEDGER_ROTATED));
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER_ROTATED;
    const before = (await db(LEDGER_ROTATED).doc(`archiveKeys/${acmeKey}`).get()).data()!;
    expect(before.ring).toBe(`local/${LEDGER}`);
    const key = await keyForSubject(acme, periodOf(SHRED_AT), AFTER_GRACE + DAY_MS);
    expect(key.generation).toBe(1);
    const after = (await db(LEDGER_ROTATED).doc(`archiveKeys/${acmeKey}`).get()).data()!;
    expect(after).toMatchObject({ state: "ACTIVE", generation: 1, ring: `local/${LEDGER_ROTATED}` });
    expect(Buffer.from(after.wrapped as Uint8Array).equals(Buffer.from(before.wrapped as Uint8Array))).toBe(false);
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: true, plain: { actorName: "Ada Lovelace" } });
    // And the next call finds it in the current ring: nothing more to do.
    expect((await keyForSubject(acme, periodOf(SHRED_AT), AFTER_GRACE + DAY_MS)).key.equals(key.key)).toBe(true);
  });

  it("after a key ring change the shred still shreds the keys wrapped in the ring before, and destroys that ring's day keys too", async () => {
    await archiveBoth();
    // The key store moves to another ledger database, whose local ring is another ring (as a new KMS key ring would be).
    await restoreInto(db(LEDGER), db(LEDGER_ROTATED));
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER_ROTATED;
    const oldRing = `local/${LEDGER}`;
    const keks = async () => (await db(LEDGER_ROTATED).collection("archiveKeks").get()).docs.map((d) => ({ id: d.id, ring: d.get("ring") as string, state: d.get("state") as string }));
    const before = await keks();
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ ring: oldRing, state: "ACTIVE" });
    const period = before[0]!.id;
    // A new subject's key for the same day, in the new ring: a record of its own, the old ring's record untouched.
    await keyForSubject({ kind: "scope", id: "t-gamma" }, period, AFTER_GRACE + DAY_MS);
    const both = (await keks()).sort((a, b) => a.id.localeCompare(b.id));
    expect(both.map((k) => [k.ring, k.state])).toEqual([
      [oldRing, "ACTIVE"],
      [`local/${LEDGER_ROTATED}`, "ACTIVE"],
    ]);
    expect(both[0]!.id).toBe(period);
    expect(both[1]!.id).toMatch(new RegExp(`^${period}~[0-9a-f]{16}$`));
    // Neither archived key was used since the change: both are still in the old ring, and both are due.
    expect(await shredRun(SHRED_AT)).toEqual({ shredded: 3, moved: 0, kekDestroyed: 2 });
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: false, reason: "SHREDDED" });
    expect(await opened(copyOf(BETA))).toMatchObject({ ok: false, reason: "SHREDDED" });
    expect((await keks()).map((k) => k.state)).toEqual(["DESTROY_SCHEDULED", "DESTROY_SCHEDULED"]);
    await expectChainVerifies();
  });

  it("an active key that cannot be unwrapped fails the archive loudly (DATA_KEY_UNAVAILABLE) and changes nothing", async () => {
    await archiveBoth();
    const acme = { kind: "scope", id: "t-acme" } as const;
    const keyRef = db(LEDGER).doc(`archiveKeys/${dataKeyIdFor(acme)}`);
    const before = await keyRef.get();
    // Its period's KEK is unavailable (disabled in KMS, or a permission lost).
    await db(LOCAL_KMS_DATABASE).doc(`rings/${LEDGER}/keks/${kekIdOf(String(before.get("period")))}`).update({ state: "DISABLED" });
    await expect(keyForSubject(acme, periodOf(SHRED_AT), AFTER_GRACE + DAY_MS)).rejects.toThrow(/^DATA_KEY_UNAVAILABLE: /);
    // A new record of the scope: the sweep's archive step fails, so its source is neither copied nor deleted.
    const LATE = "auditRecords/ar-acme-late";
    await putGoverned(LATE, { action: "REFUND_ISSUED", actorName: "Ada Later" }, { ageDays, tenantId: "t-acme" });
    const failed = await runNightlyPurge(runOptions({ nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS, shred: false })).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(failed?.message).toBe("PURGE_RUN_FAILED: 1 unit(s) failed (sweep-auditRecords)");
    expect(String((failed?.cause as Error | undefined)?.message)).toMatch(/^DATA_KEY_UNAVAILABLE: /);
    expect((await db().doc(LATE).get()).exists).toBe(true);
    expect((await db().doc(copyOf(LATE)).get()).exists).toBe(false);
    const after = await keyRef.get();
    expect(after.updateTime!.isEqual(before.updateTime!)).toBe(true);
    expect(after.data()).toEqual(before.data());
    // Once the KEK is back, the old copy opens and the subject's key is the same generation.
    await db(LOCAL_KMS_DATABASE).doc(`rings/${LEDGER}/keks/${kekIdOf(String(before.get("period")))}`).update({ state: "ENABLED" });
    expect(await opened(copyOf(ACME))).toMatchObject({ ok: true });
    expect((await keyForSubject(acme, periodOf(SHRED_AT), AFTER_GRACE + DAY_MS)).generation).toBe(1);
  });

  it("asks KMS to make a period's key only when the key store has no active record of it in this ring", async () => {
    await archiveBoth();
    const ensure = vi.spyOn(LocalKeys.prototype, "ensure");
    try {
      // Both keys move to the same later period: the first move makes its KEK, the second finds its record.
      const later = periodOf(SHRED_AT + 10 * DAY_MS);
      for (const id of ["t-acme", "t-beta"]) expect((await keyForSubject({ kind: "scope", id }, later, AFTER_GRACE + DAY_MS)).generation).toBe(1);
      expect(ensure.mock.calls.map((c) => c[0])).toEqual([kekIdOf(later)]);
      // Nothing to move: no KMS call at all.
      await keyForSubject({ kind: "scope", id: "t-acme" }, later, AFTER_GRACE + DAY_MS);
      expect(ensure).toHaveBeenCalledTimes(1);
    } finally {
      ensure.mockRestore();
    }
  });

  it("opens data keys outside transactions: the archive's read-back and the delete batches unwrap before their transactions, never in them", async () => {
    // Every transaction's callback is counted while it runs; an unwrap (a KMS decrypt in production) must not happen
    // inside one, where it would hold the transaction's locks for a KMS round trip.
    let inTx = 0;
    let unwraps = 0;
    const inside: string[] = [];
    const original = (proto: object, name: string) => Object.getOwnPropertyDescriptor(proto, name)!.value as (...args: unknown[]) => unknown;
    // The governed database's instance (platform/firestore.ts wraps runTransaction on it): where the read-back and the
    // delete batches run their transactions.
    const governed = db();
    const run = original(governed, "runTransaction") as typeof governed.runTransaction;
    const txSpy = vi.spyOn(governed, "runTransaction").mockImplementation((fn, opts) =>
      run(async (tx) => {
        inTx++;
        try {
          return await fn(tx);
        } finally {
          inTx--;
        }
      }, opts),
    );
    const unwrap = original(LocalKeys.prototype, "unwrap");
    const unwrapSpy = vi.spyOn(LocalKeys.prototype, "unwrap").mockImplementation(function (this: LocalKeys, ...args: unknown[]) {
      unwraps++;
      if (inTx > 0) inside.push(String(args[0]));
      return Reflect.apply(unwrap, this, args) as Promise<Buffer>;
    });
    try {
      await archiveBoth();
    } finally {
      txSpy.mockRestore();
      unwrapSpy.mockRestore();
    }
    expect(inside).toEqual([]);
    expect(unwraps).toBeGreaterThan(0);
    for (const p of [ACME, BETA]) expect((await db().doc(p).get()).exists).toBe(false);
  });

  it("migrates copies written in the clear, resumably: interrupted after a page, resumed from its cursor, each copy sealed once", async () => {
    const old = [1, 2, 3, 4].map((n) => ({ id: `arc-old-${n}`, sourcePath: `auditRecords/ar-${n}`, data: { action: "LOGIN", actorName: `Old Person ${n}`, at: new Ts(1_700_000_000 + n, 5_000) } }));
    for (const o of old) {
      await db().doc(`archives/${o.id}`).set({
        archiveId: o.id,
        sourcePath: o.sourcePath,
        sha256: sourceHash(o.data),
        data: o.data,
        tenantId: n2t(o.id),
        unitKey: "sweep-auditRecords",
        retentionClass: "audit-7y",
        retainUntil: Ts.fromMillis(T0 + 2000 * DAY_MS),
        verified: true,
      });
    }
    // One copy was altered after it was written: it is left for a person, never sealed as if intact.
    await db().doc("archives/arc-old-4").update({ "data.actorName": "Someone Else" });
    const base = { nowMs: T0, actor: { type: "system", id: "expiryBackfill" } as const, correlationId: "test", pageSize: 1 };
    expect(await sealPlaintextArchives({ ...base, maxDocs: 1 })).toMatchObject({ scanned: 1, sealed: 1, done: false, resumed: false });
    // The next run is interrupted right after its first page committed.
    await expect(
      sealPlaintextArchives({
        ...base,
        afterPage: () => Promise.reject(new InjectedCrash("after a page")),
      }),
    ).rejects.toBeInstanceOf(InjectedCrash);
    const resumed = await sealPlaintextArchives(base);
    expect(resumed).toMatchObject({ resumed: true, done: true, sealed: 1, mismatched: 1 });
    expect(await sealPlaintextArchives(base)).toMatchObject({ scanned: 0, done: true });
    for (const o of old.slice(0, 3)) {
      const a = (await db().doc(`archives/${o.id}`).get()).data()!;
      expect(a.data).toBeUndefined();
      expect(JSON.stringify(a)).not.toContain(o.data.actorName);
      expect(await opened(`archives/${o.id}`)).toMatchObject({ ok: true, plain: { actorName: o.data.actorName, at: { $timestamp: `${o.data.at.seconds}.000005000` } } });
    }
    expect((await db().doc("archives/arc-old-4").get()).get("data.actorName")).toBe("Someone Else");
    const entries = await expectChainVerifies();
    const sealedCounts = pathCounts(entries, "ARCHIVE_SEALED");
    expect([...sealedCounts.entries()].sort()).toEqual(old.slice(0, 3).map((o) => [`archives/${o.id}`, 1]));
  });
});

function n2t(id: string): string {
  return id.endsWith("1") || id.endsWith("3") ? "t-acme" : "t-beta";
}
