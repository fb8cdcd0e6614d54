/**
 * An insider with database write, no evidence key and no access to the anchor store, trying to blind the
 * verifier or stop the anchors rather than hide one act: a malformed value (a NaN) in an entry, a head or an
 * anchor; a bogus head in the heads' range so the anchor job fails on every run; and then cutting what was
 * appended once the anchors had stopped. Each is a finding that names its document, and every other finding is
 * still reported.
 */
import { FieldPath } from "firebase-admin/firestore";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { anchorEvidence, ANCHOR_INCIDENT_ACTION } from "../../../functions/src/evidence/anchor";
import { evidenceDocId, type ChainedEvidence } from "../../../functions/src/evidence/rules";
import { headRef, recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { verifyEvidence } from "../../../functions/src/evidence/verify";
import { runCli } from "../../../functions/src/cli/run";
import { ANCHOR_DATABASE, localAnchors } from "../../../functions/src/platform/anchors";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { clearFirestore, db } from "../../helpers/emulator";
import { dropHeadRecords, sortedFindings, subjectsApart, ttlEntry } from "./support";

const body = ttlEntry;

/** Two subjects in two chains, apart from the anchor job's own chains. */
const [A, B] = subjectsApart("blind", 2) as [string, string];
const audits = () => db().collection(COLLECTIONS.deletionAudits);
const problems = sortedFindings;

/** Cuts a chain back to `keep` entries and rewinds its head: consistent on its own. */
async function truncate(subject: string, keep: number): Promise<void> {
  const shard = shardOfKey(subject);
  const snap = await audits()
    .where(FieldPath.documentId(), ">=", audits().doc(`${shard}-`))
    .where(FieldPath.documentId(), "<", audits().doc(`${shard}.`))
    .get();
  const chain = snap.docs.map((d) => d.data() as ChainedEvidence);
  for (const d of snap.docs) if ((d.data() as ChainedEvidence).seq > keep) await d.ref.delete();
  await headRef(shard).set({ seq: keep, hash: chain[keep - 1]!.hash });
}

describe("the verifier and the anchors cannot be blinded by a malformed value", () => {
  beforeEach(async () => {
    await clearFirestore();
    for (let i = 1; i <= 5; i++) await recordEvidence(A, body(A, i));
    for (let i = 1; i <= 3; i++) await recordEvidence(B, body(B, i));
    await anchorEvidence();
    expect((await verifyEvidence()).ok).toBe(true);
  });

  it("a NaN in one entry is MALFORMED, named by its document, and a truncation elsewhere is still reported", async () => {
    await audits().doc(evidenceDocId(shardOfKey(A), 2)).update({ atMs: Number.NaN });
    await truncate(B, 1);
    const r = await verifyEvidence();
    expect(problems(r)).toEqual([`MALFORMED@${shardOfKey(A)}:2`, `TRUNCATED@${shardOfKey(B)}:3`]);
    const malformed = r.findings.find((f) => f.problem === "MALFORMED")!;
    expect(malformed.docId).toBe(evidenceDocId(shardOfKey(A), 2));
    expect(malformed.detail).toContain("atMs is NaN");
    // Without the key the same: the walk goes on past the bad entry.
    expect(problems(await verifyEvidence({ keys: null }))).toEqual([`MALFORMED@${shardOfKey(A)}:2`, `TRUNCATED@${shardOfKey(B)}:3`]);
    // The CLI: exit 1 (findings), not 2 (a usage error), naming the document.
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      expect(await runCli(["verify-evidence"])).toBe(1);
      const printed = out.mock.calls.map((c) => String(c[0])).join("");
      expect(printed).toContain(evidenceDocId(shardOfKey(A), 2));
      expect(printed).toContain("TRUNCATED");
    } finally {
      out.mockRestore();
    }
  });

  it("wrong types and missing fields in entries, heads and anchors are MALFORMED too", async () => {
    await audits().doc(evidenceDocId(shardOfKey(A), 4)).update({ seq: "4" });
    await audits().doc(evidenceDocId(shardOfKey(B), 2)).update({ decision: null });
    await db().collection(COLLECTIONS.retentionJobs).doc("evidence-head-s2047").set({ seq: Number.NaN, hash: "x" });
    const [stored] = (await localAnchors().where("event", "==", "retention.evidence.anchor").get()).docs;
    await stored!.ref.update({ "anchor.atMs": Number.NaN });
    const r = await verifyEvidence();
    expect(problems(r)).toEqual(["MALFORMED@-:0", `MALFORMED@${shardOfKey(A)}:4`, `MALFORMED@${shardOfKey(B)}:2`, "MALFORMED@s2047:0"]);
    expect(r.findings.map((f) => f.docId)).toEqual(expect.arrayContaining([`${ANCHOR_DATABASE}/${stored!.id}`, "evidence-head-s2047", evidenceDocId(shardOfKey(A), 4)]));
  });

  it("a bogus head (seq: NaN) in the heads' range does not stop the anchor: every well-formed head is anchored, the rest is an incident, and a later cut is caught", async () => {
    await db().collection(COLLECTIONS.retentionJobs).doc("evidence-head-s2047").set({ seq: Number.NaN, hash: "f".repeat(64) });
    for (let i = 6; i <= 8; i++) await recordEvidence(A, body(A, i));
    const run = await anchorEvidence();
    expect(run.anchor.heads[shardOfKey(A)]).toMatchObject({ seq: 8 });
    expect(run.anchor.heads[shardOfKey(B)]).toMatchObject({ seq: 3 });
    expect(run.anchor.heads.s2047).toBeUndefined();
    expect(run.incidents).toEqual([expect.stringContaining("head evidence-head-s2047 is malformed (its seq is NaN")]);
    const incident = (await audits().where("action", "==", ANCHOR_INCIDENT_ACTION).get()).docs.map((d) => d.data() as ChainedEvidence);
    expect(incident).toHaveLength(1);
    expect(incident[0]!).toMatchObject({ paths: ["retentionJobs/evidence-head-s2047"], counts: { malformedHeads: 1 } });
    // The insider cuts what the anchor covered; even with every per-append record lost, the anchor names it.
    await dropHeadRecords();
    await truncate(A, 5);
    expect(problems(await verifyEvidence())).toEqual(["MALFORMED@s2047:0", `TRUNCATED@${shardOfKey(A)}:8`]);
  });
});

