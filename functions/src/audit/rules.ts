import { ERASURE_OWED_STATES } from "../requests/rules/requests";
import { claimingHoldIds, stillClaims } from "../holds/rules";
import { coveringHold, isHeld, type ActiveHoldRef, type HoldLetGo } from "../kernel/held";
import { isLifecycleState } from "../kernel/lifecycle";
import { matchPattern, parentDocumentPath, segments } from "../kernel/paths";
import type { DataMapEntry } from "../kernel/policy-schema";
import type { PolicyIndex } from "../kernel/policy";
import { fingerprintKey } from "../kernel/policy-fingerprint";
import { isExpired } from "../kernel/retention";
import { isBusinessVisible } from "../kernel/visibility";

/**
 * The retention audit's finding rules. Pure: infrastructure reads the documents and their context (parent,
 * holds, Auth, archives) and these functions say what is wrong. Every code has one precise definition, written
 * next to it, so that a finding can be reproduced by hand and a test can inject exactly one fault.
 */
export const FINDING_CODES = [
  /** The document names no class, a class the registry does not know, or lies on a path no rule governs. */
  "UNKNOWN_CLASS",
  /** The document names a known class other than the one the registry assigns to its path. */
  "CLASS_MISMATCH",
  /** `lifecycleState` is missing or outside the state machine. */
  "INVALID_LIFECYCLE_STATE",
  /** A `ttl`-class document that is not held carries no `expireAt` (for inherited classes: while its parent has one). */
  "MISSING_TTL",
  /** `expireAt` is not a Timestamp (TTL ignores it), sits on a non-ttl class, or lets a child outlive its parent. */
  "INVALID_TTL",
  /**
   * A held document or archive copy carries `expireAt`: held by its own marks (flag, LEGAL_HOLD state, hold ids), or by
   * an active hold record that still claims it (not one whose release has walked past it), as confirmed after the scan.
   */
  "HOLD_WITH_TTL",
  /** A TTL value passed longer ago than the TTL cleanup SLA and the document still exists (cleanup lag, not visibility). */
  "TTL_OVERDUE",
  /** The document carries soft-delete marks (`softDeletedAt` or `deletionRequestId`) yet is business-visible. */
  "SOFT_DELETE_QUERY_LEAK",
  /** A workflow-class document is ACTIVE and unheld although its business end (`retainUntil`) passed longer ago than the workflow lag. */
  "EXPIRED_BUT_VISIBLE",
  /** A document in a subcollection whose parent document does not exist. */
  "ORPHANED_SUBCOLLECTION",
  /** An archive entry without a valid sha256 or verifiedAt, or an ARCHIVED archive-class document without a verified archive. */
  "ARCHIVE_UNVERIFIED",
  /** Unheld data keyed by a uid whose Auth account is gone and whose erasure is not in progress. */
  "ORPHANED_SUBJECT",
  /** `policyVersion` is missing, not a published version, or older than the current version. */
  "STALE_POLICY_VERSION",
  /**
   * A deletion request that still owes erasure is past its `dueAt`: PENDING, PROCESSING or BLOCKED, or
   * RETAINED_UNDER_HOLD with no active hold left on what remains (STUCK_RETAINED_UNDER_HOLD).
   */
  "OVERDUE_REQUEST",
  /**
   * A RETAINED_UNDER_HOLD request none of whose remaining paths (`retainedUnderHold.paths`) is covered by an active
   * hold record: what it keeps is kept for no hold, until a purge run takes it up again.
   */
  "STUCK_RETAINED_UNDER_HOLD",
  /**
   * An unheld PURGE_ELIGIBLE document that no purge will act on: the round that marked it is not running, the
   * request that owns it will not be taken again, and its own retention has not run out (so no sweep takes it).
   */
  "STALE_PURGE_ELIGIBLE",
  /**
   * A Cloud Storage object a storage entry reaches carries the marker of a hold that is not active (released, or no
   * such record): the analog of a document keeping the id of a released hold. Its Cloud Storage `temporaryHold` may
   * keep it past its erasure (docs/STORAGE.md).
   */
  "OBJECT_MARKER_STALE",
  /**
   * A governed document or an archive copy carries the id of a hold that is not active (`holdIds`: released, or no such
   * record, as after a restore without it): the document analog of OBJECT_MARKER_STALE. A hold id alone keeps it
   * (`isHeld`): every purge refuses it, and no release will give it its retention back, so it is kept for a hold nobody
   * answers for. Reported only when the hold is still not active after the scan, and was not placed while it ran.
   */
  "HOLD_MARK_STALE",
  /**
   * An object whose heldWith document an active hold covers, whose flagging has finished (applied, not being
   * released), lacks that hold's marker: the analog of HOLD_WITH_TTL (a lifecycle rule or another deleter could
   * remove it; the purge still keeps it, by the hold's record).
   */
  "OBJECT_HELD_UNMARKED",
  /**
   * A request answered (its first PURGED or RETAINED_UNDER_HOLD) after its deadline (its legal clock's, extension
   * included, or its class's due date), opened within the audit's lookback (DEADLINE_LOOKBACK_DAYS): a breach of the
   * law's deadline, reported so that it can be accounted for; nothing can put it right now
   * (docs/decisions/0040-legal-clocks-and-access.md).
   */
  "DEADLINE_MISSED",
  /**
   * A processor's deletion notice (`processorNotices/{id}`) not acknowledged by the deadline the processor agreed to
   * (its erasure plus the registry's `deadlineDays`): pending, sent and unanswered, failed, or held back by a hold.
   */
  "PROCESSOR_OVERDUE",
  /**
   * An archive copy holds its business data in the clear (no `sealed` body under a data key): written before copies
   * were sealed, or restored from such a time. The expiry backfill's migration seals it (decision 0038).
   */
  "ARCHIVE_PLAINTEXT",
  /**
   * An active data key of the key store that no archive copy of its database names any more, a day after it was made:
   * the shred should have taken it when its period ended (decision 0038).
   */
  "ORPHANED_DATA_KEY",
] as const;
export type FindingCode = (typeof FINDING_CODES)[number];

