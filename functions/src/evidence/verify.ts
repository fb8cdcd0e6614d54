import { FieldPath, type DocumentData, type Query } from "firebase-admin/firestore";
import {
  anchorCheckpoints,
  ChainWalk,
  isShardLabel,
  LEGACY_SEGMENT,
  parseEvidenceDocId,
  sealCheckpoint,
  type ChainedEvidence,
  type ChainFinding,
  type ChainHead,
  type Checkpoint,
  type KeyRing,
} from "./rules";
import { loadAnchors, type AnchorSource } from "./anchor-source";
import { readHeads } from "./anchor";
import { verifierKeys } from "./keys";
import { COLLECTIONS, db } from "../platform/firestore";
import { pages } from "../platform/streams";

export interface EvidenceVerification {
  ok: boolean;
  /** Entries walked. */
  checked: number;
  /** Chains (and the legacy segment) that have entries, a head or an anchored point. */
  chains: number;
  findings: ChainFinding[];
  /** More findings existed than were kept. */
  truncated: boolean;
  durationMs: number;
  /** Whether MACs were checked (with the evidence key) or could not be (a reader without the key). */
  macs: "checked" | "unchecked";
  /**
   * The anchors the ledger was held against, or null when none were read: `count` in full, `afterCut` (a
   * bundle's) only where the bundle reaches what they name.
   */
  anchors: { source: string; count: number; afterCut: number; latestAt: string | null } | null;
  /** The first release's single chain, if the ledger has one, and the last head a seal names. */
  legacy: { entries: number; sealedSeq: number | null } | null;
}

export interface VerifyOptions {
  pageSize?: number;
  maxFindings?: number;
  /** Sees every entry as it is walked (the dashboard derives TTL delays from the same pass). */
  onEntry?: (entry: ChainedEvidence) => void;
  onProgress?: (checked: number) => void;
  /** The keys to check MACs with; null checks none. Default: the evidence key, when there is one. */
  keys?: KeyRing | null;
  /** Where the anchors are. Default: the emulators' anchors database on the emulators, none elsewhere. */
  anchors?: AnchorSource;
  /** Whose anchors to use (a bundle's project and database). Default: this project's governed database. */
  ledger?: { projectId: string; databaseId: string };
  /**
   * A bundle's cut: anchors made after it may name entries the bundle rightly ends before, so they are held
   * only where the bundle reaches them (a cut moved back to dodge them still meets them there).
   */
  anchorsUntilMs?: number;
}

export type Item = { docId: string; entry: ChainedEvidence };

/** Where a ledger is read from: the database, or an exported bundle (evidence/bundle.ts). */
export interface LedgerSource {
  /** Every document at or after "s" (the sharded chains), in document-id order, page by page. */
  shardPages(pageSize: number): AsyncIterable<Item[]>;
  /** Every document before "s" (the legacy segment), in document-id order. */
  legacyPages(pageSize: number): AsyncIterable<Item[]>;
  heads(): Promise<Map<string, ChainHead>>;
  /** A live source: the entries of one chain after a document id, to follow writers that appended meanwhile. */
  after?(shard: string, afterDocId: string | null, pageSize: number): AsyncIterable<Item[]>;
}

/**
 * Verifies the ledger: every chain, its head, its MACs (with the key), and the anchors and seals: each
 * anchored or sealed entry must still be there with the hash it had (a rewrite, a truncation with the head
 * rewound, a deleted chain, a wiped ledger all break that). The sharded chains are walked first, so the seals
 * they hold are known before the legacy segment is walked. Memory: one page, one state per chain, and the
 * anchored points (one per chain per anchor in which its head had moved).
 *
 * On a live ledger the heads are read again after the walk and any chain whose head moved on is followed, so
 * a writer appending meanwhile is not reported as a truncation.
 */
