import { FieldPath, type DocumentData } from "firebase-admin/firestore";
import { verifyChain, type ChainFinding, type ChainedEvidence } from "./rules";
import { pages } from "../platform/streams";
import { chainHeadRef } from "./store";
import { COLLECTIONS, db } from "../platform/firestore";

export interface EvidenceVerification {
  ok: boolean;
  /** Entries walked. */
  checked: number;
  head: { seq: number; hash: string } | null;
  findings: ChainFinding[];
  /** More findings existed than were kept. */
  truncated: boolean;
  durationMs: number;
}

export interface VerifyOptions {
  pageSize?: number;
  maxFindings?: number;
  /** Sees every entry as it is walked (the dashboard derives TTL delays from the same pass). */
  onEntry?: (entry: ChainedEvidence) => void;
  onProgress?: (checked: number) => void;
}

type Item = { docId: string; entry: ChainedEvidence };

/**
 * Walks `deletionAudits` in document-id (= seq) order, page by page, and checks the hash chain and its head
 * (`retentionJobs/evidence-chain-head`) with the domain's `verifyChain`. `verifyChain` is a fold that starts
 * at the genesis; to feed it page by page, each page is prefixed with the previous page's last entry (the
 * link), and the findings about that carried entry (already reported) are dropped. Memory: one page.
 *
 * The head is read after the walk; if writers appended meanwhile, the walk continues to the new head, so a
 * live chain is not reported as truncated.
 */
export async function verifyEvidence(opts: VerifyOptions = {}): Promise<EvidenceVerification> {
  const started = Date.now();
  const pageSize = opts.pageSize ?? 500;
  const maxFindings = opts.maxFindings ?? 1_000;
  const findings: ChainFinding[] = [];
  let total = 0;
  let checked = 0;
  const state: { carry: Item | null } = { carry: null };

  const feed = (batch: Item[], head: { seq: number; hash: string } | null) => {
    const carry = state.carry;
    const input = carry ? [carry, ...batch] : batch;
    const r = verifyChain(input, head);
    for (const f of r.findings) {
      if (carry && f.docId === carry.docId) continue;
      total++;
      if (findings.length < maxFindings) findings.push(f);
    }
    checked += batch.length;
    state.carry = input[input.length - 1] ?? carry;
  };

  const col = db().collection(COLLECTIONS.deletionAudits);
  const walkFrom = async (afterDocId: string | null) => {
    const q = afterDocId === null ? col : col.where(FieldPath.documentId(), ">", col.doc(afterDocId));
    for await (const page of pages(q, pageSize)) {
      const batch = page.map((s) => ({ docId: s.id, entry: asEntry(s.id, s.data()) }));
      for (const b of batch) opts.onEntry?.(b.entry);
      feed(batch, null);
      opts.onProgress?.(checked);
    }
  };

  await walkFrom(null);
  let head = await readHead();
  // A writer may have appended after the walk passed the end: follow the head a few times, then judge.
  for (let i = 0; i < 5 && head && head.seq > (state.carry?.entry.seq ?? 0); i++) {
    await walkFrom(state.carry?.docId ?? null);
    head = await readHead();
  }
  feed([], head);
  return { ok: total === 0, checked, head, findings, truncated: total > findings.length, durationMs: Date.now() - started };
}

async function readHead(): Promise<{ seq: number; hash: string } | null> {
  const snap = await chainHeadRef().get();
  if (!snap.exists) return null;
  const seq: unknown = snap.get("seq");
  const hash: unknown = snap.get("hash");
  return { seq: typeof seq === "number" ? seq : -1, hash: typeof hash === "string" ? hash : "" };
}

/**
 * A stored entry as the chain sees it. A document stripped of its chain fields gets values that can never
 * verify (seq from its id, empty hashes), so it is reported as edited rather than crashing the walk.
 */
function asEntry(docId: string, data: DocumentData): ChainedEvidence {
  const d = data as Partial<ChainedEvidence>;
  return {
    ...(data as ChainedEvidence),
    seq: typeof d.seq === "number" ? d.seq : Number(docId),
    prevHash: typeof d.prevHash === "string" ? d.prevHash : "",
    hash: typeof d.hash === "string" ? d.hash : "",
  };
}
