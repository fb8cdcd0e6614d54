import { createHmac } from "node:crypto";
import { canonicalJson, sha256Hex } from "../kernel/canonical";

import type { Actor } from "../kernel/actor";

export type { Actor };

/**
 * The evidence ledger's rules, pure: how an entry is chained and signed, which chain (shard) a subject's
 * evidence goes to, how an anchor is made, and how a chain is verified against its head, its MACs and the
 * anchored points. docs/decisions/0006-evidence-chain.md says why.
 */

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
  /** The chain the entry belongs to (`s0042`). Absent on the legacy segment, whose entries predate shards. */
  shard?: string;
  seq: number;
  prevHash: string;
  hash: string;
  /** HMAC-SHA256 of `hash` under the evidence key. Absent on the legacy segment. */
  mac?: string;
  /** Which key made `mac` ({@link evidenceKeyId}). */
  keyId?: string;
}

export const GENESIS_HASH = "0".repeat(64);

/**
 * The first release's single chain: `deletionAudits/{seq:012d}` with its head at
 * `retentionJobs/evidence-chain-head`, no shard and no MAC. It stays the ledger's first segment, verified by
 * its hashes, sealed into the keyed ledger by an EVIDENCE_SEGMENT_SEALED entry, and anchored like a shard.
 */
export const LEGACY_SEGMENT = "legacy";

/** The action of the entry that seals the legacy segment at a head (its seq and hash, in detail). */
export const SEAL_ACTION = "EVIDENCE_SEGMENT_SEALED";

/**
 * The most chains a ledger may have (RETENTION_EVIDENCE_SHARDS is bounded by it). An anchor names every head in
 * one log entry: 2,048 heads is about 211 KB, under Cloud Logging's 256 KB limit on one entry.
 */
export const MAX_SHARDS = 2048;

/**
 * hash = SHA-256(prevHash + "\n" + canonical JSON of {seq, ...body}). The body of a sharded entry includes
 * its `shard`, so an entry cannot be moved to another chain; a legacy entry's body has none, which is exactly
 * the first release's formula.
 */
export function chainHash(prevHash: string, seq: number, body: EvidenceBody & { shard?: string }): string {
  return sha256Hex(`${prevHash}\n${canonicalJson({ ...body, seq })}`);
}

/** An entry's fields split into what its hash covers and the chain's own fields. */
function partsOf(entry: ChainedEvidence): { seq: number; prevHash: string; hash: string; mac: string | undefined; keyId: string | undefined; hashed: EvidenceBody & { shard?: string } } {
  const { seq, prevHash, hash, mac, keyId, ...hashed } = entry;
  return { seq, prevHash, hash, mac, keyId, hashed };
}

/** Whether an entry's hash matches its content. */
export function entryHashMatches(entry: ChainedEvidence): boolean {
  const p = partsOf(entry);
  return chainHash(p.prevHash, p.seq, p.hashed) === p.hash;
}

// ---- keys -------------------------------------------------------------------------------------------------

/** A key the ledger signs with: its secret and its public fingerprint. */
export interface EvidenceKey {
  id: string;
  secret: string;
}

/** The keys a verifier knows, by id. */
export type KeyRing = ReadonlyMap<string, string>;

/** A key's fingerprint, stored on every entry it signs: it names the key and reveals nothing of it. */
export function evidenceKeyId(secret: string): string {
  return sha256Hex(`retention-evidence-key-id\n${secret}`).slice(0, 16);
}

export function evidenceKey(secret: string): EvidenceKey {
  return { id: evidenceKeyId(secret), secret };
}

export function keyRing(secrets: readonly string[]): KeyRing {
  return new Map(secrets.map((s) => [evidenceKeyId(s), s]));
}

/** HMAC-SHA256 under `secret` of a domain-separated message, hex. Each use has its own domain. */
export function keyedHash(secret: string, domain: string, message: string): string {
  return createHmac("sha256", secret).update(`${domain}\n${message}`, "utf8").digest("hex");
}

/** The MAC of an entry: over its hash, which covers its shard, seq, link and content. */
export function entryMac(secret: string, hash: string): string {
  return keyedHash(secret, "retention-evidence-entry/v1", hash);
}