export interface Finding {
  path: string;
  code: FindingCode;
  detail: string;
  /**
   * The hold records the finding depends on (CONFIRMED_AFTER_SCAN): the hold a stale mark names, or the holds that claim
   * what is found. It is reported only if it still stands against them once the scan is over.
   */
  holdIds?: readonly string[];
}

/**
 * The findings that depend on a hold record's state, which can change while the audit scans (it reads the active holds
 * once, before): a stale mark may be the id of a hold placed since; a held document's TTL value, or an object's missing
 * marker, may be a release at work since. Such a finding names its holds (`holdIds`), is kept aside, and is reported
 * only if it still stands against those records read again once the scan is over (`standsAfterScan`).
 */
export const CONFIRMED_AFTER_SCAN: ReadonlySet<FindingCode> = new Set<FindingCode>(["HOLD_MARK_STALE", "OBJECT_MARKER_STALE", "HOLD_WITH_TTL", "OBJECT_HELD_UNMARKED"]);

/** A hold record as the audit reads it again after its scan (null where there is no such record). */
export interface HoldRecordNow {
  state: string | null;
  /** How far its release has let go (kernel/held.ts#letGoOfWalk); null when it is not being released. */
  letGo: HoldLetGo | null;
  placedAtMs: number | null;
}

/**
 * A hold placed this long before the scan started counts as placed during it: its placement may have committed after
 * the audit read the active holds (placedAt is the placer's clock).
 */
export const PLACED_DURING_SCAN_MARGIN_MS = 60_000;

/**
 * The findings a page lists out of a longer list (in its order): the first `perCode` of every code, then the rest in
 * order up to `listed` in all, so a flood of one code never hides a rarer one. In the list's order; never more than
 * `listed`, or the per-code samples when they alone are more.
 */
export function listedFindings<T extends { code: string }>(findings: readonly T[], listed: number, perCode: number): T[] {
  const keep = new Array<boolean>(findings.length).fill(false);
  const sampled = new Map<string, number>();
  let kept = 0;
  findings.forEach((f, i) => {
    const n = sampled.get(f.code) ?? 0;
    if (n >= perCode) return;
    sampled.set(f.code, n + 1);
    keep[i] = true;
    kept++;
  });
  for (let i = 0; i < findings.length && kept < listed; i++) {
    if (keep[i]) continue;
    keep[i] = true;
    kept++;
  }
  return findings.filter((_, i) => keep[i]);
}

/**
 * Whether a finding kept aside still stands against its holds' records as they are after the scan (`named`, in the
 * order of the finding's `holdIds`):
 * - a stale mark, while its hold is not ACTIVE, unless the hold was placed while the scan ran (placed and released
 *   since the audit read the holds, its id was rightly there when the scan read it);
 * - a finding about what a hold covers (HOLD_WITH_TTL, OBJECT_HELD_UNMARKED), while one of its holds is ACTIVE and
 *   still claims it: a document until that hold's release walks past it (`holds/rules.ts#stillClaims`), an archive
 *   copy or an object until its release begins. `path` null: a finding counted beyond those kept, whose path is not
 *   known; it stands while one of its holds is ACTIVE.
 */
export function standsAfterScan(code: FindingCode, path: string | null, kind: "document" | "copy" | "object", named: readonly (HoldRecordNow | null)[], scanStartedMs: number): boolean {
  if (code === "HOLD_MARK_STALE" || code === "OBJECT_MARKER_STALE") {
    const r = named[0] ?? null;
    if (r === null) return true;
    if (r.state === "ACTIVE") return false;
    return r.placedAtMs === null || r.placedAtMs < scanStartedMs - PLACED_DURING_SCAN_MARGIN_MS;
  }
  return named.some((r) => r !== null && r.state === "ACTIVE" && (path === null || (kind === "object" ? !r.letGo : stillClaims(r.letGo, path, kind === "copy"))));
}

