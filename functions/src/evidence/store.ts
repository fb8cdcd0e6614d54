import type { DocumentReference, DocumentSnapshot, Transaction } from "firebase-admin/firestore";
import { chainEntry, evidenceDocId, HEAD_EVENT, LEGACY_SEGMENT, makeHeadRecord, shardFor, type ChainedEvidence, type ChainHead, type EvidenceBody, type EvidenceKey } from "./rules";
import { signingKey } from "./keys";
import { publishAnchor } from "../platform/anchors";
import { COLLECTIONS, db, governedDatabaseId } from "../platform/firestore";
import { log } from "../platform/logs";
import { settings, setting } from "../platform/settings";
import { afterCommit } from "../platform/transactions";

/**
 * The transaction policy of every transaction that appends evidence: appenders to one chain contend on its
 * head, so they get room to retry under load. The evidence log owns it; callers pass it to runTransaction.
 */
export const EVIDENCE_TX = { maxAttempts: 30 } as const;

/** The legacy segment's head (the first release's single chain). Read by the verifier and the seal only. */
export const LEGACY_HEAD_DOC = "evidence-chain-head";

/** Each chain's head, `retentionJobs/evidence-head-s0042`: its last seq and hash. */
export const HEAD_PREFIX = "evidence-head-";

export function headRef(shard: string): DocumentReference {
  return db()
    .collection(COLLECTIONS.retentionJobs)
    .doc(shard === LEGACY_SEGMENT ? LEGACY_HEAD_DOC : `${HEAD_PREFIX}${shard}`);
}

export const entryRef = (shard: string, seq: number): DocumentReference => db().collection(COLLECTIONS.deletionAudits).doc(evidenceDocId(shard, seq));

/** The chain a shard key's evidence goes to, under the current RETENTION_EVIDENCE_SHARDS. */
export const shardOfKey = (shardKey: string): string => shardFor(shardKey, setting("evidenceShards"));

export interface EvidenceAppender {
  /** The chain this transaction appends to. */
  readonly shard: string;
  append(body: EvidenceBody): ChainedEvidence;
}

/**
 * Appends evidence inside the caller's transaction, so that evidence and effect commit together. `shardKey`
 * names the subject of the entries (a request id, a hold id, a document path, a purge unit key): it picks the
 * chain, so writers about different subjects contend on different heads and the ledger's append rate grows
 * with RETENTION_EVIDENCE_SHARDS. The head read must come before the transaction's first write (Firestore's
 * rule), hence two steps:
 *
 *   const evidence = await openEvidence(tx, requestId);   // among the other reads
 *   ...writes...
 *   evidence.append(body);
 *
 * Concurrent writers to one chain conflict on its head and Firestore retries the losing transaction, so each
 * chain stays linear (no forks, no gaps). Every entry is signed with the evidence key, which the database
 * does not hold; without a key nothing is appended (the transaction fails before its commit).
 *
 * Right after the transaction commits, the chain's new head goes to the anchor store as a signed head record
 * (a log line in a function, the emulators' anchors database locally), so what was appended cannot be cut
 * unnoticed for longer than that write takes; the periodic anchor stays as the backstop. The record is written
 * after the commit and can never fail the append: a failure is logged (`evidence.head.unpublished`) and the
 * next periodic anchor covers the head.
 */
export async function openEvidence(tx: Transaction, shardKey: string): Promise<EvidenceAppender> {
  return openEvidenceFrom(tx, shardKey, await tx.get(evidenceHeadRef(shardKey)));
}

/** The head document of the chain a shard key's evidence goes to (read it among a transaction's other reads). */
export const evidenceHeadRef = (shardKey: string): DocumentReference => headRef(shardOfKey(shardKey));

/**
 * `openEvidence` for a transaction that already read the chain's head (`evidenceHeadRef(shardKey)`) with its other
 * reads, in one round trip.
 */
export function openEvidenceFrom(tx: Transaction, shardKey: string, headSnap: DocumentSnapshot): EvidenceAppender {
  const key = signingKey();
  const shard = shardOfKey(shardKey);
  const ref = headRef(shard);
  if (headSnap.ref.path !== ref.path) throw new Error(`openEvidenceFrom: ${headSnap.ref.path} is not the head of chain ${shard}`);
  let head = headSnap.exists ? (headSnap.data() as ChainHead) : null;
  return {
    shard,
    append(body: EvidenceBody): ChainedEvidence {
      const entry = chainEntry(shard, head, stripUndefined(body), key);
      tx.create(entryRef(shard, entry.seq), entry);
      head = { seq: entry.seq, hash: entry.hash };
      tx.set(ref, head);
      recordHeadAfterCommit(tx, shard, head, key);
      return entry;
    },
  };
}

/** Appends one or more entries about one subject in a transaction of their own. */
export async function recordEvidence(shardKey: string, ...bodies: EvidenceBody[]): Promise<ChainedEvidence[]> {
  return db().runTransaction(async (tx) => {
    const evidence = await openEvidence(tx, shardKey);
    return bodies.map((b) => evidence.append(b));
  }, EVIDENCE_TX);
}

/** Registers the head record of `shard` to be written once `tx` commits (the last append's head wins). */
function recordHeadAfterCommit(tx: Transaction, shard: string, head: ChainHead, key: EvidenceKey): void {
  const databaseId = governedDatabaseId();
  const unpublished = (err: unknown) => log.error("evidence.head.unpublished", { shard, seq: head.seq, error: err instanceof Error ? err.message : String(err) });
  const hooked = afterCommit(
    tx,
    `evidence-head:${shard}`,
    async () => {
      const record = makeHeadRecord({ projectId: settings.projectId(), databaseId, atMs: Date.now(), shard, head }, key);
      await publishAnchor({ event: HEAD_EVENT, anchor: record }, databaseId);
    },
    unpublished,
  );
  if (!hooked) unpublished(new Error("this Firestore SDK offers no commit hook; the periodic anchor covers the head"));
}

function stripUndefined<T extends object>(o: T): T {
  return JSON.parse(JSON.stringify(o)) as T;
}