/**
 * A keyed hash of a subject (a uid, a tenant id): stable for one key, useless to anyone without it, so a
 * record can name a subject without holding the raw id (the erasure ledger's use).
 */
export function subjectHash(secret: string, subject: string): string {
  return keyedHash(secret, "retention-subject/v1", subject);
}

// ---- shards and ids ---------------------------------------------------------------------------------------

/** Chain `index` of the ledger, as its id: `s0000` .. `s2047`. */
export function shardLabel(index: number): string {
  return `s${String(index).padStart(4, "0")}`;
}

/**
 * The chain a subject's evidence goes to: a stable hash of the key (a request id, a hold id, a document path,
 * a purge unit key), modulo the number of chains. The same key always lands in the same chain while the count
 * stays; changing the count moves keys to other chains and invalidates nothing (each chain stands alone).
 */
export function shardFor(key: string, shardCount: number): string {
  if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > MAX_SHARDS) throw new Error(`shard count must be 1..${MAX_SHARDS}, got ${shardCount}`);
  const h = sha256Hex(`retention-evidence-shard\n${key}`);
  return shardLabel(Number.parseInt(h.slice(0, 12), 16) % shardCount);
}

const SEQ_WIDTH = 12;
const SHARD_RE = /^s\d{4}$/;

export const isShardLabel = (s: string): boolean => SHARD_RE.test(s);

/**
 * Evidence documents: `{shard}-{seq:012d}` (e.g. `s0042-000000000017`), or `{seq:012d}` on the legacy segment.
 * A chain's ids sort by seq, so one ordered range read walks it; the ledger's writes land at the ends of up
 * to RETENTION_EVIDENCE_SHARDS separate key ranges, each growing at one chain's rate (docs/SCALE.md).
 */
export function evidenceDocId(shard: string, seq: number): string {
  const s = String(seq).padStart(SEQ_WIDTH, "0");
  return shard === LEGACY_SEGMENT ? s : `${shard}-${s}`;
}

/** The chain and seq a document id names, or null for an id no entry can have. */
export function parseEvidenceDocId(docId: string): { shard: string; seq: number } | null {
  let m = /^(\d{12})$/.exec(docId);
  if (m) return { shard: LEGACY_SEGMENT, seq: Number(m[1]) };
  m = /^(s\d{4})-(\d{12})$/.exec(docId);
  return m ? { shard: m[1]!, seq: Number(m[2]) } : null;
}

/** The chain an entry belongs to. */
export const shardOf = (entry: Pick<ChainedEvidence, "shard">): string => entry.shard ?? LEGACY_SEGMENT;

/** The document id of an entry. */
export const entryDocId = (entry: Pick<ChainedEvidence, "shard" | "seq">): string => evidenceDocId(shardOf(entry), entry.seq);

// ---- appending --------------------------------------------------------------------------------------------

export interface ChainHead {
  seq: number;
  hash: string;
}

/** The next entry of `shard` after `prev` (null: the chain's first), signed with `key`. */
export function chainEntry(shard: string, prev: ChainHead | null, body: EvidenceBody, key: EvidenceKey): ChainedEvidence {
  if (!isShardLabel(shard)) throw new Error(`not a shard: ${shard} (the legacy segment is never appended to)`);
  const seq = prev ? prev.seq + 1 : 1;
  const prevHash = prev ? prev.hash : GENESIS_HASH;
  const hashed = { ...body, shard };
  const hash = chainHash(prevHash, seq, hashed);
  return { ...hashed, seq, prevHash, hash, mac: entryMac(key.secret, hash), keyId: key.id };
}

// ---- anchors ----------------------------------------------------------------------------------------------

/**
 * An anchor: every chain head at one moment, written outside the database (a log routed to a locked bucket in
 * production, a named database on the emulators). The ledger must always contain each anchored entry with the
 * anchored hash: a truncation, a rewrite, a wiped ledger or a deleted chain breaks that.
 */
