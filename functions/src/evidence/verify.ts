import { FieldPath, type Query } from "firebase-admin/firestore";
import {
  anchorCheckpoints,
  beyondAnchors,
  ChainWalk,
  isShardLabel,
  LEGACY_SEGMENT,
  malformedEntry,
  migrationAttestation,
  parseEvidenceDocId,
  sameAttestation,
  sealCheckpoint,
  type ChainedEvidence,
  type ChainFinding,
  type Checkpoint,
  type KeyRing,
  type LegacyAttestation,
} from "./rules";
import { loadAnchors, type AnchorSource } from "./anchor-source";
import { readHeadDocs, type HeadRead } from "./anchor";
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
  anchors: { source: string; count: number; afterCut: number; appendRecords: number; latestAt: string | null } | null;
  /**
   * How far the ledger runs ahead of what the anchor store holds (periodic anchors and per-append head
   * records): the chains whose head is past their last anchored point, and how many entries that is. Null
   * without anchors.
   */
  sinceAnchor: { chains: number; entries: number } | null;
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
  /**
   * ANCHOR_STALE when the newest periodic anchor (at or before `anchorsUntilMs`, else `nowMs`) is older than
   * this, or there is none while the ledger has entries: the anchor job has stopped. `verify-evidence` passes
   * twice the anchor schedule's interval. Unset: not checked.
   */
  staleAfterMs?: number;
  /** The clock the staleness check reads on a live ledger. */
  nowMs?: number;
}

export type Item = { docId: string; entry: ChainedEvidence };

/** Where a ledger is read from: the database, or an exported bundle (evidence/bundle.ts). */
export interface LedgerSource {
  /** Every document at or after "s" (the sharded chains), in document-id order, page by page. */
  shardPages(pageSize: number): AsyncIterable<Item[]>;
  /** Every document before "s" (the legacy segment), in document-id order. */
  legacyPages(pageSize: number): AsyncIterable<Item[]>;
  /** Every chain head, and the head documents that are not heads (reported as MALFORMED). */
  heads(): Promise<HeadRead>;
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
  for (const m of anchorList?.malformed ?? []) report([{ problem: "MALFORMED", shard: "-", seq: 0, docId: m.where, detail: `anchor ${m.where}: ${m.detail}; not used` }]);
  report(anchored.findings);

  const seals = new Map<number, Checkpoint>();
  const migrations: { legacy: LegacyAttestation | null; source: string; atMs: number }[] = [];
  const walks = new Map<string, ChainWalk>();
  const walkOf = (shard: string): ChainWalk => {
    let w = walks.get(shard);
    if (!w) {
      const points = shard === LEGACY_SEGMENT ? new Map([...(anchored.points.get(LEGACY_SEGMENT) ?? []), ...seals, ...migrationPoints(migrations)]) : anchored.points.get(shard);
      w = new ChainWalk(shard, { keys, ...(points ? { checkpoints: points } : {}) });
      walks.set(shard, w);
    }
    return w;
  };
  let checked = 0;
  let legacyUpToAttested = 0;
  const attestedSeq = () => migrations[0]?.legacy?.seq ?? 0;
  const feed = async (pagesOf: AsyncIterable<Item[]>, legacy: boolean) => {
    for await (const page of pagesOf) {
      for (const { docId, entry } of page) {
        checked++;
        const id = parseEvidenceDocId(docId);
        const raw = entry as unknown as Record<string, unknown> | null;
        if (!id || (id.shard === LEGACY_SEGMENT) !== legacy) {
          report([{ problem: "INSERTED", shard: id?.shard ?? "-", seq: typeof raw?.seq === "number" ? raw.seq : 0, docId, detail: `${docId} is not an evidence document id` }]);
          continue;
        }
        const malformed = malformedEntry(entry);
        if (malformed) {
          report([{ problem: "MALFORMED", shard: id.shard, seq: id.seq, docId, detail: `${docId} is not a well-formed entry: ${malformed}` }]);
          walkOf(id.shard).skip(docId, id.seq, raw?.hash);
          if (legacy && id.seq <= attestedSeq()) legacyUpToAttested++;
          continue;
        }
        const fs = walkOf(id.shard).push(docId, entry);
        report(fs);
        if (legacy && entry.seq <= attestedSeq()) legacyUpToAttested++;
        if (fs.length === 0 && !legacy) {
          const seal = sealCheckpoint(entry);
          if (seal) {
            const seen = seals.get(seal.seq);
            if (seen && seen.hash !== seal.hash) report([{ problem: "ANCHOR_MISMATCH", shard: LEGACY_SEGMENT, seq: seal.seq, docId, detail: `${seen.source} and ${seal.source} seal entry ${seal.seq} with different hashes` }]);
            else seals.set(seal.seq, seal);
          }
          const migration = migrationAttestation(entry);
          if (migration) migrations.push(migration);
        }
        opts.onEntry?.(entry);
      }
      opts.onProgress?.(checked);
    }
  };

