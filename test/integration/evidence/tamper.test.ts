/**
 * What an insider with database write (and no evidence key) can try against the ledger, and what catches it:
 * a truncation with the head rewound, an edit re-hashed forward, a wiped ledger, a deleted chain. Each is
 * caught by `verify-evidence` (the same function the CLI runs) with the key and the anchors; each case also
 * shows which of the two does the catching, so that none of these tests could pass on the unkeyed,
 * unanchored chain the ledger replaced. Here the periodic anchor stands alone: the per-append head records
 * are dropped as if their log writes had failed (head-records.test.ts shows what they add).
 */
import { FieldPath } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { anchorEvidence, SEAL_SHARD_KEY } from "../../../functions/src/evidence/anchor";
import { chainHash, type ChainedEvidence } from "../../../functions/src/evidence/rules";
import { headRef, recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { firestoreLedger, verifyEvidence, verifyLedger, type Item } from "../../../functions/src/evidence/verify";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { clearFirestore, db } from "../../helpers/emulator";
import { dropHeadRecords, subjectsApart, ttlEntry } from "./support";

const body = ttlEntry;

const audits = () => db().collection(COLLECTIONS.deletionAudits);

/** Three subjects in three different chains, none of them the chain of the anchor job's own entries. */
const [A, B, C] = subjectsApart("subject", 3) as [string, string, string];

async function chainOf(subject: string): Promise<{ docId: string; entry: ChainedEvidence }[]> {
  const shard = shardOfKey(subject);
  const snap = await audits()
    .where(FieldPath.documentId(), ">=", audits().doc(`${shard}-`))
    .where(FieldPath.documentId(), "<", audits().doc(`${shard}.`))
    .get();
  return snap.docs.map((d) => ({ docId: d.id, entry: d.data() as ChainedEvidence }));
}

/**
 * The insider's rewrite: edit the entry at `fromSeq`, re-hash it and every later entry of its chain so every
 * link holds, and move the head to the new last hash. They cannot compute MACs, so the old ones stay.
 */
async function rehashForward(subject: string, fromSeq: number, edit: (e: ChainedEvidence) => ChainedEvidence): Promise<void> {
  let prevHash: string | null = null;
  let last: { seq: number; hash: string } | null = null;
  for (const { docId, entry } of await chainOf(subject)) {
    if (entry.seq < fromSeq) {
      prevHash = entry.hash;
      continue;
    }
    const changed = entry.seq === fromSeq ? edit(entry) : entry;
    const { seq, prevHash: _p, hash: _h, mac, keyId, ...hashed } = changed;
    const link = prevHash ?? _p;
    const hash = chainHash(link, seq, hashed);
    await audits().doc(docId).set({ ...hashed, seq, prevHash: link, hash, mac, keyId });
    prevHash = hash;
    last = { seq, hash };
  }
  await headRef(shardOfKey(subject)).set(last!);
}

const problems = (r: { findings: { problem: string; shard: string; seq: number }[] }) => r.findings.map((f) => `${f.problem}@${f.shard}:${f.seq}`);

describe("tamper evidence against an insider with database write", () => {
  beforeEach(async () => {
    await clearFirestore();
    for (let i = 1; i <= 8; i++) await recordEvidence(A, body(A, i));
    for (let i = 1; i <= 3; i++) await recordEvidence(B, body(B, i));
    for (let i = 1; i <= 2; i++) await recordEvidence(C, body(C, i));
    // The scheduled anchor: every head, outside the database (here, the emulators' anchors database). Its
    // first run also writes the ledger's migration entry (this ledger has no legacy segment).
    const anchored = await anchorEvidence();
    expect(anchored.anchor.heads[shardOfKey(A)]).toMatchObject({ seq: 8 });
    // Evidence keeps arriving after the anchor.
    await recordEvidence(A, body(A, 9));
    await dropHeadRecords();
    expect(await verifyEvidence()).toMatchObject({ ok: true, checked: 15, macs: "checked", anchors: { count: 1, appendRecords: 0 }, sinceAnchor: { chains: 1, entries: 1 } });
  });

  it("a truncation with the head rewound: consistent on its own, caught by the anchor (with the key or without)", async () => {
    const chain = await chainOf(A);
    for (const { docId, entry } of chain) if (entry.seq > 4) await audits().doc(docId).delete();
    await headRef(shardOfKey(A)).set({ seq: 4, hash: chain[3]!.entry.hash });
    // Without the anchors the cut is invisible: every remaining link, hash, MAC and head agrees.
    expect((await verifyEvidence({ anchors: { kind: "none" } })).ok).toBe(true);
    const r = await verifyEvidence();
    expect(problems(r)).toEqual([`TRUNCATED@${shardOfKey(A)}:8`]);
    expect(problems(await verifyEvidence({ keys: null }))).toEqual([`TRUNCATED@${shardOfKey(A)}:8`]);
    // The service appends on and the chain grows past the anchored seq again: the anchored entry is not the one it saw.
    for (let i = 10; i <= 14; i++) await recordEvidence(A, body(A, i));
    await dropHeadRecords();
    expect(problems(await verifyEvidence())).toEqual([`ANCHOR_MISMATCH@${shardOfKey(A)}:8`]);
  });

  it("an edit re-hashed forward, the head moved: every rewritten entry fails its MAC, and the anchor sees it without the key", async () => {
    await rehashForward(A, 3, (e) => ({ ...e, paths: ["sessions/somebody-else"] }));
    expect((await verifyEvidence({ keys: null, anchors: { kind: "none" } })).ok).toBe(true);
    const withKey = await verifyEvidence();
    const shard = shardOfKey(A);
    expect(problems(withKey).sort()).toEqual([3, 4, 5, 6, 7, 8, 9].map((s) => `BAD_MAC@${shard}:${s}`).concat([`ANCHOR_MISMATCH@${shard}:8`]).sort());
    // An auditor without the key: the anchored entry 8 no longer has the hash the anchor recorded.
    expect(problems(await verifyEvidence({ keys: null }))).toEqual([`ANCHOR_MISMATCH@${shard}:8`]);
  });

  it("the limit without the key: a re-hash of entries newer than the last anchor is seen by the MACs alone", async () => {
    await rehashForward(A, 9, (e) => ({ ...e, paths: ["sessions/somebody-else"] }));
    expect((await verifyEvidence({ keys: null })).ok).toBe(true);
    expect(problems(await verifyEvidence())).toEqual([`BAD_MAC@${shardOfKey(A)}:9`]);
  });

  it("a wiped ledger (every entry and head deleted) is reported, where an empty chain used to pass", async () => {
    for (const d of (await audits().get()).docs) await d.ref.delete();
    for (const s of [A, B, C, SEAL_SHARD_KEY]) await headRef(shardOfKey(s)).delete();
    expect((await verifyEvidence({ anchors: { kind: "none" } })).ok).toBe(true);
    const r = await verifyEvidence();
    expect(r.ok).toBe(false);
    expect(problems(r)).toEqual(expect.arrayContaining(["LEDGER_WIPED@-:0", `SEGMENT_MISSING@${shardOfKey(A)}:8`, `SEGMENT_MISSING@${shardOfKey(B)}:3`, `SEGMENT_MISSING@${shardOfKey(C)}:2`]));
  });

  it("a deleted chain (its entries and its head) is reported as a missing segment; the others still verify", async () => {
    for (const { docId } of await chainOf(B)) await audits().doc(docId).delete();
    await headRef(shardOfKey(B)).delete();
    expect((await verifyEvidence({ anchors: { kind: "none" } })).ok).toBe(true);
    expect(problems(await verifyEvidence())).toEqual([`SEGMENT_MISSING@${shardOfKey(B)}:3`]);
  });

  it("a forged anchor (no key) is refused and used for nothing; a verifier without the key has to take anchors as found", async () => {
    const [stored] = (await db("evidence-anchors").collection("ledgers").doc("(default)").collection("anchors").get()).docs;
    await stored!.ref.update({ [`anchor.heads.${shardOfKey(C)}`]: { seq: 40, hash: "e".repeat(64) } });
    expect(problems(await verifyEvidence())).toEqual(["BAD_ANCHOR@-:0"]);
    expect(problems(await verifyEvidence({ keys: null }))).toEqual([`TRUNCATED@${shardOfKey(C)}:40`]);
  });

  it("a writer appending while the verifier walks is followed to its new head, not reported as a truncation", async () => {
    const ledger = firestoreLedger();
    const live = {
      ...ledger,
      async *shardPages(pageSize: number): AsyncIterable<Item[]> {
        for await (const page of ledger.shardPages(pageSize)) yield page;
        // The walk passed the end of every chain; now writers append.
        await recordEvidence(A, body(A, 10), body(A, 11));
        await recordEvidence(C, body(C, 3));
      },
    };
    const r = await verifyLedger(live, { pageSize: 4 });
    expect(r).toMatchObject({ ok: true, checked: 18, findings: [] });
  });
});