export interface EvidenceAnchor {
  v: 1;
  projectId: string;
  databaseId: string;
  /** Wall-clock time the heads were read. */
  atMs: number;
  /** Non-empty chains only, the legacy segment under "legacy". */
  heads: Record<string, ChainHead>;
  /**
   * "append": one chain's new head, recorded right after the append that made it committed (the per-append
   * record, {@link HEAD_EVENT}). Absent on the periodic anchor, which names every head. The MAC covers it.
   */
  scope?: "append";
  keyId: string;
  mac: string;
}

/** The periodic anchor's log event: every chain head. */
export const ANCHOR_EVENT = "retention.evidence.anchor";
/** The per-append record's log event: one chain's head right after an append committed. */
export const HEAD_EVENT = "retention.evidence.head";
/** Every event the anchor store keeps. */
export const ANCHOR_STORE_EVENTS = [ANCHOR_EVENT, HEAD_EVENT] as const;

/**
 * The Cloud Logging sink's filter that routes the anchor store's entries to the locked bucket
 * (docs/EVIDENCE-LEDGER.md gives the commands). It lives here only: the docs quote it, and
 * test/unit/evidence/sink-filter.test.ts evaluates it against the log entries the code writes, in every form
 * they take (a function's stdout line as Cloud Logging stores it, the Logging API's entry).
 */
export const ANCHOR_SINK_FILTER = ANCHOR_STORE_EVENTS.map((e) => `jsonPayload.event="${e}"`).join(" OR ");

export function anchorMac(secret: string, anchor: Omit<EvidenceAnchor, "mac" | "keyId">): string {
  return keyedHash(secret, "retention-evidence-anchor/v1", canonicalJson(anchor));
}

export function makeAnchor(a: Omit<EvidenceAnchor, "v" | "mac" | "keyId">, key: EvidenceKey): EvidenceAnchor {
  const body = { v: 1 as const, projectId: a.projectId, databaseId: a.databaseId, atMs: a.atMs, heads: a.heads, ...(a.scope ? { scope: a.scope } : {}) };
  return { ...body, keyId: key.id, mac: anchorMac(key.secret, body) };
}

/** The per-append record of one chain's new head: an anchor of that chain alone, signed like the others. */
export function makeHeadRecord(a: { projectId: string; databaseId: string; atMs: number; shard: string; head: ChainHead }, key: EvidenceKey): EvidenceAnchor {
  return makeAnchor({ projectId: a.projectId, databaseId: a.databaseId, atMs: a.atMs, heads: { [a.shard]: { seq: a.head.seq, hash: a.head.hash } }, scope: "append" }, key);
}

const HASH_RE = /^[0-9a-f]{64}$/;
const isPositiveInt = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 1;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Why a stored head is not a head (a seq that is no positive integer, a hash that is no SHA-256), or null. */
export function malformedHead(value: unknown): string | null {
  if (!isObject(value)) return "the head is not an object";
  if (!isPositiveInt(value.seq)) return `its seq is ${describeValue(value.seq)}, not a positive integer`;
  if (typeof value.hash !== "string" || !HASH_RE.test(value.hash)) return `its hash is ${describeValue(value.hash)}, not a SHA-256`;
  return null;
}

/** A value as a finding names it (never its content beyond a short prefix). */
export function describeValue(v: unknown): string {
  if (typeof v === "number") return Number.isNaN(v) ? "NaN" : String(v);
  if (typeof v === "string") return v.length > 16 ? `"${v.slice(0, 16)}…"` : JSON.stringify(v);
  if (v === null) return "null";
  if (v === undefined) return "missing";
  return Array.isArray(v) ? "an array" : typeof v;
}

/**
 * Why a stored entry cannot be an entry (a chain field of the wrong type, a body field of the wrong type, a
 * number that is not finite), or null. A malformed entry is a finding of its own: the walk goes on past it, so
 * one bad value can never hide what else the ledger shows.
 */
