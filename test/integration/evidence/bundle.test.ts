/**
 * An exported bundle as an auditor receives it: verified offline, with the anchors taken from where they are
 * kept (here the emulators' anchors database stands in for the locked bucket), not from the exporter. The
 * bundle's cut is stated by whoever exported it, so it must not be a way around the anchors.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { anchorEvidence, SEAL_SHARD_KEY } from "../../../functions/src/evidence/anchor";
import { bundleLedger, exportEvidence, readBundle, type BundleManifest } from "../../../functions/src/evidence/bundle";
import { chainHash, type ChainedEvidence, type EvidenceBody } from "../../../functions/src/evidence/rules";
import { recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { verifyLedger } from "../../../functions/src/evidence/verify";
import { clearFirestore } from "../../helpers/emulator";
import { dropHeadRecords } from "./support";

const SUBJECT = "sessions/bundle-subject";
const body = (i: number): EvidenceBody => ({ action: "TTL_DELETE", actor: { type: "system", id: "ttlDeleted-sessions" }, decision: { reason: "SWEEPER" }, policyVersion: "v1", atMs: 1_800_000_000_000 + i, paths: [`${SUBJECT}/${i}`] });
const problems = (r: { findings: { problem: string; shard: string; seq: number }[] }) => r.findings.map((f) => `${f.problem}@${f.shard}:${f.seq}`);

/** The auditor's check: the bundle, the anchors from the bucket, no key. */
function audit(dir: string, manifest: BundleManifest) {
  return verifyLedger(bundleLedger(dir), { keys: null, anchors: { kind: "local" }, ledger: { projectId: manifest.projectId, databaseId: manifest.databaseId }, anchorsUntilMs: manifest.cutAtMs });
}

