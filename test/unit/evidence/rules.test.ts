import { describe, expect, it } from "vitest";
import { chainEntry, evidenceDocId, verifyChain, type ChainedEvidence, type EvidenceBody } from "../../../functions/src/evidence/rules";

const body = (i: number): EvidenceBody => ({
  action: "TTL_DELETE",
  actor: { type: "system", id: "ttl" },
  decision: { reason: "AUTHORIZED_BY_POLICY" },
  policyVersion: "v1",
  atMs: 1_000 + i,
  paths: [`sessions/s-${i}`],
});

function build(n: number): { docId: string; entry: ChainedEvidence }[] {
  const out: { docId: string; entry: ChainedEvidence }[] = [];
  let prev: ChainedEvidence | null = null;
  for (let i = 0; i < n; i++) {
    prev = chainEntry(prev, body(i));
    out.push({ docId: evidenceDocId(prev.seq), entry: prev });
  }
  return out;
}

const headOf = (c: { entry: ChainedEvidence }[]) => ({ seq: c[c.length - 1]!.entry.seq, hash: c[c.length - 1]!.entry.hash });

describe("evidence hash chain", () => {
  it("an untouched chain verifies", () => {
    const c = build(5);
    expect(verifyChain(c, headOf(c))).toMatchObject({ ok: true, checked: 5, findings: [] });
  });

  it("editing any field of any entry is detected at that entry", () => {
    for (let i = 0; i < 5; i++) {
      const c = build(5);
      const head = headOf(c);
      c[i]!.entry = { ...c[i]!.entry, counts: { deleted: 99 } };
      const r = verifyChain(c, head);
      expect(r.ok).toBe(false);
      expect(r.findings).toContainEqual(expect.objectContaining({ problem: "EDITED", seq: i + 1 }));
    }
  });

  it("removing an entry in the middle is detected as REMOVED", () => {
    const c = build(5);
    const head = headOf(c);
    c.splice(2, 1);
    expect(verifyChain(c, head).findings).toContainEqual(expect.objectContaining({ problem: "REMOVED", seq: 3 }));
  });

  it("removing the last entry is detected through the head", () => {
    const c = build(5);
    const head = headOf(c);
    c.pop();
    expect(verifyChain(c, head).findings).toContainEqual(expect.objectContaining({ problem: "REMOVED" }));
  });

  it("re-hashing an edited entry still breaks the link to the next one", () => {
    const c = build(4);
    const head = headOf(c);
    const forged = chainEntry({ seq: 1, hash: c[0]!.entry.hash }, { ...body(1), counts: { deleted: 0 } });
    c[1] = { docId: c[1]!.docId, entry: forged };
    expect(verifyChain(c, head).findings).toContainEqual(expect.objectContaining({ problem: "BROKEN_LINK", seq: 3 }));
  });

  it("an inserted entry is detected", () => {
    const c = build(3);
    const head = headOf(c);
    c.splice(1, 0, { docId: "000000000099", entry: c[1]!.entry });
    expect(verifyChain(c, head).ok).toBe(false);
  });
});
