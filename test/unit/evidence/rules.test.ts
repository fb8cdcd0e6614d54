import { describe, expect, it } from "vitest";
import {
  anchorCheckpoints,
  anchorFromLogLine,
  beyondAnchors,
  chainEntry,
  chainHash,
  deletedWhileHeld,
  entryDocId,
  evidenceDocId,
  evidenceKey,
  GENESIS_HASH,
  keyRing,
  LEGACY_SEGMENT,
  makeAnchor,
  makeHeadRecord,
  malformedEntry,
  malformedHead,
  MAX_SHARDS,
  parseEvidenceDocId,
  scheduleIntervalMs,
  SEAL_ACTION,
  sealBody,
  sealCheckpoint,
  shardFor,
  shardLabel,
  subjectHash,
  verifyChain,
  type ChainedEvidence,
  type Checkpoint,
  type EvidenceBody,
} from "../../../functions/src/evidence/rules";

const KEY = evidenceKey("k".repeat(40));
const OTHER = evidenceKey("o".repeat(40));
const keys = keyRing([KEY.secret]);

const body = (i: number): EvidenceBody => ({
  action: "TTL_DELETE",
  actor: { type: "system", id: "ttl" },
  decision: { reason: "AUTHORIZED_BY_POLICY" },
  policyVersion: "v1",
  atMs: 1_000 + i,
  paths: [`sessions/s-${i}`],
});

type Item = { docId: string; entry: ChainedEvidence };

function build(n: number, shard = "s0007", key = KEY): Item[] {
  const out: Item[] = [];
  let prev: ChainedEvidence | null = null;
  for (let i = 0; i < n; i++) {
    prev = chainEntry(shard, prev, body(i), key);
    out.push({ docId: evidenceDocId(shard, prev.seq), entry: prev });
  }
  return out;
}

/** The first release's entries: no shard, no MAC, ids of 12 digits (the formula of the single chain). */
function buildLegacy(n: number): Item[] {
  const out: Item[] = [];
  let prev: { seq: number; hash: string } | null = null;
  for (let i = 0; i < n; i++) {
    const seq = (prev?.seq ?? 0) + 1;
    const prevHash = prev?.hash ?? GENESIS_HASH;
    const entry: ChainedEvidence = { ...body(i), seq, prevHash, hash: chainHash(prevHash, seq, body(i)) };
    out.push({ docId: String(seq).padStart(12, "0"), entry });
    prev = entry;
  }
  return out;
}

const headOf = (c: Item[]) => ({ seq: c[c.length - 1]!.entry.seq, hash: c[c.length - 1]!.entry.hash });
const problems = (r: { findings: { problem: string; seq: number }[] }) => r.findings.map((f) => `${f.problem}@${f.seq}`);