/** Whether a document carries a hold's marks itself (the flag, the LEGAL_HOLD state, hold ids). */
const carriesHoldMarks = (d: { legalHold: boolean; lifecycleState: string | null; holdIds: readonly string[] }): boolean =>
  d.legalHold || d.lifecycleState === "LEGAL_HOLD" || d.holdIds.length > 0;

/** HOLD_MARK_STALE for each id of `holdIds` that is not among the active holds' ids. */
export function staleHoldMarks(path: string, holdIds: readonly string[], activeIds: ReadonlySet<string>): Finding[] {
  return [...new Set(holdIds)]
    .filter((id) => !activeIds.has(id))
    .map((holdId) => ({ path, code: "HOLD_MARK_STALE" as const, holdIds: [holdId], detail: `carries the id of hold ${holdId}, which is not active: kept from every purge for no hold` }));
}

/** A governed document as the audit sees it: fields as stored, converted to ms, nothing guessed. */
export interface AuditDoc {
  path: string;
  retentionClass: string | null;
  lifecycleState: string | null;
  policyVersion: string | null;
  /** The TTL field: null when absent; "invalid" when present but not a Timestamp. */
  expireAt: number | null | "invalid";
  retainUntilMs: number | null;
  legalHold: boolean;
  holdIds: readonly string[];
  softDeletedAtMs: number | null;
  /** `softDeletedAt` or `deletionRequestId` is set: a soft delete touched this document and was not undone. */
  hasSoftDeleteMark: boolean;
  /** The purge unit whose decision made the document PURGE_ELIGIBLE (`purgeDecision.unitKey`), if any. */
  claimUnitKey: string | null;
  /** The deletion request that soft-deleted the document (`deletionRequestId`), if any. */
  deletionRequestId: string | null;
}

/** What the audit knows about a subcollection document's parent. */
export interface ParentFacts {
  exists: boolean;
  expireAtMs: number | null;
}

export interface AuditThresholds {
  /** Firestore TTL deletes "typically within 24 hours"; past this lag the cleanup is overdue. */
  ttlCleanupSlaMs: number;
  /** The nightly purge acts within a day; past this lag a workflow document's business end is overdue. */
  workflowLagMs: number;
}

export const DEFAULT_THRESHOLDS: AuditThresholds = { ttlCleanupSlaMs: 72 * 3_600_000, workflowLagMs: 48 * 3_600_000 };

export interface AuditContext {
  policy: PolicyIndex;
  /** Published registry versions, oldest first; the last is the current one. */
  publishedVersions: readonly string[];
  /**
   * Each published version's retention fingerprints (kernel/policy-fingerprint.ts#retentionFingerprints), by version. A
   * document stamped with an older version whose fingerprint for its collection equals the current one's is
   * not stale. Absent: every older version is stale.
   */
  retentionByVersion?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  activeHolds: readonly ActiveHoldRef[];
  nowMs: number;
  thresholds: AuditThresholds;
}

export { isHeld };

const hours = (ms: number): string => `${Math.floor(ms / 3_600_000)}h`;
const iso = (ms: number): string => new Date(ms).toISOString();

/** "v12" -> 12; anything else -> NaN (never ordered). */
function versionNumber(v: string): number {
  const m = /^v([0-9]+)$/.exec(v);
  return m ? Number(m[1]) : Number.NaN;
}

/**
 * The findings for one governed document. `parent` is given for documents in subcollections (null for
 * top-level documents). The class the checks apply is the registry's class for the path, falling back to
 * the document's own when the path is ungoverned, because policy (not the payload) decides retention.
 */
