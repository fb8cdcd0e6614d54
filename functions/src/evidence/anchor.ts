import { FieldPath } from "firebase-admin/firestore";
import {
  ANCHOR_EVENT,
  entryDocId,
  entryHashMatches,
  entryMac,
  isShardLabel,
  LEGACY_SEGMENT,
  makeAnchor,
  malformedEntry,
  malformedHead,
  migrationAttestation,
  migrationBody,
  MIGRATION_ACTION,
  SEAL_ACTION,
  sealBody,
  sealCheckpoint,
  type ChainedEvidence,
  type ChainHead,
  type EvidenceAnchor,
  type LegacyAttestation,
} from "./rules";
import { signingKey, verifierKeys } from "./keys";
import { EVIDENCE_TX, HEAD_PREFIX, headRef, LEGACY_HEAD_DOC, openEvidence, recordEvidence } from "./store";
import type { JobOptions, JobSummary } from "../kernel/job";
import { publishAnchor } from "../platform/anchors";
import { COLLECTIONS, db, governedDatabaseId } from "../platform/firestore";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";

/** The shard key of the seal and migration entries: all of the legacy segment's entries go to one chain. */
export const SEAL_SHARD_KEY = "segment:legacy";
/** The shard key of the anchor job's incidents (heads it could not anchor, a seal or migration that failed). */
export const INCIDENT_SHARD_KEY = "evidence:anchor-incidents";
/** The action of an incident entry. */
export const ANCHOR_INCIDENT_ACTION = "EVIDENCE_ANCHOR_INCIDENT";
/** Marks that the migration entry was written: `retentionJobs/evidence-migration`. */
export const MIGRATION_DOC = "evidence-migration";

/** A head document that is not a head: its id, and why. */
export interface MalformedHead {
  docId: string;
  shard: string;
  detail: string;
}

/** Every chain head as stored now, and the head documents that are not heads (reported, never anchored). */
export interface HeadRead {
  /** Well-formed heads by chain (the legacy segment's under "legacy"); chains with no head are absent. */
  heads: Map<string, ChainHead>;
  malformed: MalformedHead[];
}

/** Every well-formed chain head as stored now (the legacy segment's under "legacy"). */
export async function readHeads(): Promise<Map<string, ChainHead>> {
  return (await readHeadDocs()).heads;
}

/** Every chain head as stored now. A malformed head (a NaN seq, a foreign id) is listed apart, never thrown. */
export async function readHeadDocs(): Promise<HeadRead> {
  const col = db().collection(COLLECTIONS.retentionJobs);
  const [snap, legacy] = await Promise.all([
    col
      .where(FieldPath.documentId(), ">=", col.doc(HEAD_PREFIX))
      .where(FieldPath.documentId(), "<", col.doc(`${HEAD_PREFIX}\uf8ff`))
      .get(),
    headRef(LEGACY_SEGMENT).get(),
  ]);
  const heads = new Map<string, ChainHead>();
  const malformed: MalformedHead[] = [];
  const take = (docId: string, shard: string, data: unknown) => {
    const why = isShardLabel(shard) || shard === LEGACY_SEGMENT ? malformedHead(data) : `${shard} is no chain`;
    if (why) malformed.push({ docId, shard, detail: why });
    else {
      const h = data as ChainHead;
      heads.set(shard, { seq: h.seq, hash: h.hash });
    }
  };
  if (legacy.exists) take(LEGACY_HEAD_DOC, LEGACY_SEGMENT, legacy.data());
  for (const d of snap.docs) take(d.id, d.id.slice(HEAD_PREFIX.length), d.data());
  return { heads, malformed };
}

/**
 * A stored entry, if it is well formed, hashes to its hash and carries a MAC under one of the given keys (with no
 * keys, a reader without the key, the MAC cannot be checked and a well-formed, hash-matching entry is taken).
 */
function signedEntry(data: unknown, keys: ReadonlyMap<string, string> | null): ChainedEvidence | null {
  if (malformedEntry(data) !== null) return null;
  const e = data as ChainedEvidence;
  if (!entryHashMatches(e)) return null;
  if (keys === null) return typeof e.mac === "string" ? e : null;
  const secret = typeof e.keyId === "string" ? keys?.get(e.keyId) : undefined;
  return secret !== undefined && entryMac(secret, e.hash) === e.mac ? e : null;
}