describe("evidence chains", () => {
  it("an untouched chain verifies, with and without the key", () => {
    const c = build(5);
    expect(verifyChain("s0007", c, headOf(c), { keys })).toMatchObject({ ok: true, checked: 5, findings: [] });
    expect(verifyChain("s0007", c, headOf(c), { keys: null })).toMatchObject({ ok: true, checked: 5 });
  });

  it("editing any field of any entry is detected at that entry", () => {
    for (let i = 0; i < 5; i++) {
      const c = build(5);
      const head = headOf(c);
      c[i]!.entry = { ...c[i]!.entry, counts: { deleted: 99 } };
      expect(problems(verifyChain("s0007", c, head, { keys }))).toEqual([`EDITED@${i + 1}`]);
    }
  });

  it("removing an entry in the middle is REMOVED; removing the last is seen through the head", () => {
    const c = build(5);
    const head = headOf(c);
    c.splice(2, 1);
    expect(problems(verifyChain("s0007", c, head, { keys }))).toEqual(["REMOVED@3"]);
    const d = build(5);
    const dHead = headOf(d);
    d.pop();
    expect(problems(verifyChain("s0007", d, dHead, { keys }))).toEqual(["REMOVED@5"]);
  });

  it("an edit re-hashed forward (and the head moved) passes the hashes and links, and fails the MACs", () => {
    const c = build(4);
    // The insider has database write but not the key: they keep the old MACs (or make up new ones).
    let prev = c[0]!.entry;
    for (let i = 1; i < 4; i++) {
      const forged = chainEntry("s0007", prev, i === 1 ? { ...body(1), counts: { deleted: 0 } } : body(i), OTHER);
      c[i] = { docId: c[i]!.docId, entry: { ...forged, mac: c[i]!.entry.mac!, keyId: KEY.id } };
      prev = c[i]!.entry;
    }
    const r = verifyChain("s0007", c, headOf(c), { keys });
    expect(problems(r)).toEqual(["BAD_MAC@2", "BAD_MAC@3", "BAD_MAC@4"]);
    // Without the key the rewrite is invisible here: only an anchor catches it (below).
    expect(verifyChain("s0007", c, headOf(c), { keys: null }).ok).toBe(true);
  });

  it("an entry signed with an unknown key, or with none, is reported", () => {
    const c = build(2, "s0007", OTHER);
    expect(problems(verifyChain("s0007", c, headOf(c), { keys }))).toEqual(["UNKNOWN_KEY@1", "UNKNOWN_KEY@2"]);
    const { mac, keyId, ...unsigned } = build(1)[0]!.entry;
    void mac;
    void keyId;
    expect(problems(verifyChain("s0007", [{ docId: evidenceDocId("s0007", 1), entry: unsigned }], { seq: 1, hash: unsigned.hash }, { keys: null }))).toEqual(["UNSIGNED@1"]);
  });

  it("an entry moved to another chain, or under a wrong id, is INSERTED", () => {
    const c = build(2);
    expect(problems(verifyChain("s0008", c.map((x) => ({ docId: evidenceDocId("s0008", x.entry.seq), entry: x.entry })), headOf(c), { keys }))).toEqual(["INSERTED@1", "INSERTED@2"]);
    const d = build(3);
    d.splice(1, 0, { docId: "s0007-000000000099", entry: d[1]!.entry });
    expect(verifyChain("s0007", d, headOf(d), { keys }).findings.map((f) => f.problem)).toContain("INSERTED");
  });

  it("the legacy segment verifies by its own formula, with no MACs, and a MAC on it is not required", () => {
    const c = buildLegacy(4);
    expect(verifyChain(LEGACY_SEGMENT, c, headOf(c), { keys })).toMatchObject({ ok: true, checked: 4 });
    c[1]!.entry = { ...c[1]!.entry, atMs: 42 };
    expect(problems(verifyChain(LEGACY_SEGMENT, c, headOf(c), { keys }))).toEqual(["EDITED@2"]);
  });

  it("checkpoints: a truncation with the head rewound is TRUNCATED, a rewrite ANCHOR_MISMATCH, a deleted chain SEGMENT_MISSING", () => {
    const c = build(6);
    const anchored = new Map<number, Checkpoint>([[5, { seq: 5, hash: c[4]!.entry.hash, source: "anchor T" }]]);
    // Cut to 3 entries and the head rewound to the third: consistent on its own.
    const cut = c.slice(0, 3);
    expect(verifyChain("s0007", cut, headOf(cut), { keys }).ok).toBe(true);
    expect(problems(verifyChain("s0007", cut, headOf(cut), { keys, checkpoints: anchored }))).toEqual(["TRUNCATED@5"]);
    // Rewritten from entry 2 on, re-hashed and re-signed with a key it should not have: the anchor still sees it.
    const rewritten: Item[] = [c[0]!];
    let prev = c[0]!.entry;
    for (let i = 1; i < 6; i++) {
      prev = chainEntry("s0007", prev, { ...body(i), atMs: 7 }, KEY);
      rewritten.push({ docId: c[i]!.docId, entry: prev });
    }
    expect(problems(verifyChain("s0007", rewritten, headOf(rewritten), { keys, checkpoints: anchored }))).toEqual(["ANCHOR_MISMATCH@5"]);
    expect(problems(verifyChain("s0007", [], null, { keys, checkpoints: anchored }))).toEqual(["SEGMENT_MISSING@5"]);
  });
});

