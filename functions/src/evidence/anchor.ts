import { FieldPath, type DocumentData } from "firebase-admin/firestore";
import { ANCHOR_EVENT, entryDocId, LEGACY_SEGMENT, makeAnchor, sealBody, type ChainHead, type EvidenceAnchor } from "./rules";
import { signingKey } from "./keys";
import { EVIDENCE_TX, HEAD_PREFIX, headRef, openEvidence } from "./store";
import type { JobOptions, JobSummary } from "../kernel/job";
import { publishAnchor } from "../platform/anchors";
import { COLLECTIONS, db } from "../platform/firestore";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";

/** The shard key of the seal entries: all seals of the legacy segment go to one chain. */
export const SEAL_SHARD_KEY = "segment:legacy";

const asHead = (data: DocumentData | undefined): ChainHead | null =>
  data && typeof data.seq === "number" && typeof data.hash === "string" ? { seq: data.seq, hash: data.hash } : null;

/** Every chain head as stored now (the legacy segment's under "legacy"); chains with no head are absent. */
export async function readHeads(): Promise<Map<string, ChainHead>> {
  const col = db().collection(COLLECTIONS.retentionJobs);
  const [snap, legacy] = await Promise.all([
    col
      .where(FieldPath.documentId(), ">=", col.doc(HEAD_PREFIX))
      .where(FieldPath.documentId(), "<", col.doc(`${HEAD_PREFIX}\uf8ff`))
      .get(),
    headRef(LEGACY_SEGMENT).get(),
  ]);
  const heads = new Map<string, ChainHead>();
  const legacyHead = asHead(legacy.data());
  if (legacyHead) heads.set(LEGACY_SEGMENT, legacyHead);
  for (const d of snap.docs) {
    const head = asHead(d.data());
    if (head) heads.set(d.id.slice(HEAD_PREFIX.length), head);
  }
  return heads;
}

/**
 * The legacy segment is sealed only once its head has not moved for this long: longer than any invocation of
 * the first release can run (540 s), so no writer of it can still append when the seal is made.
 */
export const LEGACY_QUIET_MS = 15 * 60_000;

/**
 * Seals the legacy segment (the first release's single chain) into the keyed ledger, once: one signed
 * EVIDENCE_SEGMENT_SEALED entry that names its head's seq and hash, and the head marked with it, in one
 * transaction. From then on the segment cannot be cut short, rewritten, extended or deleted without the
 * verifier noticing, though its own entries carry no MAC. Runs with every anchor: a no-op once sealed, or while
 * the head moved within `quietMs` (a rolling deploy whose old instances still append). A legacy head that moves
 * after its seal is never sealed again: the verifier reports what was appended.
 */
export async function sealLegacySegment(nowMs: number, quietMs: number = LEGACY_QUIET_MS): Promise<ChainHead | null> {
  const ref = headRef(LEGACY_SEGMENT);
  return db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const head = asHead(snap.data());
    if (!head || typeof snap.get("sealedSeq") === "number") return null;
    if ((snap.updateTime?.toMillis() ?? 0) > nowMs - quietMs) return null;
    const evidence = await openEvidence(tx, SEAL_SHARD_KEY);
    const entry = evidence.append(sealBody(head, policy().version, nowMs));
    tx.update(ref, { sealedSeq: head.seq, sealedHash: head.hash, sealedBy: entryDocId(entry) });
    return head;
  }, EVIDENCE_TX);
}

export interface AnchorOutcome {
  anchor: EvidenceAnchor;
  sinks: string[];
  sealed: ChainHead | null;
}

/**
 * Anchors the ledger now: seals the legacy segment if it moved, reads every chain head, signs them as one
 * anchor and writes it outside the database (platform/anchors.ts). An anchor's time is the wall clock taken
 * after its heads were read, never `asOf`: every head it names existed by then (which a bundle's cut relies
 * on). A dry run reads and signs, and writes nothing.
 */
export async function anchorEvidence(opts: { clock?: () => number; dryRun?: boolean; legacyQuietMs?: number } = {}): Promise<AnchorOutcome> {
  const clock = opts.clock ?? Date.now;
  const key = signingKey();
  const sealed = opts.dryRun ? null : await sealLegacySegment(clock(), opts.legacyQuietMs);
  const heads = await readHeads();
  const anchor = makeAnchor({ projectId: settings.projectId(), databaseId: settings.databaseId(), atMs: clock(), heads: Object.fromEntries([...heads].sort(([a], [b]) => (a < b ? -1 : 1))) }, key);
  const sinks = opts.dryRun ? [] : await publishAnchor({ event: ANCHOR_EVENT, anchor });
  log.info("evidence.anchored", { chains: heads.size, sealed: sealed !== null, dryRun: opts.dryRun === true, sinks: sinks.join(",") });
  return { anchor, sinks, sealed };
}

/** The `evidenceAnchor` job (schedule, runRetentionJob, `retention run evidenceAnchor`). */
export async function runEvidenceAnchor(opts: JobOptions): Promise<JobSummary> {
  const r = await anchorEvidence({ dryRun: opts.dryRun });
  const heads = Object.values(r.anchor.heads);
  return {
    job: "evidenceAnchor",
    dryRun: opts.dryRun,
    asOf: opts.asOfMs === null ? null : new Date(opts.asOfMs).toISOString(),
    chains: heads.length,
    entries: heads.reduce((n, h) => n + h.seq, 0),
    sealedLegacyAt: r.sealed?.seq ?? null,
    anchoredAt: new Date(r.anchor.atMs).toISOString(),
    sinks: r.sinks,
  };
}