export function malformedEntry(value: unknown): string | null {
  if (!isObject(value)) return "the document is not an object";
  if (!isPositiveInt(value.seq)) return `seq is ${describeValue(value.seq)}, not a positive integer`;
  for (const f of ["prevHash", "hash"] as const) if (typeof value[f] !== "string" || !HASH_RE.test(value[f])) return `${f} is ${describeValue(value[f])}, not a SHA-256`;
  for (const f of ["action", "policyVersion"] as const) if (typeof value[f] !== "string") return `${f} is ${describeValue(value[f])}, not a string`;
  if (typeof value.atMs !== "number" || !Number.isFinite(value.atMs)) return `atMs is ${describeValue(value.atMs)}, not a time`;
  if (!isObject(value.actor) || typeof value.actor.type !== "string" || typeof value.actor.id !== "string") return "actor is not {type, id}";
  if (!isObject(value.decision) || typeof value.decision.reason !== "string") return "decision has no reason";
  for (const f of ["shard", "mac", "keyId"] as const) if (value[f] !== undefined && typeof value[f] !== "string") return `${f} is ${describeValue(value[f])}, not a string`;
  const bad = firstNonFinite(value, "");
  if (bad !== null) return `${bad} is not a finite number`;
  return null;
}

/** The path of the first number in `v` that is NaN or infinite (which no canonical JSON, so no hash, can hold). */
function firstNonFinite(v: unknown, path: string): string | null {
  if (typeof v === "number") return Number.isFinite(v) ? null : path || "the value";
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = firstNonFinite(v[i], `${path}[${i}]`);
      if (p !== null) return p;
    }
    return null;
  }
  if (isObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      const p = firstNonFinite(x, path ? `${path}.${k}` : k);
      if (p !== null) return p;
    }
  }
  return null;
}

/** Why an anchor (or head record) is malformed, or null. */
export function malformedAnchor(a: Record<string, unknown>): string | null {
  if (a.v !== 1) return `v is ${describeValue(a.v)}`;
  for (const f of ["projectId", "databaseId", "keyId", "mac"] as const) if (typeof a[f] !== "string") return `${f} is ${describeValue(a[f])}`;
  if (typeof a.atMs !== "number" || !Number.isFinite(a.atMs)) return `atMs is ${describeValue(a.atMs)}`;
  if (a.scope !== undefined && a.scope !== "append") return `scope is ${describeValue(a.scope)}`;
  if (!isObject(a.heads)) return "it names no heads";
  for (const [shard, head] of Object.entries(a.heads)) {
    const why = malformedHead(head);
    if (why) return `head ${shard}: ${why}`;
  }
  return null;
}

/** What one line of an anchor export holds: an anchor, something that claims to be one and is malformed, or neither. */
export type AnchorLine = { anchor: EvidenceAnchor } | { malformed: string } | null;

/**
 * An anchor found in a log line, in any of the shapes an anchor travels in: the line `logSync` writes to
 * stdout (the payload's fields at the top), a LogEntry as a Cloud Storage sink stores it (`jsonPayload`), or
 * the bare anchor. Null when the line is something else; `malformed` when it is an anchor event, or looks like
 * an anchor, but does not hold a well-formed one (wrong types, NaN, missing fields).
 */
export function anchorFromLogLine(value: unknown): AnchorLine {
  if (!isObject(value)) return null;
  const payload = isObject(value.jsonPayload) ? value.jsonPayload : value;
  const claimed = typeof payload.event === "string" && (ANCHOR_STORE_EVENTS as readonly string[]).includes(payload.event);
  const candidate = isObject(payload.anchor) ? payload.anchor : claimed ? null : payload;
  if (candidate === null) return { malformed: `a ${String(payload.event)} entry without an anchor` };
  if (!claimed && !(candidate.v === 1 && "heads" in candidate)) return null;
  const why = malformedAnchor(candidate);
  return why ? { malformed: why } : { anchor: candidate as unknown as EvidenceAnchor };
}

/** A point the ledger must contain: an anchored head, or the head a seal names. */
export interface Checkpoint extends ChainHead {
  /** Where it comes from, for the finding: "anchor 2026-06-01T00:10:00.000Z", "seal s0042-000000000003". */
  source: string;
  /**
   * Held only where the chain reaches it: an anchor made after a bundle's cut may name entries the bundle
   * rightly ends before, but an entry the bundle does hold must have the hash that anchor saw.
   */
  reachOnly?: boolean;
}

