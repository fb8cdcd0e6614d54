import { FieldPath, type DocumentSnapshot, type Query } from "firebase-admin/firestore";
import { DomainError } from "../kernel/errors";
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor } from "../kernel/paging";
import { policy } from "../platform/registry";
import { COLLECTIONS, db } from "../platform/firestore";
import { entryDocId, LEGACY_SEGMENT, shardOf, type ChainedEvidence } from "./rules";
import { verifyEntries } from "./read";
import { entryRef } from "./store";
import { verifyEvidence } from "./verify";

/**
 * "Why was this deleted, and who allowed it?": the one place that reads the evidence about a document path,
 * a deletion request or a subject. Everything else (the explainDeletion callable, `retention explain`, the
 * console) goes through `explainEvidence`. Entries are named by their ledger id (chain and seq): the ledger has
 * many chains, so a seq alone names nothing.
 */
export type ExplainQuery = { kind: "path" | "request" | "subject" | "scope"; value: string; scope?: string };

/** What a question names, in the callable's and the CLI's input forms (contract/evidence.ts#ExplainDeletionInput). */
export type ExplainInput =
  | { path: string }
  | { requestId: string }
  | { subjectUid: string }
  | { subject: { type: "user"; uid: string; scope?: string } | { type: "scope"; id: string } };

/**
 * The question an input asks: a path, a request, a user's requests (every scope, or one: `scope`), or a scope's
 * closures. The documented `subjectUid` is the user form without a scope.
 */
export function explainQueryOf(input: ExplainInput): ExplainQuery {
  if ("path" in input) return { kind: "path", value: input.path };
  if ("requestId" in input) return { kind: "request", value: input.requestId };
  if ("subjectUid" in input) return { kind: "subject", value: input.subjectUid };
  const s = input.subject;
  return s.type === "scope" ? { kind: "scope", value: s.id } : { kind: "subject", value: s.uid, ...(s.scope !== undefined ? { scope: s.scope } : {}) };
}

export interface ExplainOptions {
  pageSize?: number;
  cursor?: string;
  /** "entries": each shown entry's hash, MAC and links; "chain": the whole ledger (every chain, the anchors) as well. */
  verify?: "entries" | "chain";
}

/** At most this many paths of one entry are shown (an entry of a purge batch names up to a batch's worth). */
const PATHS_SHOWN = 100;
/** Context is gathered for at most this many requests and runs named by a page. */
const CONTEXT_FANOUT = 5;
/** A subject's requests considered (Firestore's `in` takes 30 values). */
const SUBJECT_REQUESTS = 30;
/** What a run's context is: who started it and who approved what it deleted. */
const RUN_CONTEXT_ACTIONS = ["JOB_RUN", "PURGE_BRAKE_APPROVED"];
/**
 * What a request's context is: who asked (and, for a tenant's closure, the second person who approved), what was
 * decided, how it ended. Queried by action (Firestore's `in` takes 30 values): a large erasure's PURGE_BATCH
 * entries, spread over many chains, must not crowd these out of the page.
 */
const REQUEST_CONTEXT_ACTIONS = new Set([
  "DELETION_REQUESTED",
  "TENANT_CLOSURE_APPROVED",
  "ERASURE_REPLAY_OPENED",
  "ERASURE_COMPLETE",
  "BACKSTOP_REQUEST_OPENED",
  "DELETION_CANCEL_REQUESTED",
  "DELETION_CANCELLED",
  "PURGE_DECIDED",
  "PURGE_BRAKE_APPROVED",
  "PURGE_VERIFIED",
  "PURGE_BLOCKED",
  "PURGE_RETAINED_UNDER_HOLD",
]);

export interface EntryView {
  id: string;
  chain: string;
  seq: number;
  at: string;
  action: string;
  actor: ChainedEvidence["actor"];
  reason: string;
  policyVersion: string;
  requestId: string | null;
  holdId: string | null;
  correlationId: string | null;
  manifestHash: string | null;
  counts: Record<string, number>;
  pathCount: number;
  paths: string[];
  detail: Record<string, string | number | boolean | null>;
  hash: string;
  role: "match" | "context";
  verified: boolean;
}

type Problem = { id: string | null; chain: string; seq: number; problem: string; detail: string };

export interface ExplainResult {
  query: ExplainQuery;
  entries: EntryView[];
  nextCursor: string | null;
  summary: string[];
  verification: { mode: "entries" | "chain"; ok: boolean; checked: number; problems: Problem[] };
}

const audits = () => db().collection(COLLECTIONS.deletionAudits);
const entryOf = (s: DocumentSnapshot) => s.data() as ChainedEvidence;