describe("the legacy segment's seal", () => {
  it("a seal entry names the legacy head it seals, and only a seal of the legacy segment is a checkpoint", () => {
    const old = buildLegacy(3);
    const head = headOf(old);
    const seal = chainEntry("s0100", null, sealBody(head, "v1", 1_800_000_000_000), KEY);
    expect(seal).toMatchObject({ action: SEAL_ACTION, shard: "s0100", detail: { segment: LEGACY_SEGMENT, seq: 3, hash: head.hash } });
    expect(sealCheckpoint(seal)).toEqual({ seq: 3, hash: head.hash, source: "seal s0100-000000000001" });
    expect(sealCheckpoint(build(1)[0]!.entry)).toBeNull();
    expect(sealCheckpoint({ ...seal, detail: { ...seal.detail, segment: "s0001" } })).toBeNull();
  });

  it("the sealed head holds the old segment: a cut, a rewrite or a deletion of it fails against the seal", () => {
    const old = buildLegacy(5);
    const seal = sealCheckpoint(chainEntry("s0100", null, sealBody(headOf(old), "v1", 1), KEY))!;
    const points = new Map([[seal.seq, seal]]);
    expect(verifyChain(LEGACY_SEGMENT, old, headOf(old), { keys, checkpoints: points }).ok).toBe(true);
    const cut = old.slice(0, 3);
    expect(problems(verifyChain(LEGACY_SEGMENT, cut, headOf(cut), { keys, checkpoints: points }))).toEqual(["TRUNCATED@5"]);
    expect(problems(verifyChain(LEGACY_SEGMENT, [], null, { keys, checkpoints: points }))).toEqual(["SEGMENT_MISSING@5"]);
    // Re-hashed forward from entry 2 by its own (unkeyed) formula: links and head agree, the seal does not.
    const rewritten = buildLegacy(5);
    let prev = rewritten[0]!.entry;
    for (let i = 1; i < 5; i++) {
      const b = { ...body(i), atMs: 99 };
      const entry: ChainedEvidence = { ...b, seq: i + 1, prevHash: prev.hash, hash: chainHash(prev.hash, i + 1, b) };
      rewritten[i] = { docId: rewritten[i]!.docId, entry };
      prev = entry;
    }
    expect(problems(verifyChain(LEGACY_SEGMENT, rewritten, headOf(rewritten), { keys, checkpoints: points }))).toEqual(["ANCHOR_MISMATCH@5"]);
  });

  it("nothing is ever appended to the legacy segment", () => {
    expect(() => chainEntry(LEGACY_SEGMENT, null, body(0), KEY)).toThrow(/legacy segment is never appended to/);
  });
});