  await feed(source.shardPages(pageSize), false);
  let headRead = await source.heads();
  headRead = await follow(source, headRead, walks, pageSize, (p) => feed(p, false), (s) => s !== LEGACY_SEGMENT);
  // The migration entries are all known now (they are in the sharded chains): the first one is what counts.
  migrations.sort((a, b) => a.atMs - b.atMs);
  report(attestationConflicts(migrations));
  await feed(source.legacyPages(pageSize), true);
  headRead = await follow(source, headRead, walks, pageSize, (p) => feed(p, true), (s) => s === LEGACY_SEGMENT);
  const heads = headRead.heads;
  const malformedHeads = new Map(headRead.malformed.map((m) => [m.shard, m]));
  for (const m of headRead.malformed) report([{ problem: "MALFORMED", shard: m.shard, seq: 0, docId: m.docId, detail: `head ${m.docId} is not a head: ${m.detail}` }]);

  const shards = new Set<string>([...walks.keys(), ...heads.keys(), ...anchored.points.keys(), ...(seals.size > 0 ? [LEGACY_SEGMENT] : [])]);
  for (const shard of [...shards].sort()) {
    if (shard !== LEGACY_SEGMENT && !isShardLabel(shard)) {
      report([{ problem: "BAD_ANCHOR", shard, seq: 0, detail: `an anchor names ${shard}, which is no chain` }]);
      continue;
    }
    report(walkOf(shard).finish(malformedHeads.has(shard) ? "malformed" : (heads.get(shard) ?? null)));
  }
  // A sealed segment ends at its seal: whatever was appended to the retired chain afterwards is not evidence.
  const legacyLast = walks.get(LEGACY_SEGMENT)?.last;
  const sealedSeq = seals.size > 0 ? Math.max(...seals.keys()) : null;
  if (legacyLast && sealedSeq !== null && legacyLast.seq > sealedSeq) {
    report([{ problem: "INSERTED", shard: LEGACY_SEGMENT, seq: sealedSeq + 1, detail: `entries ${sealedSeq + 1}..${legacyLast.seq} were appended to the legacy segment after its seal` }]);
  }
  const legacyThere = walks.has(LEGACY_SEGMENT) || heads.has(LEGACY_SEGMENT) || malformedHeads.has(LEGACY_SEGMENT) || seals.size > 0;
  if (legacyThere) report(legacyAttestationFindings(migrations[0] ?? null, legacyUpToAttested, legacyLast?.seq ?? 0, sealedSeq));
  if (checked === 0 && (anchored.count > 0 || seals.size > 0)) {
    report([{ problem: "LEDGER_WIPED", shard: "-", seq: 0, detail: `the ledger has no entries, but ${anchored.count} anchor(s) say it had evidence` }]);
  }
  if (opts.staleAfterMs !== undefined && anchorList) {
    const asOf = opts.anchorsUntilMs ?? opts.nowMs ?? Date.now();
    const latest = anchored.latestAtMs;
    if (latest === null ? checked > 0 : asOf - latest > opts.staleAfterMs) {
      const lag = beyondAnchors(heads, anchored.points);
      report([
        {
          problem: "ANCHOR_STALE",
          shard: "-",
          seq: 0,
          detail: `${latest === null ? "no periodic anchor at all" : `the newest anchor (${new Date(latest).toISOString()}) is ${Math.round((asOf - latest) / 60_000)} min old`}, over the ${Math.round(opts.staleAfterMs / 60_000)} min allowed: the anchor job has stopped; ${lag.chains} chain(s) and ${lag.entries} entries are newer than their last anchor`,
        },
      ]);
    }
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
    anchors: anchorList
      ? { source: anchorList.label, count: anchored.count, afterCut: anchored.afterCut, appendRecords: anchored.appendRecords, latestAt: anchored.latestAtMs === null ? null : new Date(anchored.latestAtMs).toISOString() }
      : null,
    sinceAnchor: anchorList ? beyondAnchors(heads, anchored.points) : null,
    legacy: legacyWalk || sealedSeq !== null ? { entries: legacyWalk?.checked ?? 0, sealedSeq } : null,
  };
}