describe("stopped anchors are reported", () => {
  beforeEach(() => clearFirestore());

  it("ANCHOR_STALE when the newest anchor is older than twice its schedule, with how much is newer than it", async () => {
    for (let i = 1; i <= 3; i++) await recordEvidence(A, body(A, i));
    // No anchor at all, on a ledger with entries.
    expect(problems(await verifyEvidence({ staleAfterMs: 20 * 60_000 }))).toEqual(["ANCHOR_STALE@-:0"]);
    const now = Date.now();
    await anchorEvidence({ clock: () => now - 30 * 60_000 });
    for (let i = 4; i <= 6; i++) await recordEvidence(A, body(A, i));
    await recordEvidence(B, body(B, 1));
    await dropHeadRecords();
    const stale = await verifyEvidence({ staleAfterMs: 20 * 60_000, nowMs: now });
    expect(problems(stale)).toEqual(["ANCHOR_STALE@-:0"]);
    expect(stale.findings[0]!.detail).toMatch(/30 min old, over the 20 min allowed: the anchor job has stopped; 2 chain\(s\) and 4 entries are newer than their last anchor/);
    expect(stale.sinceAnchor).toEqual({ chains: 2, entries: 4 });
    expect((await verifyEvidence({ staleAfterMs: 40 * 60_000, nowMs: now })).ok).toBe(true);
    // The CLI takes the allowance (by default twice RETENTION_EVIDENCE_ANCHOR_SCHEDULE's interval) and fails.
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      expect(await runCli(["verify-evidence", "--anchor-max-age", "20"])).toBe(1);
      expect(out.mock.calls.map((c) => String(c[0])).join("")).toContain("ANCHOR_STALE");
    } finally {
      out.mockRestore();
    }
  });
});