/**
 * What the ledger's migration entry attests (undefined: there is none yet), from the entries themselves: only an
 * entry signed with the evidence key counts, so a hand-written one is ignored.
 */
export async function readMigration(): Promise<{ legacy: LegacyAttestation | null; docId: string } | undefined> {
  const found = (await signedEntriesOf(MIGRATION_ACTION))
    .map((x) => ({ id: x.id, a: migrationAttestation(x.e) }))
    .filter((x): x is { id: string; a: NonNullable<ReturnType<typeof migrationAttestation>> } => x.a !== null)
    .sort((x, y) => x.a.atMs - y.a.atMs);
  const first = found[0];
  return first ? { legacy: first.a.legacy, docId: first.id } : undefined;
}

/** The entries of one action that are signed with the evidence key (hand-written ones are left out). */
async function signedEntriesOf(action: string): Promise<{ id: string; e: ChainedEvidence }[]> {
  const keys = verifierKeys();
  // Unordered and bounded: a few hand-written documents with the action cannot crowd out the signed one.
  const snap = await db().collection(COLLECTIONS.deletionAudits).where("action", "==", action).limit(500).get();
  return snap.docs.map((d) => ({ id: d.id, e: signedEntry(d.data(), keys) })).filter((x): x is { id: string; e: ChainedEvidence } => x.e !== null);
}

/**
 * How far the legacy segment counts, from signed entries alone: the head the migration entry names, or further
 * to a seal's head; 0 when no migration entry names a segment (then none of it counts). What an explanation
 * checks a legacy entry against, without walking the ledger.
 */
export async function attestedLegacySeq(): Promise<number> {
  const migration = await readMigration();
  if (!migration?.legacy) return 0;
  const seals = (await signedEntriesOf(SEAL_ACTION)).map((x) => sealCheckpoint(x.e)?.seq ?? 0);
  return Math.max(migration.legacy.seq, ...seals);
}

/**
 * Writes the ledger's migration entry once: the legacy segment's head and entry count as they are now, or that
 * there is none. It runs with the first anchor of the keyed ledger, so what it names is what the first release
 * left (a segment written by hand later is not named, and is reported). Returns what the ledger's migration
 * entry attests, whether written now or before.
 */
