import type { Transaction } from "firebase-admin/firestore";
import { entryDocId, entryHashMatches, entryMac, GENESIS_HASH, LEGACY_SEGMENT, malformedEntry, shardOf, type ChainedEvidence, type ChainFinding, type ChainHead } from "./rules";
import { verifierKeys } from "./keys";
import { entryRef, headRef } from "./store";
import { attestedLegacySeq } from "./anchor";
import { db } from "../platform/firestore";

/** One entry of a chain, or null. Inside a transaction when one is given (a decision the purge relies on). */
export async function readEntry(shard: string, seq: number, tx?: Transaction): Promise<ChainedEvidence | null> {
  const ref = entryRef(shard, seq);
  const snap = tx ? await tx.get(ref) : await ref.get();
  return snap.exists ? (snap.data() as ChainedEvidence) : null;
}

/**
 * Checks entries where they sit, without walking their chains (a page of an explanation, a decision the
 * purge relies on): each one's hash matches its content, its MAC matches (with the key), its prevHash is the
 * hash of the entry before it (the genesis for a first entry), and the entry after it, or its chain's head
 * when it is the last, links back to it. Returns the problems of each entry, by document id (none: intact
 * and in its chain). Reads the neighbours and heads in a few batched reads.
 */
export async function verifyEntries(entries: readonly ChainedEvidence[]): Promise<Map<string, ChainFinding[]>> {
  const keys = verifierKeys();
  const wanted = new Map<string, { shard: string; seq: number }>();
  for (const e of entries) {
    for (const seq of [e.seq - 1, e.seq + 1]) if (seq >= 1) wanted.set(entryDocId({ shard: e.shard, seq }), { shard: shardOf(e), seq });
  }
  const neighbours = new Map<string, ChainedEvidence>();
  const refs = [...wanted.values()].map((w) => entryRef(w.shard, w.seq));
  for (let i = 0; i < refs.length; i += 300) {
    for (const s of await db().getAll(...refs.slice(i, i + 300))) if (s.exists) neighbours.set(s.id, s.data() as ChainedEvidence);
  }
  const shards = [...new Set(entries.map(shardOf))];
  const heads = new Map<string, ChainHead | null>();
  const headSnaps = shards.length > 0 ? await db().getAll(...shards.map(headRef)) : [];
  shards.forEach((s, i) => heads.set(s, headSnaps[i]?.exists ? (headSnaps[i].data() as ChainHead) : null));

  // A legacy entry counts only as far as the ledger's signed migration entry (and a seal) name the segment.
  const legacyUpTo = entries.some((e) => shardOf(e) === LEGACY_SEGMENT) ? await attestedLegacySeq() : 0;
  const out = new Map<string, ChainFinding[]>();
  for (const e of entries) {
    const shard = shardOf(e);
    const docId = entryDocId(e);
    const problems: ChainFinding[] = [];
    const f = (problem: ChainFinding["problem"], detail: string) => problems.push({ problem, shard, seq: e.seq, docId, detail });
    const malformed = malformedEntry(e);
    if (malformed) {
      f("MALFORMED", `not a well-formed entry: ${malformed}`);
      out.set(docId, problems);
      continue;
    }
    const hashOk = entryHashMatches(e);
    if (!hashOk) f("EDITED", "the entry's hash does not match its content");
    if (shard === LEGACY_SEGMENT && e.seq > legacyUpTo) f("UNATTESTED_SEGMENT", legacyUpTo === 0 ? "no signed migration entry names a legacy segment: this entry was written by hand" : `the legacy segment counts up to seq ${legacyUpTo}`);
    if (shard !== LEGACY_SEGMENT) {
      if (typeof e.mac !== "string" || typeof e.keyId !== "string") f("UNSIGNED", "the entry carries no MAC");
      else if (keys) {
        const secret = keys.get(e.keyId);
        if (secret === undefined) f("UNKNOWN_KEY", `signed with key ${e.keyId}, which the verifier was not given`);
        else if (hashOk && entryMac(secret, e.hash) !== e.mac) f("BAD_MAC", "the MAC does not match: written or re-hashed without the evidence key");
      }
    }
    const before = e.seq === 1 ? GENESIS_HASH : neighbours.get(entryDocId({ shard: e.shard, seq: e.seq - 1 }))?.hash;
    if (before !== e.prevHash) f("BROKEN_LINK", before === undefined ? `entry ${e.seq - 1} is missing` : "prevHash is not the hash of the entry before it");
    const after = neighbours.get(entryDocId({ shard: e.shard, seq: e.seq + 1 }));
    const head = heads.get(shard) ?? null;
    if (after ? after.prevHash !== e.hash : !(head?.seq === e.seq && head.hash === e.hash)) {
      f("BROKEN_LINK", after ? `entry ${e.seq + 1} does not link to it` : `no entry ${e.seq + 1}, and the chain head is not this entry`);
    }
    out.set(docId, problems);
  }
  return out;
}