export type ChainProblem =
  /** The entry's content no longer matches its hash. */
  | "EDITED"
  /** A gap in seq, or the head is ahead of the last entry. */
  | "REMOVED"
  /** A repeated seq, an id that does not match its seq and chain, or a document that is no entry. */
  | "INSERTED"
  | "BROKEN_LINK"
  | "HEAD_MISMATCH"
  /** An entry of a keyed chain without a MAC. */
  | "UNSIGNED"
  /** The MAC does not match: the entry was written, or re-hashed, without the key. */
  | "BAD_MAC"
  /** Signed with a key the verifier was not given. */
  | "UNKNOWN_KEY"
  /** An anchored (or sealed) entry is there with another hash: rewritten since it was anchored. */
  | "ANCHOR_MISMATCH"
  /** The chain ends before an anchored (or sealed) entry: truncated, with its head rewound. */
  | "TRUNCATED"
  /** A chain the anchors (or a seal) say had entries has none. */
  | "SEGMENT_MISSING"
  /** No entries at all, while anchors say there was evidence. */
  | "LEDGER_WIPED"
  /** An anchor that does not verify, or two anchors that disagree about one entry. */
  | "BAD_ANCHOR"
  /** An entry, a head or an anchor that is not one: wrong types, NaN, missing fields. Named by its document. */
  | "MALFORMED"
  /** The newest periodic anchor is older than twice the anchor schedule (or there is none): the anchors stopped. */
  | "ANCHOR_STALE"
  /** A legacy segment (or a part of one, or a seal of one) that the ledger's signed migration entry does not name. */
  | "UNATTESTED_SEGMENT";

export interface ChainFinding {
  problem: ChainProblem;
  shard: string;
  seq: number;
  docId?: string;
  detail: string;
}

/**
 * The anchored points, by chain, from anchors in any order. An anchor that does not verify under a known key
 * is reported and not used; without keys (`null`, an auditor without the key) every anchor is used as found.
 * Two anchors that name one entry with different hashes prove a rewrite between them: BAD_ANCHOR.
 *
 * `cutAtMs` (a bundle's cut): anchors made after it give reach-only points ({@link Checkpoint.reachOnly}), so a
 * bundle whose stated cut was moved back still has every entry it holds checked against every anchor. They are
 * counted apart (`afterCut`); `count` and `latestAtMs` are the anchors at or before the cut.
 */
export function anchorCheckpoints(
  anchors: Iterable<EvidenceAnchor>,
  keys: KeyRing | null,
  cutAtMs: number = Number.POSITIVE_INFINITY,
): { points: Map<string, Map<number, Checkpoint>>; count: number; afterCut: number; appendRecords: number; latestAtMs: number | null; findings: ChainFinding[] } {
  const points = new Map<string, Map<number, Checkpoint>>();
  const findings: ChainFinding[] = [];
  let count = 0;
  let afterCut = 0;
  let appendRecords = 0;
  let latestAtMs: number | null = null;
  // Oldest first, so the first anchor to name an entry is the one a finding cites, and a point held in full
  // (at or before the cut) is never weakened by a later reach-only one.
  for (const a of [...anchors].sort((x, y) => x.atMs - y.atMs)) {
    const at = new Date(a.atMs).toISOString();
    const what = a.scope === "append" ? "head record" : "anchor";
    if (keys) {
      const secret = keys.get(a.keyId);
      const { mac, keyId, ...body } = a;
      void keyId;
      if (!secret || anchorMac(secret, body) !== mac) {
        findings.push({ problem: "BAD_ANCHOR", shard: "-", seq: 0, detail: `${what} of ${at} ${secret ? "does not match its MAC" : `is signed with unknown key ${a.keyId}`}; not used` });
        continue;
      }
    }
    const reachOnly = a.atMs > cutAtMs;
    if (reachOnly) afterCut++;
    else if (a.scope === "append") appendRecords++;
    else {
      count++;
      latestAtMs = Math.max(latestAtMs ?? a.atMs, a.atMs);
    }
    for (const [shard, head] of Object.entries(a.heads)) {
      let byShard = points.get(shard);
      if (!byShard) points.set(shard, (byShard = new Map<number, Checkpoint>()));
      const seen = byShard.get(head.seq);
      if (seen && seen.hash !== head.hash) {
        findings.push({ problem: "BAD_ANCHOR", shard, seq: head.seq, detail: `${seen.source} and ${what} ${at} disagree about entry ${head.seq}: it was rewritten between them` });
      }
      if (!seen) byShard.set(head.seq, { seq: head.seq, hash: head.hash, source: `${what} ${at}`, ...(reachOnly ? { reachOnly: true } : {}) });
    }
  }
  return { points, count, afterCut, appendRecords, latestAtMs, findings };
}

