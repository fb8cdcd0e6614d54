/**
 * The evidence verifier against the emulator: a chain written through the real evidence store verifies;
 * one entry edited and another deleted fail verification with both places named; restoring them makes it
 * verify again. Small pages make the walk cross page boundaries and chain boundaries. The tamper cases an
 * insider with database write could try, and the anchors that catch them, are in tamper.test.ts.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { evidenceDocId, type EvidenceBody } from "../../../functions/src/evidence/rules";
import { headRef, recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { verifyEvidence } from "../../../functions/src/evidence/verify";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { clearFirestore, db } from "../../helpers/emulator";

const body = (i: number): EvidenceBody => ({
  action: "TTL_DELETE",
  actor: { type: "system", id: "ttlDeleted-sessions" },
  decision: { reason: "SWEEPER" },
  policyVersion: "v1",
  atMs: 1_800_000_000_000 + i,
  paths: [`sessions/s-${i}`],
  counts: { childrenRemoved: i % 3 },
  detail: { expireAtMs: 1_800_000_000_000, eventTimeMs: 1_800_000_000_000 + i * 60_000, deletionLagMs: i * 60_000 },
});

/** One subject's evidence: one chain. A second subject's two entries sort after it (and another, before). */
const SUBJECT = "sessions/subject-a";
const shard = () => shardOfKey(SUBJECT);
const entryRef = (seq: number) => db().collection(COLLECTIONS.deletionAudits).doc(evidenceDocId(shard(), seq));
const OTHERS = Array.from({ length: 40 }, (_, i) => `sessions/other-${i}`);

describe("verify-evidence", () => {
  beforeEach(async () => {
    await clearFirestore();
    // Two transactions, as separate writers would append.
    await recordEvidence(SUBJECT, ...Array.from({ length: 6 }, (_, i) => body(i)));
    await recordEvidence(SUBJECT, ...Array.from({ length: 6 }, (_, i) => body(6 + i)));
  });

  it("an untouched chain verifies, walked in pages, with its MACs checked", async () => {
    const r = await verifyEvidence({ pageSize: 5 });
    expect(r).toMatchObject({ ok: true, checked: 12, chains: 1, macs: "checked", findings: [] });
    expect((await headRef(shard()).get()).data()).toMatchObject({ seq: 12 });
  });

  it("many chains verify together, walked across page and chain boundaries", async () => {
    const others = OTHERS.filter((k) => shardOfKey(k) !== shard()).slice(0, 5);
    for (const k of others) await recordEvidence(k, body(100), body(101));
    const r = await verifyEvidence({ pageSize: 3 });
    expect(r).toMatchObject({ ok: true, checked: 12 + 2 * others.length, findings: [] });
    expect(r.chains).toBe(new Set([shard(), ...others.map(shardOfKey)]).size);
  });

  it("an empty ledger with no heads verifies; a head without entries does not", async () => {
    await clearFirestore();
    expect(await verifyEvidence()).toMatchObject({ ok: true, checked: 0, chains: 0 });
    await headRef("s0003").set({ seq: 3, hash: "f".repeat(64) });
    const r = await verifyEvidence();
    expect(r.ok).toBe(false);
    expect(r.findings).toEqual([expect.objectContaining({ problem: "REMOVED", shard: "s0003", seq: 3 })]);
  });

  it("one entry edited and another deleted: the verifier fails and says where; restoring both repairs it", async () => {
    const edited = (await entryRef(4).get()).data()!;
    const removed = (await entryRef(9).get()).data()!;
    await entryRef(4).update({ "counts.childrenRemoved": 99 });
    await entryRef(9).delete();

    const r = await verifyEvidence({ pageSize: 5 });
    expect(r.ok).toBe(false);
    expect(r.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ problem: "EDITED", shard: shard(), seq: 4, docId: evidenceDocId(shard(), 4) }),
        expect.objectContaining({ problem: "REMOVED", shard: shard(), seq: 9, docId: evidenceDocId(shard(), 10) }),
      ]),
    );
    // Nothing else is blamed: entries after the gap still link to the entry before it by their own hashes.
    expect(r.findings.map((f) => f.seq).sort((a, b) => a - b)).toEqual([4, 9]);

    await entryRef(4).set(edited);
    await entryRef(9).set(removed);
    expect(await verifyEvidence({ pageSize: 5 })).toMatchObject({ ok: true, checked: 12 });
  });

  it("an edit anywhere, including at a page boundary, is reported once, at that entry", async () => {
    for (let seq = 1; seq <= 12; seq++) {
      const saved = (await entryRef(seq).get()).data()!;
      await entryRef(seq).update({ atMs: 1 });
      const r = await verifyEvidence({ pageSize: 5 });
      expect(r.findings.map((f) => `${f.problem}@${f.seq}`), `edit at ${seq}`).toEqual([`EDITED@${seq}`]);
      await entryRef(seq).set(saved);
    }
    expect((await verifyEvidence({ pageSize: 5 })).ok).toBe(true);
  });

  it("removing the newest entry is caught through its chain's head, and by its head record", async () => {
    await entryRef(12).delete();
    const r = await verifyEvidence({ pageSize: 4 });
    expect(r.ok).toBe(false);
    expect(r.findings).toEqual([expect.objectContaining({ problem: "REMOVED", seq: 12 }), expect.objectContaining({ problem: "TRUNCATED", seq: 12 })]);
    expect((await verifyEvidence({ pageSize: 4, anchors: { kind: "none" } })).findings).toEqual([expect.objectContaining({ problem: "REMOVED", seq: 12 })]);
  });

  it("an inserted entry (a forged document between two real ones) is reported as inserted", async () => {
    const forged = { ...(await entryRef(5).get()).data()!, counts: { childrenRemoved: 7 } };
    await db().collection(COLLECTIONS.deletionAudits).doc(`${evidenceDocId(shard(), 5)}a`).set(forged);
    await db().collection(COLLECTIONS.deletionAudits).doc("audit-note").set(forged);
    const r = await verifyEvidence({ pageSize: 3 });
    expect(r.ok).toBe(false);
    expect(r.findings.map((f) => `${f.problem}:${f.docId}`).sort()).toEqual(["INSERTED:audit-note", `INSERTED:${evidenceDocId(shard(), 5)}a`]);
  });

  it("hands every entry to the visitor once, in its chain's order (the dashboard's TTL delays come from this pass)", async () => {
    const seen: number[] = [];
    await verifyEvidence({ pageSize: 5, onEntry: (e) => seen.push(e.seq) });
    expect(seen).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  });
});
