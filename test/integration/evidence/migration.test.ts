/**
 * Moving an existing deployment onto the ledger: its database holds the first release's single chain
 * (`deletionAudits/{seq:012d}`, head `retentionJobs/evidence-chain-head`, unkeyed). Nothing is copied or
 * rewritten: the old chain stays as the ledger's first segment, new evidence goes to the sharded chains, and
 * the first anchor after the old writers are gone seals the old chain's head into the keyed ledger. From then
 * on the old segment cannot be rewritten, cut, extended or deleted unnoticed, though its entries carry no MAC.
 */
import { createHash } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import { anchorEvidence, LEGACY_QUIET_MS, MIGRATION_DOC, SEAL_SHARD_KEY } from "../../../functions/src/evidence/anchor";
import { explainEvidence } from "../../../functions/src/evidence/explain";
import { entryDocId, GENESIS_HASH, LEGACY_SEGMENT, MIGRATION_ACTION, SEAL_ACTION, type ChainedEvidence, type EvidenceBody } from "../../../functions/src/evidence/rules";
import { headRef, recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { verifyEvidence } from "../../../functions/src/evidence/verify";
import { canonicalJson } from "../../../functions/src/kernel/canonical";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { clearFirestore, db } from "../../helpers/emulator";

const audits = () => db().collection(COLLECTIONS.deletionAudits);
const legacyId = (seq: number) => String(seq).padStart(12, "0");

/** What the first release appended: its own formula, written out here rather than taken from the ledger's code. */
function firstReleaseEntry(prev: { seq: number; hash: string } | null, body: EvidenceBody): ChainedEvidence {
  const seq = (prev?.seq ?? 0) + 1;
  const prevHash = prev?.hash ?? GENESIS_HASH;
  const hash = createHash("sha256").update(`${prevHash}\n${canonicalJson({ ...body, seq })}`, "utf8").digest("hex");
  return { ...body, seq, prevHash, hash };
}

const OLD_BODIES: EvidenceBody[] = [
  { action: "DELETION_REQUESTED", actor: { type: "user", id: "u-1001" }, decision: { reason: "SUBJECT_REQUEST", source: "user" }, policyVersion: "v1", atMs: 1_700_000_000_000, requestId: "r-1" },
  { action: "HOLD_PLACED", actor: { type: "staff", id: "c-2001" }, decision: { reason: "LITIGATION", targetType: "document" }, policyVersion: "v1", atMs: 1_700_000_001_000, holdId: "h-1", paths: ["tenants/t-acme/orders/o-1002"], detail: { fenceGeneration: 1 } },
  { action: "TTL_DELETE", actor: { type: "system", id: "ttlDeleted-sessions" }, decision: { reason: "SWEEPER", retentionClass: "session-30d" }, policyVersion: "v1", atMs: 1_700_000_002_000, eventId: "e-1", paths: ["sessions/s-1"], counts: { childrenRemoved: 1, childrenKept: 0 } },
  { action: "PURGE_BATCH", actor: { type: "system", id: "nightlyPurge" }, decision: { reason: "AUTHORIZED_BY_POLICY" }, policyVersion: "v1", atMs: 1_700_000_003_000, requestId: "r-1", paths: ["userDirectory/u-1001"], counts: { deleted: 1 }, manifestHash: "m".repeat(64), detail: { fenceGeneration: 1 } },
  { action: "JOB_RUN", actor: { type: "staff", id: "r-3001" }, decision: { reason: "OPERATOR_REQUEST", job: "nightlyPurge" }, policyVersion: "v1", atMs: 1_700_000_004_000, correlationId: "c-1" },
  { action: "HOLD_RELEASED", actor: { type: "staff", id: "c-2002" }, decision: { reason: "LITIGATION", targetType: "document" }, policyVersion: "v1", atMs: 1_700_000_005_000, holdId: "h-1", paths: ["tenants/t-acme/orders/o-1002"], detail: { fenceGeneration: 2 } },
];

/** A database as the first release left it. */
async function writeFirstReleaseChain(bodies: readonly EvidenceBody[]): Promise<ChainedEvidence[]> {
  const out: ChainedEvidence[] = [];
  let prev: ChainedEvidence | null = null;
  for (const b of bodies) {
    prev = firstReleaseEntry(prev, b);
    await audits().doc(legacyId(prev.seq)).create(prev);
    await headRef(LEGACY_SEGMENT).set({ seq: prev.seq, hash: prev.hash });
    out.push(prev);
  }
  return out;
}

const body = (i: number): EvidenceBody => ({ action: "TTL_DELETE", actor: { type: "system", id: "ttlDeleted-events" }, decision: { reason: "SWEEPER" }, policyVersion: "v1", atMs: 1_800_000_000_000 + i, paths: [`events/e-${i}`] });
const problems = (r: { findings: { problem: string; shard: string; seq: number }[] }) => r.findings.map((f) => `${f.problem}@${f.shard}:${f.seq}`);

describe("moving an existing deployment onto the ledger", () => {
  let old: ChainedEvidence[];
  beforeEach(async () => {
    await clearFirestore();
    old = await writeFirstReleaseChain(OLD_BODIES);
  });

  it("the old chain verifies as the ledger's first segment once the first anchor's migration entry names it, new appends go to the chains, the anchor seals it once, and nothing is lost", async () => {
    // Until the keyed ledger's first anchor names it, the old chain does not count: it could have been written by hand.
    const before = await verifyEvidence();
    expect(problems(before)).toEqual(["UNATTESTED_SEGMENT@legacy:0"]);
    expect(before).toMatchObject({ checked: 6, legacy: { entries: 6, sealedSeq: null } });
    for (let i = 0; i < 5; i++) await recordEvidence(`events/e-${i}`, body(i));

    const first = await anchorEvidence({ legacyQuietMs: 0 });
    const migration = (await audits().where("action", "==", MIGRATION_ACTION).get()).docs.map((d) => d.data() as ChainedEvidence);
    expect(migration).toHaveLength(1);
    expect(migration[0]!).toMatchObject({ shard: shardOfKey(SEAL_SHARD_KEY), detail: { segment: "legacy", legacySeq: 6, legacyHash: old[5]!.hash, legacyCount: 6 } });
    expect(first.sealed).toEqual({ seq: 6, hash: old[5]!.hash });
    expect(first.anchor.heads[LEGACY_SEGMENT]).toEqual({ seq: 6, hash: old[5]!.hash });
    const seal = (await audits().where("action", "==", SEAL_ACTION).get()).docs.map((d) => d.data() as ChainedEvidence);
    expect(seal).toHaveLength(1);
    expect(seal[0]!).toMatchObject({ shard: shardOfKey(SEAL_SHARD_KEY), detail: { segment: "legacy", seq: 6, hash: old[5]!.hash } });
    expect((await headRef(LEGACY_SEGMENT).get()).data()).toMatchObject({ seq: 6, sealedSeq: 6, sealedBy: entryDocId(seal[0]!) });

    // Every old entry is still there, byte for byte, and the whole ledger verifies with the seal and the anchor.
    for (const e of old) expect((await audits().doc(legacyId(e.seq)).get()).data()).toEqual(e);
    expect(await verifyEvidence()).toMatchObject({ ok: true, checked: 13, legacy: { entries: 6, sealedSeq: 6 }, anchors: { count: 1 } });
    // Sealed once, migrated once: later anchors leave both.
    expect((await anchorEvidence({ legacyQuietMs: 0 })).sealed).toBeNull();
    expect((await audits().where("action", "==", SEAL_ACTION).get()).size).toBe(1);
    expect((await audits().where("action", "==", MIGRATION_ACTION).get()).size).toBe(1);
  });

  it("the seal waits while the old chain may still move (the first release's instances finishing during a deploy), and seals what they appended", async () => {
    expect(LEGACY_QUIET_MS).toBeGreaterThan(540_000);
    expect((await anchorEvidence()).sealed).toBeNull();
    expect((await headRef(LEGACY_SEGMENT).get()).get("sealedSeq")).toBeUndefined();
    // An old instance appends after the migration entry named seq 6; the seal, once quiet, reaches it.
    const late = firstReleaseEntry(old[5]!, OLD_BODIES[4]!);
    await audits().doc(legacyId(7)).create(late);
    await headRef(LEGACY_SEGMENT).set({ seq: 7, hash: late.hash });
    expect((await verifyEvidence()).ok).toBe(true);
    expect((await anchorEvidence({ legacyQuietMs: 0 })).sealed).toEqual({ seq: 7, hash: late.hash });
    expect(await verifyEvidence()).toMatchObject({ ok: true, legacy: { entries: 7, sealedSeq: 7 } });
  });

  describe("after the seal, the old segment is held to it", () => {
    beforeEach(async () => {
      await recordEvidence("events/e-1", body(1));
      await anchorEvidence({ legacyQuietMs: 0 });
      expect((await verifyEvidence()).ok).toBe(true);
    });

    it("an edit re-hashed forward through the old segment (it has no MACs) is caught by the seal", async () => {
      let prev = old[1]!;
      for (let i = 2; i < old.length; i++) {
        const forged = firstReleaseEntry(prev, i === 2 ? { ...OLD_BODIES[2]!, paths: ["sessions/somebody-else"] } : OLD_BODIES[i]!);
        await audits().doc(legacyId(forged.seq)).set(forged);
        prev = forged;
      }
      await headRef(LEGACY_SEGMENT).set({ seq: prev.seq, hash: prev.hash }, { merge: true });
      expect(problems(await verifyEvidence({ anchors: { kind: "none" } }))).toEqual(["ANCHOR_MISMATCH@legacy:6"]);
      expect(problems(await verifyEvidence({ keys: null }))).toEqual(["ANCHOR_MISMATCH@legacy:6"]);
    });

    it("a truncation with the head rewound is TRUNCATED; an entry appended after the seal is reported", async () => {
      for (const e of old.slice(4)) await audits().doc(legacyId(e.seq)).delete();
      await headRef(LEGACY_SEGMENT).set({ seq: 4, hash: old[3]!.hash }, { merge: true });
      expect(problems(await verifyEvidence({ anchors: { kind: "none" } }))).toEqual(["TRUNCATED@legacy:6"]);
      for (const e of old.slice(4)) await audits().doc(legacyId(e.seq)).set(e);
      const appended = firstReleaseEntry(old[5]!, { ...OLD_BODIES[3]!, paths: ["tenants/t-acme/orders/o-1002"] });
      await audits().doc(legacyId(7)).set(appended);
      await headRef(LEGACY_SEGMENT).set({ seq: 7, hash: appended.hash }, { merge: true });
      expect(problems(await verifyEvidence())).toEqual(["INSERTED@legacy:7"]);
    });

    it("a deleted old segment is a missing segment", async () => {
      for (const e of old) await audits().doc(legacyId(e.seq)).delete();
      await headRef(LEGACY_SEGMENT).delete();
      expect(problems(await verifyEvidence({ anchors: { kind: "none" } }))).toEqual(["SEGMENT_MISSING@legacy:6"]);
      expect(problems(await verifyEvidence())).toEqual(["SEGMENT_MISSING@legacy:6"]);
    });
  });
});

describe("a first-release segment forged into a ledger that never had one", () => {
  const HOLD = "tenants/t-acme/orders/o-1002";
  /** Two hand-made entries in the first release's formula, and their head: a hold "released" long ago. */
  async function forgeLegacySegment(): Promise<void> {
    await writeFirstReleaseChain([OLD_BODIES[1]!, OLD_BODIES[5]!]);
  }

  beforeEach(async () => {
    await clearFirestore();
    for (let i = 0; i < 3; i++) await recordEvidence(`events/e-${i}`, body(i));
    // The keyed ledger's first anchor: its migration entry says there is no legacy segment.
    await anchorEvidence({ legacyQuietMs: 0 });
    const migration = (await audits().where("action", "==", MIGRATION_ACTION).get()).docs.map((d) => d.data() as ChainedEvidence);
    expect(migration.map((m) => m.detail)).toEqual([{ segment: "legacy", legacySeq: 0, legacyHash: null, legacyCount: 0 }]);
    expect((await verifyEvidence()).ok).toBe(true);
  });

  it("is reported, and explain does not show its HOLD_RELEASED as verified", async () => {
    await forgeLegacySegment();
    const r = await verifyEvidence();
    expect(r.ok).toBe(false);
    expect(problems(r)).toEqual(["UNATTESTED_SEGMENT@legacy:0"]);
    expect(problems(await verifyEvidence({ keys: null }))).toEqual(["UNATTESTED_SEGMENT@legacy:0"]);
    const explained = await explainEvidence({ kind: "path", value: HOLD });
    const released = explained.entries.find((e) => e.action === "HOLD_RELEASED")!;
    expect(released).toMatchObject({ chain: LEGACY_SEGMENT, verified: false });
    expect(explained.verification.problems).toEqual(expect.arrayContaining([expect.objectContaining({ problem: "UNATTESTED_SEGMENT", id: legacyId(2) })]));
  });

  it("is never anchored or sealed, and deleting the migration marker does not get it a migration entry of its own", async () => {
    await forgeLegacySegment();
    await db().collection(COLLECTIONS.retentionJobs).doc(MIGRATION_DOC).delete();
    const next = await anchorEvidence({ legacyQuietMs: 0 });
    expect(next.sealed).toBeNull();
    expect(next.anchor.heads[LEGACY_SEGMENT]).toBeUndefined();
    expect(next.incidents).toEqual([expect.stringContaining("legacy head (seq 2) is not named by the ledger's migration entry")]);
    expect((await audits().where("action", "==", MIGRATION_ACTION).get()).size).toBe(1);
    expect((await audits().where("action", "==", SEAL_ACTION).get()).size).toBe(0);
    expect(problems(await verifyEvidence())).toEqual(["UNATTESTED_SEGMENT@legacy:0"]);
  });
});
