import { canonicalJson, sha256Hex } from "../kernel/canonical";

import type { Actor } from "../kernel/actor";

export type { Actor };

/** The body of one `deletionAudits` entry, before it is chained. */
export interface EvidenceBody {
  action: string;
  actor: Actor;
  /** The decision and its reason, e.g. { reason: "AUTHORIZED_BY_POLICY" }. */
  decision: { reason: string; [k: string]: unknown };
  policyVersion: string;
  atMs: number;
  requestId?: string | null;
  correlationId?: string | null;
  holdId?: string | null;
  eventId?: string | null;
  /** Paths acted on (bounded by batch size), or a manifest hash for large sets. */
  paths?: string[];
  manifestHash?: string | null;
  counts?: Record<string, number>;
  /** The `asOf` a job ran as, when it was not the wall clock (emulator only). */
  asOfMs?: number | null;
  detail?: Record<string, string | number | boolean | null>;
}

export interface ChainedEvidence extends EvidenceBody {
  seq: number;
  prevHash: string;
  hash: string;
}

export const GENESIS_HASH = "0".repeat(64);

/** hash = SHA-256(prevHash + "\n" + canonical JSON of {seq, ...body}). */
export function chainHash(prevHash: string, seq: number, body: EvidenceBody): string {
  return sha256Hex(`${prevHash}\n${canonicalJson({ ...body, seq })}`);
}

export function chainEntry(prev: { seq: number; hash: string } | null, body: EvidenceBody): ChainedEvidence {
  const seq = prev ? prev.seq + 1 : 1;
  const prevHash = prev ? prev.hash : GENESIS_HASH;
  return { ...body, seq, prevHash, hash: chainHash(prevHash, seq, body) };
}

export type ChainProblem = "EDITED" | "REMOVED" | "INSERTED" | "BROKEN_LINK" | "HEAD_MISMATCH";

export interface ChainFinding {
  problem: ChainProblem;
  seq: number;
  docId?: string;
  detail: string;
}

/**
 * Walks a chain in seq order and reports every entry that was edited (its hash no longer matches its
 * body), removed (a gap in seq, or the head is ahead of the last entry), inserted (a seq that repeats or
 * a document whose id does not match its seq) or relinked.
 */
export function verifyChain(
  entries: Iterable<{ docId: string; entry: ChainedEvidence }>,
  head: { seq: number; hash: string } | null,
): { ok: boolean; checked: number; findings: ChainFinding[] } {
  const findings: ChainFinding[] = [];
  let prev: { seq: number; hash: string } | null = null;
  let checked = 0;
  for (const { docId, entry } of entries) {
    checked++;
    const { seq, prevHash, hash, ...body } = entry;
    if (docId !== evidenceDocId(seq)) {
      findings.push({ problem: "INSERTED", seq, docId, detail: `document ${docId} claims seq ${seq}` });
    }
    const expectedSeq = prev ? prev.seq + 1 : 1;
    if (prev && seq === prev.seq) {
      findings.push({ problem: "INSERTED", seq, docId, detail: `seq ${seq} appears twice` });
    } else if (seq > expectedSeq) {
      findings.push({ problem: "REMOVED", seq: expectedSeq, docId, detail: `entries ${expectedSeq}..${seq - 1} are missing` });
    }
    if (chainHash(prevHash, seq, body) !== hash) {
      findings.push({ problem: "EDITED", seq, docId, detail: "hash does not match the entry's content" });
    }
    const expectedPrev = prev ? prev.hash : GENESIS_HASH;
    if (prevHash !== expectedPrev && !(prev && seq > expectedSeq)) {
      findings.push({ problem: "BROKEN_LINK", seq, docId, detail: "prevHash does not match the previous entry" });
    }
    prev = { seq, hash };
  }
  if (head && (!prev || head.seq !== prev.seq || head.hash !== prev.hash)) {
    findings.push({
      problem: head.seq > (prev?.seq ?? 0) ? "REMOVED" : "HEAD_MISMATCH",
      seq: head.seq,
      detail: `chain head says seq ${head.seq}, last entry is ${prev?.seq ?? 0}`,
    });
  }
  return { ok: findings.length === 0, checked, findings };
}

/** Evidence documents are keyed by zero-padded seq, so a plain ordered read walks the chain. */
export function evidenceDocId(seq: number): string {
  return String(seq).padStart(12, "0");
}