export async function verifyLedger(source: LedgerSource, opts: VerifyOptions = {}): Promise<EvidenceVerification> {
  const started = Date.now();
  const pageSize = opts.pageSize ?? 500;
  const maxFindings = opts.maxFindings ?? 1_000;
  const keys = opts.keys === undefined ? verifierKeys() : opts.keys;
  const anchorSource = opts.anchors ?? defaultAnchorSource();
  const anchorList = anchorSource.kind === "none" ? null : await loadAnchors(anchorSource, opts.ledger);
  const anchored = anchorCheckpoints(anchorList?.anchors ?? [], keys, opts.anchorsUntilMs);
  const findings: ChainFinding[] = [];
  let total = 0;
  const report = (fs: readonly ChainFinding[]) => {
    for (const f of fs) {
      total++;
      if (findings.length < maxFindings) findings.push(f);
    }
  };
  report(anchored.findings);

  const seals = new Map<number, Checkpoint>();
  const walks = new Map<string, ChainWalk>();
  const walkOf = (shard: string): ChainWalk => {
    let w = walks.get(shard);
    if (!w) {
      const points = shard === LEGACY_SEGMENT ? new Map([...(anchored.points.get(LEGACY_SEGMENT) ?? []), ...seals]) : anchored.points.get(shard);
      w = new ChainWalk(shard, { keys, ...(points ? { checkpoints: points } : {}) });
      walks.set(shard, w);
    }
    return w;
  };
  let checked = 0;
  const feed = async (pagesOf: AsyncIterable<Item[]>, legacy: boolean) => {
    for await (const page of pagesOf) {
      for (const { docId, entry } of page) {
        checked++;
        const id = parseEvidenceDocId(docId);
        if (!id || (id.shard === LEGACY_SEGMENT) !== legacy) {
          report([{ problem: "INSERTED", shard: id?.shard ?? "-", seq: entry.seq, docId, detail: `${docId} is not an evidence document id` }]);
          continue;
        }
        const fs = walkOf(id.shard).push(docId, entry);
        report(fs);
        const seal = fs.length === 0 && !legacy ? sealCheckpoint(entry) : null;
        if (seal) {
          const seen = seals.get(seal.seq);
          if (seen && seen.hash !== seal.hash) report([{ problem: "ANCHOR_MISMATCH", shard: LEGACY_SEGMENT, seq: seal.seq, docId, detail: `${seen.source} and ${seal.source} seal entry ${seal.seq} with different hashes` }]);
          else seals.set(seal.seq, seal);
        }
        opts.onEntry?.(entry);
      }
      opts.onProgress?.(checked);
    }
  };

  await feed(source.shardPages(pageSize), false);
  let heads = await source.heads();
  heads = await follow(source, heads, walks, pageSize, (p) => feed(p, false), (s) => s !== LEGACY_SEGMENT);
  await feed(source.legacyPages(pageSize), true);
  heads = await follow(source, heads, walks, pageSize, (p) => feed(p, true), (s) => s === LEGACY_SEGMENT);

  const shards = new Set<string>([...walks.keys(), ...heads.keys(), ...anchored.points.keys(), ...(seals.size > 0 ? [LEGACY_SEGMENT] : [])]);
  for (const shard of [...shards].sort()) {
    if (shard !== LEGACY_SEGMENT && !isShardLabel(shard)) {
      report([{ problem: "BAD_ANCHOR", shard, seq: 0, detail: `an anchor names ${shard}, which is no chain` }]);
      continue;
    }
    report(walkOf(shard).finish(heads.get(shard) ?? null));
  }
  // A sealed segment ends at its seal: whatever was appended to the retired chain afterwards is not evidence.
  const legacyLast = walks.get(LEGACY_SEGMENT)?.last;
  const sealedSeq = seals.size > 0 ? Math.max(...seals.keys()) : null;
  if (legacyLast && sealedSeq !== null && legacyLast.seq > sealedSeq) {
    report([{ problem: "INSERTED", shard: LEGACY_SEGMENT, seq: sealedSeq + 1, detail: `entries ${sealedSeq + 1}..${legacyLast.seq} were appended to the legacy segment after its seal` }]);
  }
  if (checked === 0 && (anchored.count > 0 || seals.size > 0)) {
    report([{ problem: "LEDGER_WIPED", shard: "-", seq: 0, detail: `the ledger has no entries, but ${anchored.count} anchor(s) say it had evidence` }]);
  }
  const legacyWalk = walks.get(LEGACY_SEGMENT);
  return {
    ok: total === 0,
    checked,
    chains: shards.size,
    findings,
    truncated: total > findings.length,
    durationMs: Date.now() - started,
    macs: keys ? "checked" : "unchecked",
    anchors: anchorList ? { source: anchorList.label, count: anchored.count, afterCut: anchored.afterCut, latestAt: anchored.latestAtMs === null ? null : new Date(anchored.latestAtMs).toISOString() } : null,
    legacy: legacyWalk || sealedSeq !== null ? { entries: legacyWalk?.checked ?? 0, sealedSeq } : null,
  };
}