describe("shards, ids and keys", () => {
  it("a key always lands in the same chain, and keys spread over the chains", () => {
    expect(shardFor("requests/r-1", 512)).toBe(shardFor("requests/r-1", 512));
    const used = new Set(Array.from({ length: 2000 }, (_, i) => shardFor(`sessions/s-${i}`, 64)));
    expect(used.size).toBe(64);
    expect(shardFor("anything", 1)).toBe(shardLabel(0));
    expect(() => shardFor("x", 0)).toThrow();
    expect(() => shardFor("x", MAX_SHARDS + 1)).toThrow();
  });

  it("512 chains share 10,000 subjects evenly enough that no chain carries more than about twice its share", () => {
    const load = new Map<string, number>();
    for (let i = 0; i < 10_000; i++) {
      const s = shardFor(`sessions/s-${i}`, 512);
      load.set(s, (load.get(s) ?? 0) + 1);
    }
    expect(load.size).toBeGreaterThan(500);
    expect(Math.max(...load.values())).toBeLessThan((10_000 / 512) * 2.2);
  });

  it("document ids sort by seq within a chain, keep chains apart, and parse back", () => {
    expect(evidenceDocId("s0042", 17)).toBe("s0042-000000000017");
    expect(evidenceDocId(LEGACY_SEGMENT, 17)).toBe("000000000017");
    expect(parseEvidenceDocId("s0042-000000000017")).toEqual({ shard: "s0042", seq: 17 });
    expect(parseEvidenceDocId("000000000017")).toEqual({ shard: LEGACY_SEGMENT, seq: 17 });
    expect(parseEvidenceDocId("s0042-17")).toBeNull();
    expect(evidenceDocId("s0001", 10) < evidenceDocId("s0001", 9)).toBe(false);
    expect(entryDocId(build(1, "s0003")[0]!.entry)).toBe("s0003-000000000001");
  });

  it("a subject's keyed hash is stable for a key, differs between keys, and is not the entry MAC's domain", () => {
    expect(subjectHash(KEY.secret, "u-1001")).toBe(subjectHash(KEY.secret, "u-1001"));
    expect(subjectHash(KEY.secret, "u-1001")).not.toBe(subjectHash(OTHER.secret, "u-1001"));
    expect(subjectHash(KEY.secret, "u-1001")).not.toBe(subjectHash(KEY.secret, "u-1002"));
    expect(subjectHash(KEY.secret, "u-1001")).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("anchors", () => {
  const anchor = (atMs: number, heads: Record<string, { seq: number; hash: string }>, key = KEY) => makeAnchor({ projectId: "p", databaseId: "(default)", atMs, heads }, key);

  it("are found in every shape they travel in: a logSync line, a sink's LogEntry, the bare anchor", () => {
    const a = anchor(1, { s0001: { seq: 1, hash: "a".repeat(64) } });
    expect(anchorFromLogLine({ event: "retention.evidence.anchor", anchor: a, severity: "NOTICE" })).toEqual({ anchor: a });
    expect(anchorFromLogLine({ jsonPayload: { event: "retention.evidence.anchor", anchor: a }, logName: "projects/p/logs/retention-evidence-anchors" })).toEqual({ anchor: a });
    expect(anchorFromLogLine(a)).toEqual({ anchor: a });
    expect(anchorFromLogLine({ metric: "retention.candidates", value: 3 })).toBeNull();
  });

  it("a line that claims to be an anchor and is not one is malformed, never thrown and never used", () => {
    const a = anchor(1, { s0001: { seq: 1, hash: "a".repeat(64) } });
    const bad = (v: unknown) => anchorFromLogLine(v) as { malformed: string };
    expect(bad({ event: "retention.evidence.anchor", anchor: { ...a, atMs: Number.NaN } }).malformed).toBe("atMs is NaN");
    expect(bad({ event: "retention.evidence.anchor", anchor: { ...a, heads: { s0001: { seq: Number.NaN, hash: "a".repeat(64) } } } }).malformed).toMatch(/^head s0001: its seq is NaN/);
    expect(bad({ event: "retention.evidence.head", anchor: { ...a, mac: 7 } }).malformed).toBe("mac is 7");
    expect(bad({ jsonPayload: { event: "retention.evidence.anchor" } }).malformed).toMatch(/without an anchor/);
    expect(bad({ ...a, heads: { s0001: { seq: 1 } } }).malformed).toMatch(/hash is missing/);
  });

  it("a head record is an anchor of one chain, scoped to the append, under the same MAC", () => {
    const r = makeHeadRecord({ projectId: "p", databaseId: "(default)", atMs: 5, shard: "s0001", head: { seq: 3, hash: "c".repeat(64) } }, KEY);
    expect(r).toMatchObject({ scope: "append", heads: { s0001: { seq: 3, hash: "c".repeat(64) } } });
    const held = anchorCheckpoints([r, anchor(1, { s0001: { seq: 1, hash: "a".repeat(64) } })], keys);
    expect(held).toMatchObject({ count: 1, appendRecords: 1, latestAtMs: 1, findings: [] });
    expect(anchorCheckpoints([{ ...r, scope: undefined }], keys).findings.map((f) => f.problem)).toEqual(["BAD_ANCHOR"]);
    expect(beyondAnchors(new Map([["s0001", { seq: 5, hash: "x" }], ["s0002", { seq: 2, hash: "y" }]]), held.points)).toEqual({ chains: 2, entries: 4 });
  });

  it("anchors after a bundle's cut hold only the entries the bundle reaches", () => {
    const c = build(6);
    const r = anchorCheckpoints([anchor(10, { s0007: { seq: 2, hash: c[1]!.entry.hash } }), anchor(30, { s0007: { seq: 6, hash: c[5]!.entry.hash } })], keys, 20);
    expect(r).toMatchObject({ count: 1, afterCut: 1, latestAtMs: 10 });
    const points = r.points.get("s0007")!;
    expect(points.get(6)).toMatchObject({ reachOnly: true });
    // The bundle ends at 4, before what the later anchor names: not a truncation.
    const cut = c.slice(0, 4);
    expect(verifyChain("s0007", cut, headOf(cut), { keys, checkpoints: points }).ok).toBe(true);
    // A bundle that holds entry 6 with another hash meets the later anchor there.
    const rewritten = [...c.slice(0, 5), { docId: c[5]!.docId, entry: chainEntry("s0007", c[4]!.entry, { ...body(5), atMs: 1 }, KEY) }];
    expect(problems(verifyChain("s0007", rewritten, headOf(rewritten), { keys, checkpoints: points }))).toEqual(["ANCHOR_MISMATCH@6"]);
    // An anchor at or before the cut is held in full, even when a later one names the same entry.
    const both = anchorCheckpoints([anchor(30, { s0007: { seq: 6, hash: c[5]!.entry.hash } }), anchor(10, { s0007: { seq: 6, hash: c[5]!.entry.hash } })], keys, 20);
    expect(both.points.get("s0007")!.get(6)!.reachOnly).toBeUndefined();
    expect(problems(verifyChain("s0007", cut, headOf(cut), { keys, checkpoints: both.points.get("s0007")! }))).toEqual(["TRUNCATED@6"]);
  });

  it("an anchor of every chain the ledger may have fits in one Cloud Logging entry (256 KB)", () => {
    const heads = Object.fromEntries(Array.from({ length: MAX_SHARDS }, (_, i) => [shardLabel(i), { seq: 999_999_999_999, hash: "a".repeat(64) }]));
    const a = anchor(1_800_000_000_000, { ...heads, legacy: { seq: 999_999_999_999, hash: "b".repeat(64) } });
    // The payload, plus room for the entry's own fields (log name, resource, labels, timestamps).
    expect(Buffer.byteLength(JSON.stringify({ event: "retention.evidence.anchor", anchor: a })) + 4_096).toBeLessThan(256 * 1024);
  });

  it("an anchor's MAC covers its heads, time, project and database", () => {
    const a = anchor(1, { s0001: { seq: 1, hash: "a".repeat(64) } });
    expect(anchorCheckpoints([a], keys).findings).toEqual([]);
    for (const changed of [{ ...a, atMs: 2 }, { ...a, databaseId: "other" }, { ...a, projectId: "q" }, { ...a, heads: { s0001: { seq: 2, hash: "a".repeat(64) } } }]) {
      expect(anchorCheckpoints([changed], keys)).toMatchObject({ count: 0, findings: [{ problem: "BAD_ANCHOR" }] });
    }
  });

  it("yield every anchored point once; a forged anchor is refused with the key, and disagreeing anchors are reported", () => {
    const h = (c: string) => c.repeat(64);
    const r = anchorCheckpoints([anchor(1, { s0001: { seq: 1, hash: h("a") } }), anchor(2, { s0001: { seq: 3, hash: h("b") }, legacy: { seq: 9, hash: h("c") } })], keys);
    expect(r.count).toBe(2);
    expect([...r.points.get("s0001")!.keys()]).toEqual([1, 3]);
    expect(r.points.get("legacy")!.get(9)).toMatchObject({ hash: h("c") });
    const forged = { ...anchor(3, { s0001: { seq: 3, hash: h("d") } }), heads: { s0001: { seq: 1, hash: h("e") } } };
    expect(anchorCheckpoints([forged], keys).findings.map((f) => f.problem)).toEqual(["BAD_ANCHOR"]);
    expect(anchorCheckpoints([forged], null).count).toBe(1);
    const disagree = anchorCheckpoints([anchor(1, { s0001: { seq: 3, hash: h("a") } }), anchor(2, { s0001: { seq: 3, hash: h("b") } })], keys);
    expect(disagree.findings.map((f) => `${f.problem}@${f.shard}:${f.seq}`)).toEqual(["BAD_ANCHOR@s0001:3"]);
  });
});

describe("malformed values", () => {
  it("an entry with a wrong type, a NaN or a missing field is named, whatever the field", () => {
    const entry: ChainedEvidence = build(1)[0]!.entry;
    expect(malformedEntry(entry)).toBeNull();
    expect(malformedEntry({ ...entry, atMs: Number.NaN })).toBe("atMs is NaN, not a time");
    expect(malformedEntry({ ...entry, seq: "1" })).toBe('seq is "1", not a positive integer');
    expect(malformedEntry({ ...entry, hash: undefined })).toBe("hash is missing, not a SHA-256");
    expect(malformedEntry({ ...entry, decision: null })).toBe("decision has no reason");
    expect(malformedEntry({ ...entry, counts: { deleted: Number.POSITIVE_INFINITY } })).toBe("counts.deleted is not a finite number");
    expect(malformedEntry({ ...entry, paths: ["a", Number.NaN] })).toBe("paths[1] is not a finite number");
    expect(malformedEntry(null)).toBe("the document is not an object");
    expect(malformedHead({ seq: 1, hash: "a".repeat(64) })).toBeNull();
    expect(malformedHead({ seq: Number.NaN, hash: "a".repeat(64) })).toBe("its seq is NaN, not a positive integer");
  });
});

describe("the anchor schedule's interval", () => {
  it("reads the cron and App Engine forms a schedule takes, and no other", () => {
    expect(scheduleIntervalMs("*/10 * * * *")).toBe(600_000);
    expect(scheduleIntervalMs("* * * * *")).toBe(60_000);
    expect(scheduleIntervalMs("5 * * * *")).toBe(3_600_000);
    expect(scheduleIntervalMs("0 */2 * * *")).toBe(7_200_000);
    expect(scheduleIntervalMs("every 5 minutes")).toBe(300_000);
    expect(scheduleIntervalMs("every 1 hours")).toBe(3_600_000);
    expect(scheduleIntervalMs("0 9 * * 1")).toBeNull();
    expect(scheduleIntervalMs("*/10 * * * 1-5")).toBeNull();
  });
});

describe("the hold fence as the ledger's order across chains", () => {
  it("a deletion that read the generation before a placement came before it; one that read it during the hold violates it", () => {
    expect(deletedWhileHeld(3, 4, null)).toBe(false);
    expect(deletedWhileHeld(4, 4, null)).toBe(true);
    expect(deletedWhileHeld(9, 4, null)).toBe(true);
    expect(deletedWhileHeld(5, 4, 6)).toBe(true);
    expect(deletedWhileHeld(6, 4, 6)).toBe(false);
  });
});
