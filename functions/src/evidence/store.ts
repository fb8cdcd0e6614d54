import type { DocumentReference, Transaction } from "firebase-admin/firestore";
import { chainEntry, evidenceDocId, type ChainedEvidence, type EvidenceBody } from "./rules";
import { COLLECTIONS, db } from "../platform/firestore";

/**
 * The transaction policy of every transaction that appends evidence: appenders contend on the chain head, so
 * they get room to retry under load. The evidence log owns it; callers pass it to runTransaction.
 */
export const EVIDENCE_TX = { maxAttempts: 30 } as const;

/** The chain head: the last seq and hash. Every append reads and moves it inside one transaction. */
export const CHAIN_HEAD_DOC = "evidence-chain-head";

export function chainHeadRef(): DocumentReference {
  return db().collection(COLLECTIONS.retentionJobs).doc(CHAIN_HEAD_DOC);
}

/**
 * Appends evidence inside the caller's transaction, so that evidence and effect commit together.
 * The head read must come before the transaction's first write (Firestore's rule), hence two steps:
 *
 *   const evidence = await openEvidence(tx);   // among the other reads
 *   ...writes...
 *   evidence.append(body);
 *
 * Concurrent writers conflict on the head document and Firestore retries the losing transaction, so
 * the chain stays linear (no forks, no gaps) under any number of writers.
 */
export async function openEvidence(tx: Transaction): Promise<{ append: (body: EvidenceBody) => ChainedEvidence }> {
  const headSnap = await tx.get(chainHeadRef());
  let head = headSnap.exists ? (headSnap.data() as { seq: number; hash: string }) : null;
  return {
    append(body: EvidenceBody): ChainedEvidence {
      const entry = chainEntry(head, stripUndefined(body));
      tx.create(db().collection(COLLECTIONS.deletionAudits).doc(evidenceDocId(entry.seq)), entry);
      head = { seq: entry.seq, hash: entry.hash };
      tx.set(chainHeadRef(), head);
      return entry;
    },
  };
}

/** Appends one or more entries in a transaction of their own. */
export async function recordEvidence(...bodies: EvidenceBody[]): Promise<ChainedEvidence[]> {
  return db().runTransaction(async (tx) => {
    const evidence = await openEvidence(tx);
    return bodies.map((b) => evidence.append(b));
  });
}

function stripUndefined<T extends object>(o: T): T {
  return JSON.parse(JSON.stringify(o)) as T;
}