describe("an exported evidence bundle, verified offline", () => {
  let dir: string;
  const storedHeads = () => JSON.parse(readFileSync(join(dir, "heads.json"), "utf8")) as Record<string, unknown>;
  let anchoredAtMs: number;
  beforeEach(async () => {
    await clearFirestore();
    for (let i = 1; i <= 5; i++) await recordEvidence(SUBJECT, body(i));
    anchoredAtMs = (await anchorEvidence()).anchor.atMs;
    await recordEvidence(SUBJECT, body(6));
    dir = join(mkdtempSync(join(tmpdir(), "bundle-test-")), "b");
    await exportEvidence(dir, { anchors: { kind: "local" } });
  });

  it("an honest bundle verifies against the anchors, and holds exactly the entries up to its cut", async () => {
    const manifest = readBundle(dir);
    expect(manifest.cutAtMs).toBeGreaterThanOrEqual(anchoredAtMs);
    // The subject's chain, and the migration entry the first anchor wrote in a chain of its own.
    expect(manifest.chains.map((c) => ({ chain: c.chain, entries: c.entries, headSeq: c.head.seq }))).toEqual(
      [
        { chain: shardOfKey(SUBJECT), entries: 6, headSeq: 6 },
        { chain: shardOfKey(SEAL_SHARD_KEY), entries: 1, headSeq: 1 },
      ].sort((a, b) => (a.chain < b.chain ? -1 : 1)),
    );
    // Every append's head record is held too: the six appends and the migration entry's.
    expect(await audit(dir, manifest)).toMatchObject({ ok: true, checked: 7, macs: "unchecked", anchors: { count: 1, afterCut: 0, appendRecords: 7 } });
    expect(await verifyLedger(bundleLedger(dir), { keys: null, anchors: { kind: "path", path: join(dir, "anchors.jsonl") }, ledger: manifest, anchorsUntilMs: manifest.cutAtMs })).toMatchObject({
      ok: true,
      anchors: { count: 1, appendRecords: 7 },
    });
  });

  it("a bundle rewritten by its exporter, with its cut moved back before the anchor, still meets the anchor at the entries it holds", async () => {
    // The periodic anchor alone (the head records would name every entry).
    await dropHeadRecords();
    const shard = shardOfKey(SUBJECT);
    const file = join(dir, "chains", `${shard}.jsonl`);
    // Edit entry 2 and re-hash forward (no key: the old MACs stay), move the head, fix the manifest's checksums.
    const out: string[] = [];
    let prevHash: string | null = null;
    for (const line of readFileSync(file, "utf8").trim().split("\n")) {
      const { id, entry } = JSON.parse(line) as { id: string; entry: ChainedEvidence };
      const changed = entry.seq === 2 ? { ...entry, paths: ["sessions/somebody-else"] } : entry;
      const { seq, prevHash: stored, hash: _old, mac, keyId, ...hashed } = changed;
      const link: string = prevHash ?? stored;
      const hash: string = entry.seq < 2 ? entry.hash : chainHash(link, seq, hashed);
      out.push(JSON.stringify({ id, entry: { ...hashed, seq, prevHash: link, hash, mac, keyId } }));
      prevHash = hash;
    }
    writeFileSync(file, `${out.join("\n")}\n`);
    writeFileSync(join(dir, "heads.json"), JSON.stringify({ ...storedHeads(), [shard]: { seq: 6, hash: prevHash } }));
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as BundleManifest;
    const sha = (name: string) => createHash("sha256").update(readFileSync(join(dir, name))).digest("hex");
    manifest.files[`chains/${shard}.jsonl`] = sha(`chains/${shard}.jsonl`);
    manifest.files["heads.json"] = sha("heads.json");
    const honestCut = manifest.cutAtMs;
    // On its own, with the cut it states, the rewrite is consistent.
    expect((await verifyLedger(bundleLedger(dir), { keys: null, anchors: { kind: "none" } })).ok).toBe(true);
    expect(problems(await audit(dir, manifest))).toEqual([`ANCHOR_MISMATCH@${shard}:5`]);

    // The cut moved back before every anchor: the anchor is no longer held in full, but entry 5 is in the bundle.
    manifest.cutAtMs = anchoredAtMs - 1;
    writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
    const moved = await audit(dir, readBundle(dir));
    expect(problems(moved)).toEqual([`ANCHOR_MISMATCH@${shard}:5`]);
    expect(moved.anchors).toMatchObject({ count: 0, afterCut: 1 });
    expect(honestCut).toBeGreaterThan(manifest.cutAtMs);
  });

  it("a bundle cut short is TRUNCATED against an anchor made before its cut, and only reported as after-the-cut when the cut is moved back", async () => {
    await dropHeadRecords();
    const shard = shardOfKey(SUBJECT);
    const file = join(dir, "chains", `${shard}.jsonl`);
    const kept = readFileSync(file, "utf8").trim().split("\n").slice(0, 3);
    writeFileSync(file, `${kept.join("\n")}\n`);
    const last = (JSON.parse(kept[2]!) as { entry: ChainedEvidence }).entry;
    writeFileSync(join(dir, "heads.json"), JSON.stringify({ ...storedHeads(), [shard]: { seq: 3, hash: last.hash } }));
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as BundleManifest;
    const sha = (name: string) => createHash("sha256").update(readFileSync(join(dir, name))).digest("hex");
    manifest.files[`chains/${shard}.jsonl`] = sha(`chains/${shard}.jsonl`);
    manifest.files["heads.json"] = sha("heads.json");
    writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
    expect(problems(await audit(dir, readBundle(dir)))).toEqual([`TRUNCATED@${shard}:5`]);
    // With the cut moved before the anchor a prefix is all the bundle claims to be; the auditor sees the anchor
    // counted after the cut, and the cut's time, and holds it against when the export was asked for.
    manifest.cutAtMs = anchoredAtMs - 1;
    writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
    expect(await audit(dir, readBundle(dir))).toMatchObject({ ok: true, anchors: { count: 0, afterCut: 1 } });
  });
});