/** The head the first migration entry names, as a point the legacy segment must contain. */
function migrationPoints(migrations: readonly { legacy: LegacyAttestation | null; source: string }[]): [number, Checkpoint][] {
  const first = migrations[0];
  return first?.legacy ? [[first.legacy.seq, { seq: first.legacy.seq, hash: first.legacy.hash, source: first.source }]] : [];
}

/** Every migration entry must say what the first one says: another is a forgery's attempt to name a new segment. */
function attestationConflicts(migrations: readonly { legacy: LegacyAttestation | null; source: string }[]): ChainFinding[] {
  const [first, ...rest] = migrations;
  const say = (l: LegacyAttestation | null) => (l ? `a legacy segment of ${l.count} entries ending at seq ${l.seq}` : "no legacy segment");
  return first
    ? rest
        .filter((m) => !sameAttestation(m.legacy, first.legacy))
        .map((m) => ({ problem: "UNATTESTED_SEGMENT" as const, shard: LEGACY_SEGMENT, seq: m.legacy?.seq ?? 0, detail: `${m.source} names ${say(m.legacy)}, but ${first.source}, the first, names ${say(first.legacy)}` }))
    : [];
}

/**
 * A legacy segment counts only as the ledger's first migration entry names it: its head (a checkpoint of the
 * walk) and its count; beyond that head only as far as a seal reaches (the first release's last writers during
 * a deploy). No migration entry, one that names none, or a seal of a segment it does not name: UNATTESTED_SEGMENT.
 */
function legacyAttestationFindings(first: { legacy: LegacyAttestation | null; source: string } | null, countUpToAttested: number, lastSeq: number, sealedSeq: number | null): ChainFinding[] {
  const f = (seq: number, detail: string): ChainFinding => ({ problem: "UNATTESTED_SEGMENT", shard: LEGACY_SEGMENT, seq, detail });
  if (!first) return [f(0, "the ledger has a legacy segment, but no signed migration entry names it (the first anchor of the keyed ledger writes one)")];
  if (!first.legacy) return [f(0, `${first.source} says this ledger had no legacy segment: the one there now was written since`)];
  const out: ChainFinding[] = [];
  // A segment cut short of the named head is already TRUNCATED (or SEGMENT_MISSING): the count is checked on a whole one.
  if (lastSeq >= first.legacy.seq && countUpToAttested !== first.legacy.count) out.push(f(first.legacy.seq, `${first.source} counted ${first.legacy.count} legacy entries up to seq ${first.legacy.seq}; there are ${countUpToAttested}`));
  if (sealedSeq !== null && sealedSeq < first.legacy.seq) out.push(f(sealedSeq, `the seal names seq ${sealedSeq}, before the seq ${first.legacy.seq} ${first.source} names`));
  return out;
}

/**
 * Follows the chains whose head moved past the walk's end (a few rounds), so a live chain is judged at a head
 * its entries reach. Returns the heads last read.
 */
async function follow(
  source: LedgerSource,
  heads: HeadRead,
  walks: ReadonlyMap<string, ChainWalk>,
  pageSize: number,
  feed: (pages: AsyncIterable<Item[]>) => Promise<void>,
  which: (shard: string) => boolean,
): Promise<HeadRead> {
  if (!source.after) return heads;
  let current = heads;
  for (let round = 0; round < 5; round++) {
    const moved = [...current.heads].filter(([shard, head]) => which(shard) && head.seq > (walks.get(shard)?.last?.seq ?? 0));
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
    for await (const page of pages(q, pageSize)) yield page.map((s) => ({ docId: s.id, entry: s.data() as ChainedEvidence }));
  };
  return {
    shardPages: (pageSize) => items(col.where(FieldPath.documentId(), ">=", col.doc("s")), pageSize),
    legacyPages: (pageSize) => items(col.where(FieldPath.documentId(), "<", col.doc("s")), pageSize),
    heads: readHeadDocs,
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