export function auditGovernedDoc(doc: AuditDoc, parent: ParentFacts | null, ctx: AuditContext): Finding[] {
  const out: Finding[] = [];
  const add = (code: FindingCode, detail: string) => out.push({ path: doc.path, code, detail });
  const { policy, nowMs } = ctx;

  const rule = policy.ruleForPath(doc.path);
  const declared = policy.classById(doc.retentionClass);
  if (!rule) add("UNKNOWN_CLASS", `path matches no collection in registry ${policy.version}`);
  if (doc.retentionClass === null) add("UNKNOWN_CLASS", "document has no retentionClass");
  else if (!declared) add("UNKNOWN_CLASS", `class "${doc.retentionClass}" is not in registry ${policy.version}`);
  if (rule && declared && declared.id !== rule.retentionClass) {
    add("CLASS_MISMATCH", `document says ${declared.id}, registry assigns ${rule.retentionClass}`);
  }
  const cls = (rule ? policy.classById(rule.retentionClass) : undefined) ?? declared;

  if (!isLifecycleState(doc.lifecycleState)) add("INVALID_LIFECYCLE_STATE", `lifecycleState ${JSON.stringify(doc.lifecycleState)} is not in the state machine`);

  const stale = policyVersionProblem(doc.policyVersion, ctx.publishedVersions, (older) => sameRetention(ctx, older, rule ? fingerprintKey(rule) : undefined));
  if (stale) add("STALE_POLICY_VERSION", stale);

  if (parent && !parent.exists) add("ORPHANED_SUBCOLLECTION", `parent ${parentDocumentPath(doc.path) ?? "?"} does not exist`);

  const held = isHeld(doc, ctx.activeHolds);
  const ttlMs = typeof doc.expireAt === "number" ? doc.expireAt : null;
  // Held by its own marks, a document must carry no TTL value whatever the records say; held by records alone, only
  // while one of them claims it (a release gives the value back as it passes), confirmed after the scan. Covered only by
  // a hold whose release has passed it, it has its value back, rightly.
  const marked = carriesHoldMarks(doc);
  const claims = marked || doc.expireAt === null ? [] : claimingHoldIds(doc.path, ctx.activeHolds);
  if (doc.expireAt !== null && (marked || claims.length > 0)) {
    out.push({ path: doc.path, code: "HOLD_WITH_TTL", detail: "held document carries expireAt: TTL cannot be stopped by a hold once it fires", ...(marked ? {} : { holdIds: claims }) });
  } else if (doc.expireAt === "invalid") {
    add("INVALID_TTL", "expireAt is not a Timestamp, so TTL ignores it");
  } else if (cls && cls.mechanism !== "ttl" && ttlMs !== null) {
    add("INVALID_TTL", `class ${cls.id} (${cls.mechanism}) must not carry expireAt: TTL would bypass the workflow`);
  }

  if (cls?.mechanism === "ttl" && !held) {
    if (doc.expireAt === null) {
      if (!cls.inheritsParentExpiry) add("MISSING_TTL", `class ${cls.id} is TTL-managed but the document has no expireAt`);
      else if (parent?.exists && parent.expireAtMs !== null) add("MISSING_TTL", `parent expires ${iso(parent.expireAtMs)}; the child carries no expireAt`);
    }
    if (cls.inheritsParentExpiry && ttlMs !== null && parent?.exists && parent.expireAtMs !== null && ttlMs > parent.expireAtMs) {
      add("INVALID_TTL", `child expires ${iso(ttlMs)}, after its parent (${iso(parent.expireAtMs)}): it would outlive it`);
    }
    if (ttlMs !== null && nowMs - ttlMs > ctx.thresholds.ttlCleanupSlaMs) {
      add("TTL_OVERDUE", `expired ${hours(nowMs - ttlMs)} ago; TTL cleanup SLA is ${hours(ctx.thresholds.ttlCleanupSlaMs)}`);
    }
  }

  if (doc.hasSoftDeleteMark && isBusinessVisible({ lifecycleState: doc.lifecycleState, expireAtMs: ttlMs }, nowMs)) {
    add("SOFT_DELETE_QUERY_LEAK", "soft-delete marks are set but the document is ACTIVE, so every read path still returns it");
  }

  if (
    cls &&
    cls.mechanism !== "ttl" &&
    doc.lifecycleState === "ACTIVE" &&
    !held &&
    doc.retainUntilMs !== null &&
    nowMs - doc.retainUntilMs > ctx.thresholds.workflowLagMs
  ) {
    add("EXPIRED_BUT_VISIBLE", `business end ${iso(doc.retainUntilMs)} passed ${hours(nowMs - doc.retainUntilMs)} ago and the document is still ACTIVE`);
  }
  return out;
}

/** Whether the registry gives `pattern` the same retention under `older` as under the current version. */
function sameRetention(ctx: AuditContext, older: string, pattern: string | undefined): boolean {
  const current = ctx.publishedVersions[ctx.publishedVersions.length - 1];
  if (pattern === undefined || current === undefined || !ctx.retentionByVersion) return false;
  const then = ctx.retentionByVersion.get(older)?.[pattern];
  return then !== undefined && then === ctx.retentionByVersion.get(current)?.[pattern];
}

/**
 * Why a stored policyVersion is stale, or null: it is the current published version, or an older one under
 * which the document's retention is the same as now (`unchangedSince`), so there is nothing to re-evaluate.
 */
export function policyVersionProblem(version: string | null, published: readonly string[], unchangedSince: (version: string) => boolean = () => false): string | null {
  const current = published[published.length - 1];
  if (version === null || version === "") return "document has no policyVersion";
  if (!published.includes(version)) return `${version} is not a published registry version`;
  if (current !== undefined && versionNumber(version) < versionNumber(current) && !unchangedSince(version)) {
    return `retention was set under ${version}; the current version is ${current}: re-evaluate it`;
  }
  return null;
}