/**
 * How far the ledger runs ahead of its anchors: the chains whose head is past the last point the anchors (or
 * head records) hold for them, and how many entries that is. What a truncation could still cut unnoticed.
 */
export function beyondAnchors(heads: ReadonlyMap<string, ChainHead>, points: ReadonlyMap<string, ReadonlyMap<number, Checkpoint>>): { chains: number; entries: number } {
  let chains = 0;
  let entries = 0;
  for (const [shard, head] of heads) {
    let anchored = 0;
    for (const cp of points.get(shard)?.values() ?? []) if (!cp.reachOnly && cp.seq > anchored) anchored = cp.seq;
    if (head.seq > anchored) {
      chains++;
      entries += head.seq - anchored;
    }
  }
  return { chains, entries };
}

/**
 * The interval of the anchor schedule, for the staleness check: a cron whose minute field is `*\/N` (every N
 * minutes) or a fixed minute with an `*\/N` or `*` hour (every N hours, hourly), or App Engine's `every N
 * minutes|hours`. Null for a schedule of another shape (the caller then asks for the interval).
 */
export function scheduleIntervalMs(schedule: string): number | null {
  const s = schedule.trim();
  const every = /^every (\d+) (minutes?|mins?|hours?)$/i.exec(s);
  if (every) return Number(every[1]) * (every[2]!.toLowerCase().startsWith("h") ? 3_600_000 : 60_000);
  const f = s.split(/\s+/);
  if (f.length !== 5 || f.slice(2).some((x) => x !== "*")) return null;
  const [min, hour] = f as [string, string];
  const step = (x: string): number | null => (x === "*" ? 1 : /^\*\/(\d+)$/.test(x) ? Number(x.slice(2)) : null);
  if (hour === "*" && min.startsWith("*")) return step(min) === null ? null : step(min)! * 60_000;
  if (/^\d+$/.test(min)) return step(hour) === null ? null : step(hour)! * 3_600_000;
  return null;
}

// ---- verification -----------------------------------------------------------------------------------------

export interface WalkOptions {
  /** The keys to check MACs with; null checks none (what a reader without the key can do). */
  keys: KeyRing | null;
  /** Entries the chain must contain with these hashes (anchored heads, sealed heads), by seq. */
  checkpoints?: ReadonlyMap<number, Checkpoint>;
}

/**
 * One chain, walked in seq order as a fold: `push` each entry (page by page, memory one entry), then `finish`
 * with the chain's head. Reports every entry that was edited (hash), forged or re-hashed without the key (MAC),
 * removed (a gap, or the head ahead of the last entry), inserted (a repeated seq, an id that does not match
 * its chain and seq) or relinked; and every checkpoint the chain does not contain as it was (rewritten) or no
 * longer reaches (truncated).
 */
export class ChainWalk {
  private prev: ChainHead | null = null;
  private prevDocId: string | null = null;
  private count = 0;
  private readonly legacy: boolean;

  constructor(
    readonly shard: string,
    private readonly opts: WalkOptions,
  ) {
    this.legacy = shard === LEGACY_SEGMENT;
  }

  get checked(): number {
    return this.count;
  }

  /** The last entry walked, and its document id. */
  get last(): (ChainHead & { docId: string }) | null {
    return this.prev && this.prevDocId !== null ? { ...this.prev, docId: this.prevDocId } : null;
  }

