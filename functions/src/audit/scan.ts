import { activeDataKeys } from "../shred/index";
import { orphanedDataKey } from "../shred/rules";
import { FieldPath, Timestamp, type DocumentData, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { answeredAtMs, ANSWERED_STATES } from "../requests/rules/legal-clock";
import {
  AUDITED_REQUEST_STATES,
  auditArchiveEntry,
  auditArchivedDoc,
  auditAnsweredRequest,
  auditDeletionRequest,
  auditProcessorNotice,
  auditGovernedDoc,
  CONFIRMED_AFTER_SCAN,
  DEADLINE_LOOKBACK_DAYS,
  DEFAULT_THRESHOLDS,
  FINDING_CODES,
  isHeld,
  keptByItsClass,
  needsArchiveCheck,
  needsPurgeOwnerCheck,
  staleHoldMarks,
  type AuditContext,
  type AuditDoc,
  type AuditThresholds,
  type Finding,
  type FindingCode,
  type ParentFacts,
} from "./rules";
import type { ActiveHoldRef } from "../kernel/held";
import { parentDocumentPath, segments } from "../kernel/paths";
import { OPEN_NOTICE_STATES } from "../kernel/processor-states";
import { newStats, tallyDoc, tallyRequest, type AuditStats } from "./stats";
import { auditObjects } from "./objects";
import { KeptAside, type KeptKind } from "./kept-aside";
import { storageSettings } from "../platform/storage";
import { pages } from "../platform/streams";
import { PurgeOwnerChecker } from "./purge-owners";
import { SubjectChecker } from "./subjects";
import { COLLECTIONS, db } from "../platform/firestore";
import { GOVERNED_FIELDS, toMs } from "../platform/governed-doc";
import { activeHolds } from "../holds/index";
import { policy, publishedVersions } from "../platform/registry";

export { DUE_BUCKETS, type AuditStats, type ClassStats, type UrgentRequest } from "./stats";


const VERIFICATION_FIELDS = ["sha256", "verifiedAt", "verified"] as const;
const ARCHIVE_FIELDS = ["sourcePath", ...VERIFICATION_FIELDS, "legalHold", "holdIds", "expireAt", "dataKey", "sealed.v"] as const;

/** Documents judged per chunk: with `select()` about 1 KB each, and one batched parent read per chunk. */
export const DEFAULT_AUDIT_PAGE_SIZE = 1_000;

/**
 * Collection groups scanned at once, by default every governed group (the registry's collection ids: a bounded,
 * small number). Each scan costs a stream start-up and, on an empty or small group, little else; run together,
 * the start-ups overlap instead of queueing, and the client's CPU, which limits the audit, is never idle waiting
 * on one. Memory stays at (chunk in hand + chunk streaming in) per scan. `concurrency` caps it.
 */
export const DEFAULT_AUDIT_CONCURRENCY = Number.POSITIVE_INFINITY;


/** Findings of each code listed even past `maxFindings` (AuditResult.findings). */
export const SAMPLE_PER_CODE = 10;

export interface ScanProgress {
  phase: string;
  scanned: number;
}

export interface ScanOptions {
  nowMs: number;
  pageSize?: number;
  concurrency?: number;
  /** Findings kept in memory (counts stay exact beyond it). */
  maxFindings?: number;
  thresholds?: AuditThresholds;
  /** Skip the Auth lookups (ORPHANED_SUBJECT), e.g. where no Auth endpoint is reachable. */
  skipSubjects?: boolean;
  /** Told after each page; the scan waits for a promise it returns before it reads on. */
  onProgress?: (p: ScanProgress) => void | Promise<void>;
}

export interface AuditResult {
  ok: boolean;
  nowMs: number;
  policyVersion: string;
  /**
   * Sorted by path, then code. When `truncated`: the first `maxFindings` found, and besides them the first
   * `SAMPLE_PER_CODE` of every code, so that a code found late (those confirmed once the scan is over) or rarely is
   * never left out of the list by a flood of another.
   */
  findings: Finding[];
  totalFindings: number;
  truncated: boolean;
  byCode: Record<FindingCode, number>;
  stats: AuditStats;
  durationMs: number;
}

/**
 * The retention audit's read side: streams every governed collection group, the archives and the unfinished
 * deletion requests in chunks ordered by document id, and hands each document to the pure rules in
 * `audit/rules.ts`. Memory is bounded by the chunk size times the concurrency, the Auth batch, the active
 * hold records and `maxFindings` (four times it for the findings kept aside until the scan is over), never by the size
 * of the data. Read-only.
 */
export async function scanRetention(opts: ScanOptions): Promise<AuditResult> {
  const started = Date.now();
  const run = new AuditRun(opts, await activeHolds());
  await Promise.all([
    run.topLevelCollections(),
    inPool(opts.concurrency ?? DEFAULT_AUDIT_CONCURRENCY, governedCollectionIds(), (id) => run.governedGroup(id)).then(async () => {
      await run.subjects.flush();
      await run.purgeEligible.flush();
    }),
    run.archives(),
    run.requests(),
    run.answeredRequests(),
    run.processorNotices(),
    run.objects(),
  ]);
  await run.confirmKeptAside(started);
  return run.result(Date.now() - started);
}

/** One audit run's state: the context the rules need, the findings (capped) and the counts. */
class AuditRun {
  readonly ctx: AuditContext;
  readonly subjects: SubjectChecker;
  readonly purgeEligible: PurgeOwnerChecker;
  private readonly findings: Finding[] = [];
  /** Past the cap, the first findings of each code that had fewer than SAMPLE_PER_CODE listed; and how many each has. */
  private readonly beyondCap: Finding[] = [];
  private readonly sampled = new Map<FindingCode, number>();
  /** Every data key reference an archive copy carries (one per subject with copies), for ORPHANED_DATA_KEY. */
  private readonly dataKeysInUse = new Set<string>();
  private readonly byCode = Object.fromEntries(FINDING_CODES.map((c) => [c, 0])) as Record<FindingCode, number>;
  private total = 0;
  /** The ids of the holds active when the audit started. */
  private readonly activeIds: ReadonlySet<string>;
  /** Findings that depend on hold records (CONFIRMED_AFTER_SCAN), confirmed once the scan is over. */
  private readonly keptAside: KeptAside;
  private readonly stats: AuditStats;
  private readonly pageSize: number;
  private readonly maxFindings: number;

  constructor(
    private readonly opts: ScanOptions,
    private readonly holds: ActiveHoldRef[],
  ) {
    this.ctx = {
      policy: policy(),
      publishedVersions: publishedVersions().map((p) => p.version),
      retentionByVersion: new Map(publishedVersions().map((p) => [p.version, p.retention])),
      activeHolds: holds,
      nowMs: opts.nowMs,
      thresholds: opts.thresholds ?? DEFAULT_THRESHOLDS,
    };
    this.activeIds = new Set(holds.map((h) => h.holdId));
    this.stats = newStats(holds.length);
    this.pageSize = opts.pageSize ?? DEFAULT_AUDIT_PAGE_SIZE;
    this.maxFindings = opts.maxFindings ?? 5_000;
    this.keptAside = new KeptAside(this.maxFindings);
    this.subjects = new SubjectChecker(opts.skipSubjects === true, (fs) => this.report(fs));
    this.purgeEligible = new PurgeOwnerChecker(opts.nowMs, (fs) => this.report(fs));
  }

  /** Counts findings and keeps the first `maxFindings`; those that depend on hold records wait for `confirmKeptAside`. */
  report(fs: readonly Finding[], kind: KeptKind = "document"): void {
    for (const f of fs) {
      if (f.holdIds !== undefined && CONFIRMED_AFTER_SCAN.has(f.code)) this.keptAside.offer({ ...f, holdIds: f.holdIds }, kind);
      else this.count(f.code, 1, [f]);
    }
  }

  private count(code: FindingCode, n: number, kept: readonly Finding[]): void {
    this.total += n;
    this.byCode[code] += n;
    for (const f of kept) {
      if (this.findings.length < this.maxFindings) this.findings.push(f);
      else if ((this.sampled.get(code) ?? 0) < SAMPLE_PER_CODE) this.beyondCap.push(f);
      else continue;
      this.sampled.set(code, (this.sampled.get(code) ?? 0) + 1);
    }
  }

  /**
   * Reports what was kept aside and still stands against the hold records read again now that the scan is over
   * (audit/kept-aside.ts): a hold placed while the audit ran put its id on what the scan read later; a release at
   * work gave TTL values back and cleared markers. Neither is reported.
   */
  async confirmKeptAside(scanStartedMs: number): Promise<void> {
    await this.keptAside.confirm(scanStartedMs, (code, n, kept) => this.count(code, n, kept));
  }

  private async progress(phase: string, scanned: number): Promise<void> {
    await this.opts.onProgress?.({ phase, scanned });
  }

  /** Top-level collections the registry does not know: data nobody governs. */
  async topLevelCollections(): Promise<void> {
    const known = this.ctx.policy.knownCollectionIds();
    const cols = await db().listCollections();
    this.report(
      cols.filter((c) => !known.has(c.id)).map((c) => ({ path: c.id, code: "UNKNOWN_CLASS" as const, detail: "top-level collection is in no retention class" })),
    );
  }

  /**
   * One governed collection group. One chunk is held while the next streams in, so a chunk's parent read
   * overlaps the arrival of the next one.
   */
  async governedGroup(collectionId: string): Promise<void> {
    let scanned = 0;
    let inHand: { page: QueryDocumentSnapshot[]; parents: Promise<Map<string, ParentFacts>> } | null = null;
    const fields = [...GOVERNED_FIELDS, ...this.subjects.fieldsFor(collectionId).filter((f) => !(GOVERNED_FIELDS as readonly string[]).includes(f))];
    for await (const page of pages(db().collectionGroup(collectionId).select(...fields), this.pageSize)) {
      const parents = parentFacts(page);
      // Handled here so a failure waits for its turn below instead of surfacing as an unhandled rejection.
      parents.catch(() => undefined);
      if (inHand) await this.judge(collectionId, inHand.page, await inHand.parents);
      inHand = { page, parents };
      scanned += page.length;
      await this.progress(collectionId, scanned);
    }
    if (inHand) await this.judge(collectionId, inHand.page, await inHand.parents);
  }

  private async judge(collectionId: string, page: readonly QueryDocumentSnapshot[], parents: Map<string, ParentFacts>): Promise<void> {
    const pol = this.ctx.policy;
    const locatesUids = this.subjects.covers(collectionId);
    for (const snap of page) {
      const doc = toAuditDoc(snap.ref.path, snap.data());
      const parentPath = parentDocumentPath(doc.path);
      const parent = parentPath ? (parents.get(parentPath) ?? { exists: false, expireAtMs: null }) : null;
      this.report(auditGovernedDoc(doc, parent, this.ctx));
      this.report(staleHoldMarks(doc.path, doc.holdIds, this.activeIds));
      if (needsArchiveCheck(doc, pol)) this.report(auditArchivedDoc(doc.path, await archivesFor(doc.path)));
      const held = isHeld(doc, this.holds);
      if (needsPurgeOwnerCheck(doc, held)) await this.purgeEligible.offer(doc);
      tallyDoc(this.stats, pol.classForPath(doc.path)?.id ?? doc.retentionClass ?? "(unknown)", doc, held, this.opts.nowMs);
      if (!held && locatesUids) await this.subjects.offer(doc.path, (field) => snap.get(field) as unknown, keptByItsClass(doc, pol, this.opts.nowMs), collectionId);
    }
  }

  /** Cloud Storage objects the data map's storage entries reach, against the hold records (audit/objects.ts). Bounded. */
  async objects(): Promise<void> {
    this.stats.objects = await auditObjects(this.ctx.policy.allStorageEntries(), this.holds, storageSettings.auditMaxObjects(), (fs) => this.report(fs, "object"));
    if (this.stats.objects.checked > 0) await this.progress("objects", this.stats.objects.checked);
  }

  /** Archive entries: verified, a copy of held data carries no TTL value, and no copy keeps the id of a hold that is over. */
  async archives(): Promise<void> {
    let scanned = 0;
    for await (const page of pages(db().collection(COLLECTIONS.archives).select(...ARCHIVE_FIELDS), this.pageSize)) {
      for (const snap of page) {
        const data = snap.data();
        const fs = auditArchiveEntry(
          {
            path: snap.ref.path,
            sourcePath: stringOrNull(data.sourcePath),
            ...verificationOf(data),
            legalHold: data.legalHold === true,
            holdIds: stringArray(data.holdIds),
            hasExpireAt: (data.expireAt ?? null) !== null,
            sealed: typeof data.dataKey === "string" && typeof (data.sealed as { v?: unknown } | undefined)?.v === "number",
          },
          this.holds,
        );
        if (typeof data.dataKey === "string") this.dataKeysInUse.add(data.dataKey);
        this.stats.archives.entries++;
        if (fs.some((f) => f.code === "ARCHIVE_UNVERIFIED")) this.stats.archives.unverified++;
        this.report(fs, "copy");
        this.report(staleHoldMarks(snap.ref.path, stringArray(data.holdIds), this.activeIds), "copy");
      }
      scanned += page.length;
      await this.progress(COLLECTIONS.archives, scanned);
    }
    // The key store's active keys of this database that no copy names (after the copies were all seen).
    for await (const k of activeDataKeys()) {
      if (!this.dataKeysInUse.has(k.ref) && orphanedDataKey({ createdAtMs: k.createdAtMs, copies: 0 }, this.opts.nowMs)) {
        this.report([{ path: k.path, code: "ORPHANED_DATA_KEY", detail: "active data key that no archive copy names any more; the shred should have taken it" }]);
      }
    }
  }

  /**
   * Open deletion requests that owe erasure or are RETAINED_UNDER_HOLD: past due or not, how close to due, and
   * whether a hold still covers what a retained one keeps.
   */
  async requests(): Promise<void> {
    const open = db()
      .collection(COLLECTIONS.deletionRequests)
      .where("state", "in", [...AUDITED_REQUEST_STATES])
      .select("state", "dueAt", "requestedAt", "retainedUnderHold");
    for await (const page of pages(open, this.pageSize)) {
      for (const snap of page) {
        const r = {
          path: snap.ref.path,
          state: stringOrNull(snap.get("state")),
          dueAtMs: toMs(snap.get("dueAt")),
          requestedAtMs: toMs(snap.get("requestedAt")),
          retained: retainedOf(snap.get("retainedUnderHold")),
        };
        const fs = auditDeletionRequest(r, this.opts.nowMs, this.holds);
        this.report(fs);
        tallyRequest(this.stats, r, fs.some((f) => f.code === "OVERDUE_REQUEST"), this.opts.nowMs);
      }
      await this.progress(COLLECTIONS.deletionRequests, this.stats.requests.unfinished);
    }
  }

  /**
   * Requests opened within the lookback and answered (PURGED, RETAINED_UNDER_HOLD): answered by their deadline or
   * after it (DEADLINE_MISSED). Index (state, requestedAt). The timeline says when each was answered
   * (requests/rules/legal-clock.ts#answeredAtMs).
   */
  async answeredRequests(): Promise<void> {
    const since = Timestamp.fromMillis(this.opts.nowMs - DEADLINE_LOOKBACK_DAYS * 86_400_000);
    const answered = db()
      .collection(COLLECTIONS.deletionRequests)
      .where("state", "in", [...ANSWERED_STATES])
      .where("requestedAt", ">=", since)
      .orderBy("requestedAt")
      .orderBy(FieldPath.documentId())
      .select("requestedAt", "dueAt", "timeline", "legalClock.law");
    let last: QueryDocumentSnapshot | undefined;
    for (;;) {
      const page = (await (last ? answered.startAfter(last.get("requestedAt") as Timestamp, last.id) : answered).limit(this.pageSize).get()).docs;
      if (page.length === 0) return;
      last = page[page.length - 1];
      for (const snap of page) {
        const timeline = Array.isArray(snap.get("timeline")) ? (snap.get("timeline") as { at?: unknown; event?: unknown }[]) : [];
        const facts = {
          path: snap.ref.path,
          dueAtMs: toMs(snap.get("dueAt")),
          answeredAtMs: answeredAtMs(timeline.map((t) => ({ atMs: toMs(t.at) ?? 0, event: String(t.event) }))),
          law: stringOrNull(snap.get("legalClock.law")),
        };
        if (facts.answeredAtMs === null || facts.dueAtMs === null) continue;
        const fs = auditAnsweredRequest(facts);
        this.report(fs);
        this.stats.deadlines.answered++;
        if (fs.length > 0) this.stats.deadlines.late++;
        else this.stats.deadlines.withinDeadline++;
      }
      if (page.length < this.pageSize) return;
    }
  }

  /** The processors' open notices past their deadline (index: state, deadlineAt). */
  async processorNotices(): Promise<void> {
    if (this.ctx.policy.registry.processors.length === 0) return;
    const overdue = db()
      .collection(COLLECTIONS.processorNotices)
      .where("state", "in", [...OPEN_NOTICE_STATES])
      .where("deadlineAt", "<", Timestamp.fromMillis(this.opts.nowMs))
      .orderBy("deadlineAt")
      .select("processor", "state", "deadlineAt");
    for await (const page of pages(overdue, this.pageSize)) {
      for (const snap of page) {
        this.report(auditProcessorNotice({ path: snap.ref.path, processor: String(snap.get("processor")), state: stringOrNull(snap.get("state")), deadlineAtMs: toMs(snap.get("deadlineAt")) }, this.opts.nowMs));
      }
    }
  }

  result(durationMs: number): AuditResult {
    this.stats.subjectsChecked = this.subjects.checked;
    // Scans run concurrently; sorting makes the listing independent of which one finished first.
    const order = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
    const findings = [...this.findings, ...this.beyondCap].sort((a, b) => order(a.path, b.path) || order(a.code, b.code) || order(a.detail, b.detail));
    return {
      ok: this.total === 0,
      nowMs: this.opts.nowMs,
      policyVersion: this.ctx.policy.version,
      findings,
      totalFindings: this.total,
      truncated: this.total > findings.length,
      byCode: this.byCode,
      stats: this.stats,
      durationMs,
    };
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function inPool<T>(limit: number, items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

/** One collection id per governed pattern's last collection: a collection-group query covers every parent. */
export function governedCollectionIds(): string[] {
  const ids = policy().registry.collections.map((r) => segments(r.pattern).at(-2)!);
  return [...new Set(ids)].sort();
}


function stringOrNull(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

/** A request's `retainedUnderHold` as the audit reads it (null when absent). */
function retainedOf(v: unknown): { paths: string[]; count: number } | null {
  if (v === null || typeof v !== "object") return null;
  const r = v as { paths?: unknown; count?: unknown };
  const paths = stringArray(r.paths);
  return { paths, count: typeof r.count === "number" ? r.count : paths.length };
}

function stringArray(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

export function toAuditDoc(path: string, data: DocumentData): AuditDoc {
  const rawTtl: unknown = data.expireAt;
  const ttlMs = toMs(rawTtl);
  return {
    path,
    retentionClass: stringOrNull(data.retentionClass),
    lifecycleState: stringOrNull(data.lifecycleState),
    policyVersion: stringOrNull(data.policyVersion),
    expireAt: rawTtl === undefined || rawTtl === null ? null : (ttlMs ?? "invalid"),
    retainUntilMs: toMs(data.retainUntil),
    legalHold: data.legalHold === true,
    holdIds: stringArray(data.holdIds),
    softDeletedAtMs: toMs(data.softDeletedAt),
    hasSoftDeleteMark: (data.softDeletedAt ?? null) !== null || (data.deletionRequestId ?? null) !== null,
    claimUnitKey: stringOrNull((data.purgeDecision as { unitKey?: unknown } | undefined)?.unitKey),
    deletionRequestId: stringOrNull(data.deletionRequestId),
  };
}

/** Existence and expiry of the parents of a chunk's subcollection documents, fetched in one batched read. */
async function parentFacts(page: readonly QueryDocumentSnapshot[]): Promise<Map<string, ParentFacts>> {
  const paths = [...new Set(page.map((s) => parentDocumentPath(s.ref.path)).filter((p): p is string => p !== null))];
  const out = new Map<string, ParentFacts>();
  if (paths.length === 0) return out;
  const snaps = await db().getAll(...paths.map((p) => db().doc(p)), { fieldMask: ["expireAt"] });
  for (const s of snaps) out.set(s.ref.path, { exists: s.exists, expireAtMs: s.exists ? toMs(s.get("expireAt")) : null });
  return out;
}

function verificationOf(data: DocumentData): { sha256: unknown; verifiedAtMs: number | null; verified: boolean | null } {
  return {
    sha256: data.sha256 as unknown,
    verifiedAtMs: toMs(data.verifiedAt),
    verified: typeof data.verified === "boolean" ? data.verified : null,
  };
}

/** Archive entries that name a source document (`archives.sourcePath`), for the ARCHIVED-document check. */
async function archivesFor(path: string): Promise<ReturnType<typeof verificationOf>[]> {
  const snap = await db()
    .collection(COLLECTIONS.archives)
    .where("sourcePath", "==", path)
    .select(...VERIFICATION_FIELDS)
    .limit(10)
    .get();
  return snap.docs.map((d) => verificationOf(d.data()));
}