/** An `archives` entry as the audit sees it. */
export interface ArchiveFacts {
  path: string;
  /** The archived document's path (`sourcePath`); holds on it cover its copies too. */
  sourcePath: string | null;
  sha256: unknown;
  /** When the copy was read back and its hash compared. */
  verifiedAtMs: number | null;
  /** The workflow's verification flag, when it records one. */
  verified: boolean | null;
  legalHold: boolean;
  holdIds: readonly string[];
  hasExpireAt: boolean;
  /** The copy is sealed under a data key; false: its business data is in the clear. Absent: not known. */
  sealed?: boolean;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

type Verification = Pick<ArchiveFacts, "sha256" | "verifiedAtMs" | "verified">;

/**
 * An archive is verified only when it records a well-formed SHA-256 and the workflow's read-back succeeded:
 * a `verifiedAt` time or `verified: true`, and never `verified: false`.
 */
export function isArchiveVerified(a: Verification): boolean {
  return typeof a.sha256 === "string" && SHA256_HEX.test(a.sha256) && a.verified !== false && (a.verified === true || a.verifiedAtMs !== null);
}

/** An archive entry: it must be verified, and a copy of held data carries no TTL value either (every copy counts). */
export function auditArchiveEntry(a: ArchiveFacts, holds: readonly ActiveHoldRef[]): Finding[] {
  const out: Finding[] = [];
  if (!isArchiveVerified(a)) {
    const why = typeof a.sha256 !== "string" || !SHA256_HEX.test(a.sha256) ? "no valid sha256" : "no successful read-back verification";
    out.push({ path: a.path, code: "ARCHIVE_UNVERIFIED", detail: `archive entry has ${why}` });
  }
  // A copy is held by its own marks, or by a hold covering the document it copies.
  const marked = carriesHoldMarks({ legalHold: a.legalHold, lifecycleState: null, holdIds: a.holdIds });
  const claims = marked || !a.hasExpireAt ? [] : claimingHoldIds(a.path, holds, a.sourcePath);
  if (a.hasExpireAt && (marked || claims.length > 0)) out.push({ path: a.path, code: "HOLD_WITH_TTL", detail: "archive of held data carries expireAt", ...(marked ? {} : { holdIds: claims }) });
  if (a.sealed === false) out.push({ path: a.path, code: "ARCHIVE_PLAINTEXT", detail: "archive copy holds its business data in the clear, not sealed under a data key" });
  return out;
}

/** An ARCHIVED document of a class that requires an archive, checked against the archive entries found for it. */
export function auditArchivedDoc(path: string, archives: readonly Verification[]): Finding[] {
  if (archives.some(isArchiveVerified)) return [];
  const detail = archives.length === 0 ? "ARCHIVED, but no archive entry names it" : "ARCHIVED, but none of its archive entries is verified";
  return [{ path, code: "ARCHIVE_UNVERIFIED", detail }];
}

/** Whether an ARCHIVED document needs the archive check (its class requires an archive). */
export function needsArchiveCheck(doc: Pick<AuditDoc, "path" | "lifecycleState">, policy: PolicyIndex): boolean {
  return doc.lifecycleState === "ARCHIVED" && policy.classForPath(doc.path)?.archive.required === true;
}

/** Request states in which erasure is owed and not yet done: the due date applies (one definition, in the request's domain). */
export const UNFINISHED_REQUEST_STATES = ERASURE_OWED_STATES;

/** The request states the audit reads: those that owe erasure, and RETAINED_UNDER_HOLD (open, not done). */
export const AUDITED_REQUEST_STATES: readonly string[] = [...UNFINISHED_REQUEST_STATES, "RETAINED_UNDER_HOLD"];

export interface RequestFacts {
  path: string;
  state: string | null;
  dueAtMs: number | null;
  /** A RETAINED_UNDER_HOLD request's `retainedUnderHold`: the paths it lists (the first 100) and how many remain. */
  retained?: { paths: readonly string[]; count: number } | null;
}

/**
 * Whether a RETAINED_UNDER_HOLD request is stuck: no active hold record covers any path it lists as remaining (a
 * request listing none is stuck too). When more paths remain than are listed, the unlisted ones are not judged.
 */
export function isStuckRetained(r: RequestFacts, holds: readonly ActiveHoldRef[]): boolean {
  if (r.state !== "RETAINED_UNDER_HOLD") return false;
  return !(r.retained?.paths ?? []).some((p) => coveringHold(p, holds) !== undefined);
}

/** Whether a request is past its due date at `nowMs`. */
const pastDue = (r: RequestFacts, nowMs: number): r is RequestFacts & { dueAtMs: number } => r.dueAtMs !== null && r.dueAtMs < nowMs;

/**
 * The findings for one deletion request. OVERDUE_REQUEST: a request that owes erasure past its due date (GDPR
 * counts BLOCKED time too; a stuck RETAINED_UNDER_HOLD request owes it as well). STUCK_RETAINED_UNDER_HOLD: see
 * `isStuckRetained`. A RETAINED_UNDER_HOLD request whose remaining paths a hold still covers is lawfully kept:
 * no finding, past its due date or not (the audit's request counts show it: audit/stats.ts#tallyRequest).
 */
export function auditDeletionRequest(r: RequestFacts, nowMs: number, holds: readonly ActiveHoldRef[] = []): Finding[] {
  const out: Finding[] = [];
  const stuck = isStuckRetained(r, holds);
  const owes = (UNFINISHED_REQUEST_STATES as readonly (string | null)[]).includes(r.state) || stuck;
  const due = pastDue(r, nowMs) ? `due ${iso(r.dueAtMs)} (${Math.floor((nowMs - r.dueAtMs) / 86_400_000)}d overdue)` : null;
  if (owes && due !== null) {
    out.push({ path: r.path, code: "OVERDUE_REQUEST", detail: stuck ? `RETAINED_UNDER_HOLD request with no active hold on what remains was ${due}` : `${r.state} request was ${due}` });
  }
  if (stuck) {
    const listed = r.retained?.paths.length ?? 0;
    const count = r.retained?.count ?? listed;
    const what = listed === 0 ? "it lists no remaining path" : `no active hold covers any of its ${count} remaining path(s)${count > listed ? ` (the ${listed} listed)` : ""}`;
    out.push({ path: r.path, code: "STUCK_RETAINED_UNDER_HOLD", detail: `retained under a hold, but ${what}: the next purge run must take it up${due !== null ? `; ${due}` : ""}` });
  }
  return out;
}

/** PROCESSOR_OVERDUE: a processor's notice still open (not ACKNOWLEDGED) after its agreed deadline. */
export function auditProcessorNotice(n: { path: string; processor: string; state: string | null; deadlineAtMs: number | null }, nowMs: number): Finding[] {
  if (n.state === "ACKNOWLEDGED" || n.deadlineAtMs === null || n.deadlineAtMs >= nowMs) return [];
  const days = Math.floor((nowMs - n.deadlineAtMs) / 86_400_000);
  return [{ path: n.path, code: "PROCESSOR_OVERDUE", detail: `processor ${n.processor} has not confirmed the deletion (${n.state ?? "no state"}); due ${iso(n.deadlineAtMs)} (${days}d overdue)` }];
}

/**
 * Where the data map says a user's record carries their uid: the documents ORPHANED_SUBJECT looks at. A path
 * (`people/{uid}`) or a field (`visits` where `visitorUid == {uid}`, `rooms` where `participantIds array-contains {uid}`).
 * `erases` says whether the entry's erasure takes the uid away; one that does not (a retained record, a mask that keeps
 * the uid) can still decide a record, as a keeping entry does in the purge ({@link uidsAt}).
 */
export type UidLocator = { erases: boolean; action: DataMapEntry["action"] } & (
  | { kind: "path"; pattern: string }
  | {
      kind: "field";
      /** The collection the entry queries, as a pattern (`visits`, `orgs/{orgId}/visits`), or null for a collection group. */
      collection: string | null;
      collectionId: string;
      field: string;
      op: "==" | "array-contains";
      /** The entry's other clauses with a fixed value: a document that fails one is not the entry's. */
      fixed: readonly (readonly [string, "==" | "array-contains", string])[];
    }
);

const isTemplate = (v: string): boolean => v.includes("{");

/** A Firebase Auth uid: 1 to 128 characters. Anything else is no account's, and Auth refuses to look it up. */
const isUid = (v: unknown): v is string => typeof v === "string" && v.length > 0 && v.length <= 128;

/**
 * The locators of a user's data map: `doc` entries ending in `{uid}`, and query or collection-group entries with a
 * `{uid}` clause. An erasing entry that also names another variable (the user's tenant: `tenantId == {tenantId}`, or
 * `orgs/{orgId}/visits`) is left out: a record there may carry the uid of someone who is no subject of the app (a
 * support agent answering a customer), whose account is never erased through it, so the finding could never be
 * repaired. A keeping one stays, matching whatever value the variable has: it can only silence a finding.
 */
export function uidLocators(entries: readonly DataMapEntry[]): UidLocator[] {
  const out: UidLocator[] = [];
  for (const e of entries) {
    if (e.kind === "doc") {
      if (e.path?.endsWith("/{uid}")) out.push({ kind: "path", pattern: e.path, action: e.action, erases: e.action === "delete" || e.action === "archive" });
      continue;
    }
    if (e.kind !== "query" && e.kind !== "collectionGroup") continue;
    const key = e.where.find(([, , value]) => value === "{uid}");
    const collectionId = e.kind === "query" ? e.collection?.split("/").at(-1) : e.collectionId;
    if (!key || !collectionId || isTemplate(collectionId)) continue;
    const [field, op] = key;
    const erases =
      e.action === "delete" || e.action === "archive" || (e.action === "removeFromArray" && e.arrayField === field) || (e.action === "mask" && (e.maskFields ?? []).includes(field));
    const otherVariable = e.where.some((w) => w !== key && isTemplate(w[2])) || isTemplate(e.collection ?? "");
    if (erases && otherVariable) continue;
    const fixed = e.where.filter((w) => w !== key && !isTemplate(w[2]));
    out.push({ kind: "field", collection: e.kind === "query" ? e.collection! : null, collectionId, field, op, fixed, action: e.action, erases });
  }
  // A keeping locator only takes back what an erasing one found: one in a collection no erasing locator reaches costs
  // the scan a read of its field on every record, for nothing.
  const reached = new Set(out.filter((l) => l.erases).map(collectionIdOf));
  return out.filter((l) => l.erases || reached.has(collectionIdOf(l)));
}

const collectionIdOf = (l: UidLocator): string => (l.kind === "path" ? segments(l.pattern).at(-2)! : l.collectionId);

/**
 * The locators that can find a uid in a record of one collection id (a collection-group scan's): most governed
 * collections have none, and their records then cost the check nothing.
 */
export function locatorsIn(collectionId: string, locators: readonly UidLocator[]): UidLocator[] {
  return locators.filter((l) => collectionIdOf(l) === collectionId);
}

/** The fields a scan of one collection group reads for the locators (none when no locator has a field there). */
export function uidFieldsFor(collectionId: string, locators: readonly UidLocator[]): string[] {
  const fields = new Set<string>();
  for (const l of locatorsIn(collectionId, locators)) {
    if (l.kind !== "field") continue;
    fields.add(l.field);
    for (const [f] of l.fixed) fields.add(f);
  }
  return [...fields].sort();
}

const clauseHolds = (value: unknown, op: "==" | "array-contains", wanted: string): boolean => (op === "==" ? value === wanted : Array.isArray(value) && value.includes(wanted));

/**
 * Whether the document's class keeps it from a user's erasure while its retention runs (not user-deletable, not
 * expired), as the plan judges a `delete` entry's record by the class the record names (plan/rules.ts#judgeDiscovered).
 */
export function keptByItsClass(doc: AuditDoc, policy: PolicyIndex, nowMs: number): boolean {
  const cls = policy.classById(doc.retentionClass);
  return cls !== undefined && !cls.userDeletable && !isExpired({ expireAtMs: typeof doc.expireAt === "number" ? doc.expireAt : null, retainUntilMs: doc.retainUntilMs }, nowMs);
}

/** A uid a document holds, and the scope its path names beside it (`orgs/o-1/staff/u-1`: o-1), if any. */
export interface LocatedUid {
  uid: string;
  scopeId: string | null;
}

/**
 * The uids a document holds that its erasure would take away (by its path, or its fields read with `get`): usually none
 * or one. Decided as the purge decides a record (purge/runner/plan.ts#planRequestUnit): the first entry in the data
 * map's order that keeps the live record (retain, mask, removeFromArray) decides it, and the uid goes only if that
 * entry takes it out (a mask of the uid's field, a removeFromArray of its array); else an archive entry takes it; else a
 * delete entry does, unless the record's class keeps it while its retention runs (`keptByClass`). The scope is the
 * one a uid-keyed path names, whichever entry decides.
 */
export function uidsAt(path: string, get: (field: string) => unknown, locators: readonly UidLocator[], keptByClass: boolean, scopeKey: string | null): LocatedUid[] {
  const byUid = new Map<string, { keeper: UidLocator | null; archived: boolean; deleted: boolean; scopeId: string | null }>();
  const s = segments(path);
  let parent: string | undefined;
  for (const l of locators) {
    const found: LocatedUid[] = [];
    if (l.kind === "path") {
      const vars = matchPattern(l.pattern, path);
      if (isUid(vars?.uid)) found.push({ uid: vars.uid, scopeId: scopeKey ? (vars[scopeKey] ?? null) : null });
    } else if (s.length >= 2 && s.at(-2) === l.collectionId && (l.collection === null || matchPattern(l.collection, (parent ??= s.slice(0, -1).join("/"))) !== null) && l.fixed.every(([f, op, v]) => clauseHolds(get(f), op, v))) {
      const value = get(l.field);
      for (const v of l.op === "==" ? [value] : Array.isArray(value) ? value : []) if (isUid(v)) found.push({ uid: v, scopeId: null });
    }
    for (const f of found) {
      const d = byUid.get(f.uid) ?? { keeper: null, archived: false, deleted: false, scopeId: null };
      if (KEEPS_LIVE_RECORD.has(l.action)) d.keeper ??= l;
      else if (l.action === "archive") d.archived = true;
      else d.deleted = true;
      d.scopeId ??= f.scopeId;
      byUid.set(f.uid, d);
    }
  }
  const erased = (d: { keeper: UidLocator | null; archived: boolean; deleted: boolean }): boolean => (d.keeper ? d.keeper.erases : d.archived || (d.deleted && !keptByClass));
  return [...byUid].filter(([, d]) => erased(d)).map(([uid, d]) => ({ uid, scopeId: d.scopeId }));
}

/** The actions that keep the live record, whatever else reaches it (the purge plans them first). */
const KEEPS_LIVE_RECORD: ReadonlySet<DataMapEntry["action"]> = new Set(["retain", "mask", "removeFromArray"]);

/**
 * ORPHANED_SUBJECT: a record the user's data map locates a uid in, when that uid has no Auth account and no erasure of
 * it (or of the record's scope) is under way; the caller (audit/subjects.ts) decides that. A chat that still lists two
 * members who are gone is two findings.
 */
export function orphanFinding(uid: string, path: string): Finding {
  return { path, code: "ORPHANED_SUBJECT", detail: `data of uid ${uid}, which has no Auth account and no deletion request in progress` };
}

/** Soft-delete age buckets for the histogram metric and the dashboard (upper bounds in days; the last is open). */
export const SOFT_DELETE_AGE_BUCKETS = [
  { label: "<1d", maxDays: 1 },
  { label: "1-7d", maxDays: 7 },
  { label: "7-30d", maxDays: 30 },
  { label: "30-90d", maxDays: 90 },
  { label: ">90d", maxDays: Number.POSITIVE_INFINITY },
] as const;

export function softDeleteAgeBucket(ageMs: number): string {
  const days = ageMs / 86_400_000;
  return SOFT_DELETE_AGE_BUCKETS.find((b) => days < b.maxDays)?.label ?? ">90d";
}

/** What the audit learns about the owners of a PURGE_ELIGIBLE document (read after the scan, by id). */
export interface PurgeOwnerFacts {
  /** The unit named by the document's claim has a RUNNING round. */
  claimRoundRunning: boolean;
  /** A deletion request owns the document (by claim or soft-delete mark) and a run will take it again. */
  ownerWillResume: boolean;
}

/**
 * STALE_PURGE_ELIGIBLE for an unheld PURGE_ELIGIBLE document: a mark is not a standing authorisation, so one
 * that no purge will act on is reported. A running round, a request that will be taken again, or retention
 * that has run out (the policy sweep takes it) each explain it.
 */
export function auditPurgeEligible(doc: AuditDoc, owners: PurgeOwnerFacts, nowMs: number): Finding[] {
  if (owners.claimRoundRunning || owners.ownerWillResume) return [];
  if (isExpired({ expireAtMs: typeof doc.expireAt === "number" ? doc.expireAt : null, retainUntilMs: doc.retainUntilMs }, nowMs)) return [];
  const by = doc.claimUnitKey ? `unit ${doc.claimUnitKey}, whose round is over` : "no purge unit";
  return [{ path: doc.path, code: "STALE_PURGE_ELIGIBLE", detail: `PURGE_ELIGIBLE by ${by}; nothing will act on it and its retention has not run out` }];
}

/** Whether the audit must look into a document's purge owners (an unheld PURGE_ELIGIBLE document). */
export const needsPurgeOwnerCheck = (doc: AuditDoc, held: boolean): boolean => doc.lifecycleState === "PURGE_ELIGIBLE" && !held;

/**
 * A deletion candidate: unheld data the purge or TTL will remove once it runs, that is data already
 * PURGE_ELIGIBLE or SOFT_DELETED, or whose retention has run out.
 */
export function isDeletionCandidate(doc: AuditDoc, held: boolean, nowMs: number): boolean {
  if (held) return false;
  if (doc.lifecycleState === "PURGE_ELIGIBLE" || doc.lifecycleState === "SOFT_DELETED") return true;
  return isExpired({ expireAtMs: typeof doc.expireAt === "number" ? doc.expireAt : null, retainUntilMs: doc.retainUntilMs }, nowMs);
}

/** An object as the audit reads it: its path, the holds whose marker it carries, and its heldWith documents (one per storage entry that reaches it). */
export interface AuditObject {
  path: string;
  markerHoldIds: readonly string[];
  heldWith: readonly string[];
}

/**
 * A Cloud Storage object against the hold records: a marker of a hold that is not active is OBJECT_MARKER_STALE; an
 * active hold whose record covers one of its heldWith documents, whose flagging is done (`appliedHoldIds`: ACTIVE,
 * applied, not being released) and whose marker it lacks is OBJECT_HELD_UNMARKED.
 */
export function auditObject(o: AuditObject, holds: readonly ActiveHoldRef[], appliedHoldIds: ReadonlySet<string>): Finding[] {
  const out: Finding[] = [];
  const active = new Set(holds.map((h) => h.holdId));
  for (const id of o.markerHoldIds) {
    if (!active.has(id)) out.push({ path: o.path, code: "OBJECT_MARKER_STALE", holdIds: [id], detail: `carries the marker of hold ${id}, which is not active` });
  }
  for (const h of holds) {
    if (!appliedHoldIds.has(h.holdId) || h.letGo || o.markerHoldIds.includes(h.holdId)) continue;
    if (o.heldWith.some((w) => coveringHold(w, [h]) !== undefined)) out.push({ path: o.path, code: "OBJECT_HELD_UNMARKED", holdIds: [h.holdId], detail: `hold ${h.holdId} covers it, but it carries no marker of it` });
  }
  return out;
}

/** How far back the audit looks at answered requests for DEADLINE_MISSED and the "answered within deadline" counts. */
export const DEADLINE_LOOKBACK_DAYS = 365;

/** An answered request as the deadline check reads it. */
export interface AnsweredRequestFacts {
  path: string;
  dueAtMs: number | null;
  answeredAtMs: number | null;
  /** The law of its legal clock; null for a request due by its class. */
  law: string | null;
}

/** DEADLINE_MISSED for a request answered after its deadline; nothing for one answered in time or not yet answered. */
export function auditAnsweredRequest(r: AnsweredRequestFacts): Finding[] {
  if (r.dueAtMs === null || r.answeredAtMs === null || r.answeredAtMs <= r.dueAtMs) return [];
  const late = Math.ceil((r.answeredAtMs - r.dueAtMs) / 86_400_000);
  return [{ path: r.path, code: "DEADLINE_MISSED", detail: `answered ${iso(r.answeredAtMs)}, ${late}d after its ${r.law ?? "due"} deadline ${iso(r.dueAtMs)}` }];
}