/** The page of entries that name the path, the request or the subject's requests, in ledger-id order. */
async function matchPage(q: ExplainQuery, size: number, afterDocId: string | null): Promise<{ docs: DocumentSnapshot[]; more: boolean }> {
  let query: Query;
  if (q.kind === "path") query = audits().where("paths", "array-contains", q.value);
  else if (q.kind === "request") query = audits().where("requestId", "==", q.value);
  else {
    const col = db().collection(COLLECTIONS.deletionRequests);
    // A user's requests (in one scope, when named), or a scope's closures: equality filters only.
    const mine = q.kind === "scope" ? col.where("subjectType", "==", "tenant").where("tenantId", "==", q.value) : q.scope !== undefined ? col.where("uid", "==", q.value).where("tenantId", "==", q.scope) : col.where("uid", "==", q.value);
    const requests = await mine.select().limit(SUBJECT_REQUESTS).get();
    const ids = requests.docs.map((d) => d.id);
    if (ids.length === 0) return { docs: [], more: false };
    query = audits().where("requestId", "in", ids);
  }
  query = query.orderBy(FieldPath.documentId());
  if (afterDocId !== null) query = query.startAfter(afterDocId);
  const snap = await query.limit(size + 1).get();
  return { docs: snap.docs.slice(0, size), more: snap.docs.length > size };
}

/** How many archive copies of one source path explain looks at (a source is archived once per retention anchor). */
const COPIES_SHOWN = 5;

/**
 * The ARCHIVE_SHREDDED entries of the archive copies of a path (the copy itself, or the copies of a source), found by
 * the data key each copy names (decision 0038): a shred's evidence names the key, not each of its copies.
 */
async function shreddedCopiesOf(path: string): Promise<ChainedEvidence[]> {
  const segs = path.split("/");
  const copies =
    segs.length === 2 && segs[0] === COLLECTIONS.archives
      ? [await db().doc(path).get()]
      : (await db().collection(COLLECTIONS.archives).where("sourcePath", "==", path).select("dataKey").limit(COPIES_SHOWN).get()).docs;
  const keys = [...new Set(copies.map((c) => c.get("dataKey") as unknown).filter((k): k is string => typeof k === "string"))];
  const out: ChainedEvidence[] = [];
  for (const k of keys) {
    const snap = await audits().where("detail.dataKey", "==", k).limit(1).get();
    out.push(...snap.docs.map(entryOf).filter((e) => e.action === "ARCHIVE_SHREDDED"));
  }
  return out;
}

/**
 * The entries that say who allowed what the matches record: for each request they name, the request's own
 * decisions (who asked, what the purge decided, how it ended); for each purge run, the run's start (JOB_RUN,
 * an operator's) and any brake approval, with the approver's own decision entry.
 */
async function contextOf(matches: readonly ChainedEvidence[]): Promise<ChainedEvidence[]> {
  const found = new Map<string, ChainedEvidence>();
  const keep = (e: ChainedEvidence) => found.set(entryDocId(e), e);
  const requestIds = [...new Set(matches.map((m) => m.requestId).filter((r): r is string => typeof r === "string"))].slice(0, CONTEXT_FANOUT);
  for (const id of requestIds) {
    const snap = await audits().where("requestId", "==", id).where("action", "in", [...REQUEST_CONTEXT_ACTIONS]).orderBy(FieldPath.documentId()).limit(200).get();
    for (const d of snap.docs) keep(entryOf(d));
  }
  const runs = [...new Set(matches.filter((m) => m.action.startsWith("PURGE_")).map((m) => m.correlationId).filter((c): c is string => typeof c === "string"))].slice(0, CONTEXT_FANOUT);
  for (const correlationId of runs) {
    const snap = await audits().where("correlationId", "==", correlationId).where("action", "in", RUN_CONTEXT_ACTIONS).orderBy(FieldPath.documentId()).limit(20).get();
    for (const d of snap.docs) keep(entryOf(d));
  }
  // An approval names the decision it used: the retention-admin's own PURGE_BRAKE_DECIDED entry, by chain and seq.
  const decisions = [...found.values()]
    // An approval recorded before the ledger was sharded names a seq of the first release's chain only.
    .map((e) => ({ shard: e.detail?.approvalShard ?? LEGACY_SEGMENT, seq: e.detail?.approvalSeq }))
    .filter((d): d is { shard: string; seq: number } => typeof d.shard === "string" && typeof d.seq === "number")
    .map((d) => entryRef(d.shard, d.seq))
    .filter((ref) => !found.has(ref.id));
  if (decisions.length > 0) for (const s of await db().getAll(...decisions)) if (s.exists) keep(entryOf(s));
  const matched = new Set(matches.map(entryDocId));
  return [...found.values()].filter((e) => !matched.has(entryDocId(e))).sort(byTime);
}

/** Entries of different chains in the order they happened (ties by ledger id, so the order is stable). */
const byTime = (a: ChainedEvidence, b: ChainedEvidence): number => a.atMs - b.atMs || (entryDocId(a) < entryDocId(b) ? -1 : 1);

