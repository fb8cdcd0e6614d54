/**
 * The window the periodic anchor leaves, closed: right after each append commits, the chain's new head goes to
 * the anchor store as a signed head record. A truncation of what was appended since the last anchor, or a chain
 * born after it and deleted, is then caught at once; and writing the record can never fail the append.
 */
import { FieldPath } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it } from "vitest";
import { anchorEvidence } from "../../../functions/src/evidence/anchor";
import { anchorCheckpoints, anchorFromLogLine, chainHash, HEAD_EVENT, type ChainedEvidence } from "../../../functions/src/evidence/rules";
import { verifierKeys } from "../../../functions/src/evidence/keys";
import { headRef, recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { verifyEvidence } from "../../../functions/src/evidence/verify";
import { localAnchors } from "../../../functions/src/platform/anchors";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { afterCommit } from "../../../functions/src/platform/transactions";
import { clearFirestore, db } from "../../helpers/emulator";
import { sortedFindings, subjectsApart, ttlEntry } from "./support";

const body = ttlEntry;

const [A, D] = subjectsApart("window", 2) as [string, string];
const audits = () => db().collection(COLLECTIONS.deletionAudits);
const problems = sortedFindings;

async function chainDocs(subject: string) {
  const shard = shardOfKey(subject);
  return (
    await audits()
      .where(FieldPath.documentId(), ">=", audits().doc(`${shard}-`))
      .where(FieldPath.documentId(), "<", audits().doc(`${shard}.`))
      .get()
  ).docs;
}

describe("per-append head records", () => {
  beforeEach(async () => {
    await clearFirestore();
    for (let i = 1; i <= 4; i++) await recordEvidence(A, body(A, i));
    await anchorEvidence();
  });

  it("each append's new head is in the anchor store, signed, by the time the append returns", async () => {
    const [entry] = await recordEvidence(A, body(A, 5));
    const records = (await localAnchors().where("event", "==", HEAD_EVENT).get()).docs.map((d) => anchorFromLogLine(d.data()));
    const mine = records.flatMap((r) => (r && "anchor" in r ? [r.anchor] : [])).filter((a) => a.heads[shardOfKey(A)]?.seq === 5);
    expect(mine).toHaveLength(1);
    expect(mine[0]!).toMatchObject({ scope: "append", databaseId: "(default)", heads: { [shardOfKey(A)]: { seq: 5, hash: entry!.hash } } });
    // Signed with the evidence key: a verifier with the key uses it, a forged one is refused.
    expect(anchorCheckpoints(mine, verifierKeys()).findings).toEqual([]);
    expect(await verifyEvidence()).toMatchObject({ ok: true, anchors: { count: 1 }, sinceAnchor: { chains: 0, entries: 0 } });
  });

  it("a truncation of what was appended since the last anchor is caught at once, with or without the key", async () => {
    for (let i = 5; i <= 7; i++) await recordEvidence(A, body(A, i));
    const docs = await chainDocs(A);
    for (const d of docs) if ((d.data() as ChainedEvidence).seq > 4) await d.ref.delete();
    await headRef(shardOfKey(A)).set({ seq: 4, hash: (docs[3]!.data() as ChainedEvidence).hash });
    expect((await verifyEvidence({ anchors: { kind: "none" } })).ok).toBe(true);
    expect(problems(await verifyEvidence())).toEqual([`TRUNCATED@${shardOfKey(A)}:7`]);
    expect(problems(await verifyEvidence({ keys: null }))).toEqual([`TRUNCATED@${shardOfKey(A)}:7`]);
  });

  it("a chain born after the last anchor and deleted with its head is a missing segment", async () => {
    for (let i = 1; i <= 2; i++) await recordEvidence(D, body(D, i));
    for (const d of await chainDocs(D)) await d.ref.delete();
    await headRef(shardOfKey(D)).delete();
    expect((await verifyEvidence({ anchors: { kind: "none" } })).ok).toBe(true);
    expect(problems(await verifyEvidence())).toEqual([`SEGMENT_MISSING@${shardOfKey(D)}:2`]);
  });

  it("an edit re-hashed (head moved) past the last anchor is seen without the key", async () => {
    await recordEvidence(A, body(A, 5));
    const [last] = (await chainDocs(A)).filter((d) => (d.data() as ChainedEvidence).seq === 5);
    const { seq, prevHash, hash: _old, mac, keyId, ...hashed } = last!.data() as ChainedEvidence;
    const edited = { ...hashed, paths: ["sessions/somebody-else"] };
    const hash = chainHash(prevHash, seq, edited);
    await last!.ref.set({ ...edited, seq, prevHash, hash, mac, keyId });
    await headRef(shardOfKey(A)).set({ seq, hash });
    // Consistent without anchors and the key; the head record saw the entry as it was.
    expect((await verifyEvidence({ keys: null, anchors: { kind: "none" } })).ok).toBe(true);
    expect(problems(await verifyEvidence({ keys: null }))).toEqual([`ANCHOR_MISMATCH@${shardOfKey(A)}:5`]);
  });
});

describe("the commit hook", () => {
  beforeEach(() => clearFirestore());

  it("runs after the commit of the attempt that committed, only then, and a failing job never fails the transaction", async () => {
    const ran: string[] = [];
    const errors: unknown[] = [];
    const ref = db().collection(COLLECTIONS.retentionJobs).doc("hook-test");
    let attempt = 0;
    const result = await db().runTransaction(async (tx) => {
      attempt++;
      await tx.get(ref);
      const hooked = afterCommit(
        tx,
        `job-${attempt}`,
        async () => {
          // The commit is visible when the job runs.
          ran.push(`${attempt}:${String((await ref.get()).get("n"))}`);
          throw new Error("the anchor store is down");
        },
        (err) => errors.push(err),
      );
      expect(hooked).toBe(true);
      tx.set(ref, { n: attempt });
      // The first attempt fails as a contended commit would: retried, and its job dropped.
      if (attempt === 1) throw Object.assign(new Error("contention"), { code: 10 });
      return "committed";
    });
    expect(result).toBe("committed");
    expect(attempt).toBe(2);
    expect(ran).toEqual(["2:2"]);
    expect(errors).toHaveLength(1);
    expect((await ref.get()).get("n")).toBe(2);
  });
});