  push(docId: string, entry: ChainedEvidence): ChainFinding[] {
    const out: ChainFinding[] = [];
    const { seq, prevHash, hash, mac, keyId, hashed } = partsOf(entry);
    const f = (problem: ChainProblem, detail: string, at = seq) => out.push({ problem, shard: this.shard, seq: at, docId, detail });
    this.count++;
    if (docId !== evidenceDocId(this.shard, seq) || (this.legacy ? entry.shard !== undefined : entry.shard !== this.shard)) {
      f("INSERTED", `document ${docId} claims ${entry.shard ? `chain ${entry.shard}, ` : ""}seq ${seq}`);
    }
    const expectedSeq = this.prev ? this.prev.seq + 1 : 1;
    const gap = seq > expectedSeq;
    if (this.prev && seq <= this.prev.seq) f("INSERTED", `seq ${seq} appears after seq ${this.prev.seq}`);
    else if (gap) f("REMOVED", `entries ${expectedSeq}..${seq - 1} are missing`, expectedSeq);
    const contentOk = chainHash(prevHash, seq, hashed) === hash;
    if (!contentOk) f("EDITED", "hash does not match the entry's content");
    const expectedPrev = this.prev ? this.prev.hash : GENESIS_HASH;
    if (prevHash !== expectedPrev && !gap) f("BROKEN_LINK", "prevHash does not match the previous entry");
    if (!this.legacy) {
      if (typeof mac !== "string" || typeof keyId !== "string") f("UNSIGNED", "the entry carries no MAC");
      else if (this.opts.keys) {
        const secret = this.opts.keys.get(keyId);
        if (secret === undefined) f("UNKNOWN_KEY", `signed with key ${keyId}, which the verifier was not given`);
        // An edited entry already fails its hash; a MAC over a matching hash that fails is a re-hash or a forgery.
        else if (entryMac(secret, hash) !== mac && contentOk) f("BAD_MAC", "the MAC does not match: written or re-hashed without the evidence key");
      }
    }
    const cp = this.opts.checkpoints?.get(seq);
    if (cp && cp.hash !== hash) f("ANCHOR_MISMATCH", `${cp.source} recorded another hash for this entry: rewritten since`);
    this.prev = { seq, hash };
    this.prevDocId = docId;
    return out;
  }

  /**
   * A malformed entry (reported by the caller as MALFORMED): the walk takes its place in the chain from its id
   * and its stored hash, so the entries after it are judged as usual and one bad value hides nothing else.
   */
  skip(docId: string, seq: number, hash: unknown): void {
    this.count++;
    this.prev = { seq, hash: typeof hash === "string" ? hash : "" };
    this.prevDocId = docId;
  }

  /**
   * Ends the walk: the head must name the last entry, and every checkpoint must have been reached. A head that
   * is there but malformed (`"malformed"`, already reported) is not compared.
   */
  finish(head: ChainHead | null | "malformed"): ChainFinding[] {
    const out: ChainFinding[] = [];
    const lastSeq = this.prev?.seq ?? 0;
    if (head === "malformed") head = this.prev;
    if (head && (!this.prev || head.seq !== this.prev.seq || head.hash !== this.prev.hash)) {
      out.push({
        problem: head.seq > lastSeq ? "REMOVED" : "HEAD_MISMATCH",
        shard: this.shard,
        seq: head.seq,
        detail: `chain head says seq ${head.seq}, last entry is ${lastSeq}`,
      });
    }
    if (!head && this.prev) out.push({ problem: "HEAD_MISMATCH", shard: this.shard, seq: lastSeq, detail: `the chain has ${this.count} entries and no head` });
    let beyond: Checkpoint | null = null;
    for (const cp of this.opts.checkpoints?.values() ?? []) if (!cp.reachOnly && cp.seq > lastSeq && (!beyond || cp.seq > beyond.seq)) beyond = cp;
    if (beyond) {
      out.push(
        this.prev
          ? { problem: "TRUNCATED", shard: this.shard, seq: beyond.seq, detail: `${beyond.source} saw entry ${beyond.seq}; the chain ends at ${lastSeq}` }
          : { problem: "SEGMENT_MISSING", shard: this.shard, seq: beyond.seq, detail: `${beyond.source} saw ${beyond.seq} entries; the chain has none` },
      );
    }
    return out;
  }
}