/** One sentence for a person: what happened, who did it, under which reason and policy. */
export function describeEntry(e: Pick<ChainedEvidence, "action" | "actor" | "decision" | "policyVersion" | "atMs" | "detail">): string {
  const who = e.actor.type === "system" ? `the system (${e.actor.id})` : `${e.actor.type} ${e.actor.id}`;
  const approved = typeof e.detail?.approvedBy === "string" ? `, approved by ${e.detail.approvedBy}` : "";
  return `${new Date(e.atMs).toISOString()} ${e.action} by ${who}: ${e.decision.reason}, policy ${e.policyVersion}${approved}`;
}

function view(e: ChainedEvidence, role: EntryView["role"], q: ExplainQuery, verified: boolean): EntryView {
  const paths = Array.isArray(e.paths) ? e.paths : [];
  return {
    id: entryDocId(e),
    chain: shardOf(e),
    seq: e.seq,
    at: new Date(e.atMs).toISOString(),
    action: e.action,
    actor: e.actor,
    reason: String(e.decision?.reason ?? ""),
    policyVersion: e.policyVersion,
    requestId: e.requestId ?? null,
    holdId: e.holdId ?? null,
    correlationId: e.correlationId ?? null,
    manifestHash: e.manifestHash ?? null,
    counts: e.counts ?? {},
    pathCount: paths.length,
    // About a path: only that path (a purge batch also names other subjects' paths).
    paths: q.kind === "path" ? paths.filter((p) => p === q.value) : paths.slice(0, PATHS_SHOWN),
    detail: e.detail ?? {},
    hash: e.hash,
    role,
    verified,
  };
}

/**
 * The evidence about a path, a request or a subject: the entries that name it (paged by ledger id, each page
 * in time order), on the
 * first page the entries that say who allowed it, one sentence per match, and whether what is shown verifies
 * (and, with verify "chain", the whole chain).
 */
export async function explainEvidence(q: ExplainQuery, opts: ExplainOptions = {}): Promise<ExplainResult> {
  if ((q.kind === "scope" || q.scope !== undefined) && !policy().scope) {
    throw new DomainError("failed-precondition", "NO_SCOPE_KIND", "This app's registry declares no scope kind: its users belong to none.");
  }
  const size = opts.pageSize ?? DEFAULT_PAGE_SIZE;
  const list = `explain:${q.kind}:${q.value}${q.scope !== undefined ? `:${q.scope}` : ""}`;
  const after = opts.cursor === undefined ? null : String(decodeCursor(list, opts.cursor, 1)[0]);
  const page = await matchPage(q, size, after);
  const matches = page.docs.map(entryOf);
  const shredded = after === null && q.kind === "path" ? await shreddedCopiesOf(q.value) : [];
  const context = after === null ? [...(await contextOf(matches)), ...shredded.filter((e) => !matches.some((m) => entryDocId(m) === entryDocId(e)))] : [];
  // Each shown entry checked where it sits: its hash, its MAC, its links in its chain (read.ts).
  const checked = await verifyEntries([...matches, ...context]);
  const verified = (e: ChainedEvidence) => (checked.get(entryDocId(e)) ?? []).length === 0;
  const problems: Problem[] = [...checked.values()].flat().map((f) => ({ id: f.docId ?? null, chain: f.shard, seq: f.seq, problem: f.problem, detail: f.detail }));
  let entriesChecked = checked.size;
  if (opts.verify === "chain") {
    const ledger = await verifyEvidence({ maxFindings: 50 });
    problems.push(...ledger.findings.map((f) => ({ id: f.docId ?? null, chain: f.shard, seq: f.seq, problem: f.problem, detail: f.detail })));
    entriesChecked = ledger.checked;
  }
  const last = page.docs[page.docs.length - 1];
  const shownMatches = [...matches].sort(byTime);
  return {
    query: q,
    entries: [...shownMatches.map((e) => view(e, "match", q, verified(e))), ...context.map((e) => view(e, "context", q, verified(e)))],
    nextCursor: page.more && last ? encodeCursor(list, [last.id]) : null,
    // What happened, then who allowed it (the request, the run, the brake approval and the approver's decision).
    summary: [
      ...shownMatches.map(describeEntry),
      ...context.map((e) => (e.action === "ARCHIVE_SHREDDED" ? `archive copy crypto-shredded: ${describeEntry(e)}; its key-encryption key is destroyed by ${new Date(Number(e.detail?.fullyGoneByMs)).toISOString()}` : `allowed by: ${describeEntry(e)}`)),
    ],
    verification: { mode: opts.verify ?? "entries", ok: problems.length === 0, checked: entriesChecked, problems },
  };
}