/**
 * Follows the chains whose head moved past the walk's end (a few rounds), so a live chain is judged at a head
 * its entries reach. Returns the heads last read.
 */
async function follow(
  source: LedgerSource,
  heads: Map<string, ChainHead>,
  walks: ReadonlyMap<string, ChainWalk>,
  pageSize: number,
  feed: (pages: AsyncIterable<Item[]>) => Promise<void>,
  which: (shard: string) => boolean,
): Promise<Map<string, ChainHead>> {
  if (!source.after) return heads;
  let current = heads;
  for (let round = 0; round < 5; round++) {
    const moved = [...current].filter(([shard, head]) => which(shard) && head.seq > (walks.get(shard)?.last?.seq ?? 0));
    if (moved.length === 0) return current;
    for (const [shard] of moved) await feed(source.after(shard, walks.get(shard)?.last?.docId ?? null, pageSize));
    current = await source.heads();
  }
  return current;
}

/** On the emulators the anchors are in the local anchors database; elsewhere they must be named. */
function defaultAnchorSource(): AnchorSource {
  return process.env.FIRESTORE_EMULATOR_HOST ? { kind: "local" } : { kind: "none" };
}

/** The ledger in the governed database. */
export function firestoreLedger(): LedgerSource {
  const col = db().collection(COLLECTIONS.deletionAudits);
  const items = async function* (q: Query, pageSize: number): AsyncIterable<Item[]> {
    for await (const page of pages(q, pageSize)) yield page.map((s) => ({ docId: s.id, entry: asEntry(s.id, s.data()) }));
  };
  return {
    shardPages: (pageSize) => items(col.where(FieldPath.documentId(), ">=", col.doc("s")), pageSize),
    legacyPages: (pageSize) => items(col.where(FieldPath.documentId(), "<", col.doc("s")), pageSize),
    heads: readHeads,
    after: (shard, afterDocId, pageSize) => {
      const from = afterDocId ?? (shard === LEGACY_SEGMENT ? null : `${shard}-`);
      const upper = shard === LEGACY_SEGMENT ? "s" : `${shard}.`;
      let q = col.where(FieldPath.documentId(), "<", col.doc(upper));
      if (from !== null) q = q.where(FieldPath.documentId(), ">", col.doc(from));
      return items(q, pageSize);
    },
  };
}

/** Verifies the ledger in the governed database (`retention verify-evidence`, the dashboard). */
export function verifyEvidence(opts: VerifyOptions = {}): Promise<EvidenceVerification> {
  return verifyLedger(firestoreLedger(), opts);
}

/**
 * A stored entry as the chain sees it. A document stripped of its chain fields gets values that can never
 * verify (seq from its id, empty hashes), so it is reported as edited rather than crashing the walk.
 */
export function asEntry(docId: string, data: DocumentData): ChainedEvidence {
  const d = data as Partial<ChainedEvidence>;
  return {
    ...(data as ChainedEvidence),
    seq: typeof d.seq === "number" ? d.seq : (parseEvidenceDocId(docId)?.seq ?? 0),
    prevHash: typeof d.prevHash === "string" ? d.prevHash : "",
    hash: typeof d.hash === "string" ? d.hash : "",
  };
}