export async function recordMigration(nowMs: number): Promise<LegacyAttestation | null> {
  const existing = await readMigration();
  if (existing) return existing.legacy;
  const marker = db().collection(COLLECTIONS.retentionJobs).doc(MIGRATION_DOC);
  const audits = db().collection(COLLECTIONS.deletionAudits);
  return db().runTransaction(async (tx) => {
    const [mark, head, count] = await Promise.all([
      tx.get(marker),
      tx.get(headRef(LEGACY_SEGMENT)),
      tx.get(audits.where(FieldPath.documentId(), "<", audits.doc("s")).count()),
    ]);
    const raw = head.data();
    const legacy = head.exists && malformedHead(raw) === null ? { seq: (raw as ChainHead).seq, hash: (raw as ChainHead).hash, count: count.data().count } : null;
    // The marker without a signed migration entry: the entry was deleted (the anchors report it). Nothing is
    // attested then, so nothing is sealed.
    if (mark.exists) return null;
    const evidence = await openEvidence(tx, SEAL_SHARD_KEY);
    const entry = evidence.append(migrationBody(legacy, policy().version, nowMs));
    tx.create(marker, { migratedBy: entryDocId(entry), atMs: nowMs });
    return legacy;
  }, EVIDENCE_TX);
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
export async function sealLegacySegment(nowMs: number, quietMs: number = LEGACY_QUIET_MS, attested: LegacyAttestation | null = null): Promise<ChainHead | null> {
  // Only a segment the migration entry names is sealed: a seal of a hand-made one would sign a forgery.
  if (!attested) return null;
  const ref = headRef(LEGACY_SEGMENT);
  return db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const raw = snap.data();
    const head = snap.exists && malformedHead(raw) === null ? { seq: (raw as ChainHead).seq, hash: (raw as ChainHead).hash } : null;
    if (!head || typeof snap.get("sealedSeq") === "number" || head.seq < attested.seq) return null;
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
  /** What the anchor could not anchor or do (malformed heads, an unattested legacy head, a failed seal). */
  incidents: string[];
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Anchors the ledger now: writes the migration entry once, seals the legacy segment if it is quiet, reads every
 * chain head, signs the well-formed ones as one anchor and writes it outside the database
 * (platform/anchors.ts). Nothing it finds stops it: a malformed head, an unattested legacy head or a failed
 * seal is left out and recorded as an incident (a log event and, unless a dry run, an evidence entry), and
 * every well-formed head is anchored all the same. An anchor's time is the wall clock taken after its heads
 * were read, never `asOf`: every head it names existed by then (which a bundle's cut relies on). A dry run
 * reads and signs, and writes nothing.
 */
export async function anchorEvidence(opts: { clock?: () => number; dryRun?: boolean; legacyQuietMs?: number } = {}): Promise<AnchorOutcome> {
  const clock = opts.clock ?? Date.now;
  const key = signingKey();
  const incidents: string[] = [];
  let attested: LegacyAttestation | null | undefined;
  let sealed: ChainHead | null = null;
  try {
    attested = opts.dryRun ? (await readMigration())?.legacy : await recordMigration(clock());
  } catch (err) {
    incidents.push(`the migration entry could not be read or written: ${message(err)}`);
  }
  if (!opts.dryRun) {
    try {
      sealed = await sealLegacySegment(clock(), opts.legacyQuietMs, attested ?? null);
    } catch (err) {
      incidents.push(`the legacy segment could not be sealed: ${message(err)}`);
    }
  }
  const { heads, malformed } = await readHeadDocs();
  for (const m of malformed) incidents.push(`head ${m.docId} is malformed (${m.detail}); not anchored`);
  const legacy = heads.get(LEGACY_SEGMENT);
  if (legacy && (!attested || legacy.seq < attested.seq)) {
    heads.delete(LEGACY_SEGMENT);
    incidents.push(`the legacy head (seq ${legacy.seq}) is not named by the ledger's migration entry; not anchored`);
  }
  const anchor = makeAnchor({ projectId: settings.projectId(), databaseId: governedDatabaseId(), atMs: clock(), heads: Object.fromEntries([...heads].sort(([a], [b]) => (a < b ? -1 : 1))) }, key);
  const sinks = opts.dryRun ? [] : await publishAnchor({ event: ANCHOR_EVENT, anchor }, anchor.databaseId);
  log.info("evidence.anchored", { chains: heads.size, sealed: sealed !== null, dryRun: opts.dryRun === true, sinks: sinks.join(","), incidents: incidents.length });
  if (incidents.length > 0) {
    log.error("evidence.anchor.incident", { incidents: incidents.slice(0, 20), count: incidents.length, dryRun: opts.dryRun === true });
    if (!opts.dryRun) await recordIncident(incidents, malformed, clock());
  }
  return { anchor, sinks, sealed, incidents };
}

/** The incident as evidence, after the anchor is out: a failure to record it is logged, never thrown. */
async function recordIncident(incidents: readonly string[], malformed: readonly MalformedHead[], nowMs: number): Promise<void> {
  try {
    await recordEvidence(INCIDENT_SHARD_KEY, {
      action: ANCHOR_INCIDENT_ACTION,
      actor: { type: "system", id: "evidenceAnchor" },
      decision: { reason: "ANCHOR_INCOMPLETE" },
      policyVersion: policy().version,
      atMs: nowMs,
      paths: malformed.slice(0, 100).map((m) => `${COLLECTIONS.retentionJobs}/${m.docId}`),
      counts: { incidents: incidents.length, malformedHeads: malformed.length },
      detail: { first: incidents[0]!.slice(0, 300) },
    });
  } catch (err) {
    log.error("evidence.anchor.incident", { recorded: false, error: message(err) });
  }
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
    incidents: r.incidents.length,
  };
}