/** Verifies one whole chain held in memory (tests, small segments). */
export function verifyChain(
  shard: string,
  entries: Iterable<{ docId: string; entry: ChainedEvidence }>,
  head: ChainHead | null,
  opts: WalkOptions = { keys: null },
): { ok: boolean; checked: number; findings: ChainFinding[] } {
  const walk = new ChainWalk(shard, opts);
  const findings: ChainFinding[] = [];
  for (const { docId, entry } of entries) findings.push(...walk.push(docId, entry));
  findings.push(...walk.finish(head));
  return { ok: findings.length === 0, checked: walk.checked, findings };
}

/** A seal's checkpoint on the legacy segment, from a verified EVIDENCE_SEGMENT_SEALED entry. */
export function sealCheckpoint(entry: ChainedEvidence): Checkpoint | null {
  const d = entry.detail ?? {};
  if (entry.action !== SEAL_ACTION || d.segment !== LEGACY_SEGMENT || typeof d.seq !== "number" || typeof d.hash !== "string") return null;
  return { seq: d.seq, hash: d.hash, source: `seal ${entryDocId(entry)}` };
}

/**
 * The entry that says, once per ledger, which legacy segment the ledger took over: the first release's head
 * (seq, hash) and how many entries it had, or none. Written by the first anchor of the keyed ledger
 * (evidence/anchor.ts). A legacy segment counts only if this entry names it: a segment written by hand into a
 * ledger that never had one, or grown past what this entry and the seal name, is UNATTESTED_SEGMENT.
 */
export const MIGRATION_ACTION = "EVIDENCE_LEDGER_MIGRATED";

export interface LegacyAttestation extends ChainHead {
  count: number;
}

export function migrationBody(legacy: LegacyAttestation | null, policyVersion: string, atMs: number): EvidenceBody {
  return {
    action: MIGRATION_ACTION,
    actor: { type: "system", id: "evidenceAnchor" },
    decision: { reason: "LEDGER_MIGRATION" },
    policyVersion,
    atMs,
    detail: { segment: LEGACY_SEGMENT, legacySeq: legacy?.seq ?? 0, legacyHash: legacy?.hash ?? null, legacyCount: legacy?.count ?? 0 },
  };
}

/** What a verified migration entry attests: the legacy segment's head and count, or that there was none. */
export function migrationAttestation(entry: ChainedEvidence): { legacy: LegacyAttestation | null; source: string; atMs: number } | null {
  const d = entry.detail ?? {};
  if (entry.action !== MIGRATION_ACTION || d.segment !== LEGACY_SEGMENT || typeof d.legacySeq !== "number" || typeof d.legacyCount !== "number") return null;
  const source = `migration ${entryDocId(entry)}`;
  if (d.legacySeq === 0) return { legacy: null, source, atMs: entry.atMs };
  if (typeof d.legacyHash !== "string") return null;
  return { legacy: { seq: d.legacySeq, hash: d.legacyHash, count: d.legacyCount }, source, atMs: entry.atMs };
}

/** Whether two migration entries say the same. */
export const sameAttestation = (a: LegacyAttestation | null, b: LegacyAttestation | null): boolean =>
  a === null || b === null ? a === b : a.seq === b.seq && a.hash === b.hash && a.count === b.count;

/** The body of the entry that seals the legacy segment at its head. */
export function sealBody(head: ChainHead, policyVersion: string, atMs: number): EvidenceBody {
  return {
    action: SEAL_ACTION,
    actor: { type: "system", id: "evidenceAnchor" },
    decision: { reason: "LEDGER_MIGRATION" },
    policyVersion,
    atMs,
    detail: { segment: LEGACY_SEGMENT, seq: head.seq, hash: head.hash },
  };
}

/**
 * The hold fence as the ledger's order across chains (docs/HOLD-FENCE.md). A placement or release records the
 * fence generation it wrote; a destructive transaction (a purge batch, a TTL delete) the generation it read.
 * Firestore serialises a fence read against a fence write, so a deletion that read generation r committed
 * before the placement that wrote g exactly when r < g. A covered path deleted at r violates a hold placed at
 * g and released at g' (null: still standing) exactly when g <= r and (g' is null or r < g').
 */
export function deletedWhileHeld(readGeneration: number, placedGeneration: number, releasedGeneration: number | null): boolean {
  return placedGeneration <= readGeneration && (releasedGeneration === null || readGeneration < releasedGeneration);
}
