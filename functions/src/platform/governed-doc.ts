import { FieldPath, FieldValue, Timestamp, type DocumentData, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { PROTECTED_FIELDS, type GovernedFields } from "../kernel/governed";
import { isLifecycleState } from "../kernel/lifecycle";
import { descendantsQuery } from "./kindless";

/** Firestore <-> domain conversion of the retention fields. Times are Timestamps in Firestore, ms in the domain. */

export function toMs(value: unknown): number | null {
  if (value instanceof Timestamp) return value.toMillis();
  if (value instanceof Date) return value.getTime();
  if (value && typeof value === "object" && typeof (value as { toMillis?: unknown }).toMillis === "function") {
    return (value as { toMillis: () => number }).toMillis();
  }
  return null;
}

export const toTimestamp = (ms: number): Timestamp => Timestamp.fromMillis(ms);

/**
 * Reads the retention fields of a stored document. Fields may be missing or wrong on a corrupted or
 * unclassified document: the result says so (retentionClass null, lifecycleState as stored) instead of
 * guessing, so the destroy predicate and the audit see the truth.
 */
export function readGoverned(data: DocumentData | undefined): (Omit<GovernedFields, "retentionClass" | "lifecycleState"> & {
  retentionClass: string | null;
  /** As stored: may be outside the state machine on a corrupted document. */
  lifecycleState: string | null;
}) | null {
  if (!data) return null;
  const preHold = data.preHold as { lifecycleState?: unknown; expireAt?: unknown } | null | undefined;
  return {
    retentionClass: typeof data.retentionClass === "string" ? data.retentionClass : null,
    lifecycleState: typeof data.lifecycleState === "string" ? data.lifecycleState : null,
    tenantId: typeof data.tenantId === "string" ? data.tenantId : "",
    policyVersion: typeof data.policyVersion === "string" ? data.policyVersion : "",
    createdAtMs: toMs(data.createdAt) ?? 0,
    expireAtMs: toMs(data.expireAt),
    retainUntilMs: toMs(data.retainUntil),
    legalHold: data.legalHold === true,
    holdIds: Array.isArray(data.holdIds) ? data.holdIds.filter((x): x is string => typeof x === "string") : [],
    preHold:
      preHold && isLifecycleState(preHold.lifecycleState)
        ? { lifecycleState: preHold.lifecycleState, expireAtMs: toMs(preHold.expireAt) }
        : null,
  };
}

/** Strict form: for code paths that must only act on well-formed governed documents. */
export function readGovernedStrict(data: DocumentData | undefined): GovernedFields | null {
  const g = readGoverned(data);
  if (!g || !g.retentionClass || !isLifecycleState(g.lifecycleState)) return null;
  return { ...g, retentionClass: g.retentionClass, lifecycleState: g.lifecycleState };
}

/**
 * The retention fields as Firestore data. A null TTL value removes the field: TTL ignores documents
 * without it, which is how a held document is kept out of the sweeper's reach.
 * mode "merge" (update / set-merge) deletes absent fields; mode "set" (whole-document set) omits them.
 */
export function governedToFirestore(g: GovernedFields, mode: "merge" | "set" = "merge"): Record<string, unknown> {
  const absent = mode === "merge" ? FieldValue.delete() : undefined;
  const out: Record<string, unknown> = {
    retentionClass: g.retentionClass,
    lifecycleState: g.lifecycleState,
    tenantId: g.tenantId,
    policyVersion: g.policyVersion,
    createdAt: toTimestamp(g.createdAtMs),
    expireAt: g.expireAtMs === null ? absent : toTimestamp(g.expireAtMs),
    retainUntil: g.retainUntilMs === null ? absent : toTimestamp(g.retainUntilMs),
    legalHold: g.legalHold,
    holdIds: g.holdIds,
    preHold:
      g.preHold === null
        ? absent
        : { lifecycleState: g.preHold.lifecycleState, expireAt: g.preHold.expireAtMs === null ? null : toTimestamp(g.preHold.expireAtMs) },
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

/**
 * The one field mask for reading governed documents: the retention fields and the server's bookkeeping (the
 * protected fields, kernel/governed.ts), never business content. Discovery, planning, the purge's
 * transactions, the audit and the backfill all read through it, so a retention read never moves personal data
 * into memory it has no use for.
 */
export const GOVERNED_FIELDS = PROTECTED_FIELDS;

export const DEFAULT_PAGE_SIZE = 300;

/**
 * Pages through a query in document-id order, one page in memory at a time. Ordering by document id gives
 * a stable cursor (`startAfter` the last snapshot) that needs no extra index and survives concurrent
 * writes to other documents.
 */
export async function* pageGoverned(query: Query, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<QueryDocumentSnapshot> {
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = query.select(...GOVERNED_FIELDS).orderBy(FieldPath.documentId()).limit(pageSize);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    for (const d of snap.docs) yield d;
    if (snap.size < pageSize) return;
    last = snap.docs[snap.docs.length - 1];
  }
}

/**
 * Documents per descendant stream segment. One streamed query serves a segment (so no single stream lives
 * long enough to meet its deadline on a large subtree) and the next starts after the last document seen.
 */
export const DESCENDANT_SEGMENT = 20_000;

/** How descendants are read: streamed segments, or pages each read whole with `get()` (see streamGovernedDescendants). */
export interface DescendantReads {
  /** Documents per streamed query, or per page. */
  segment: number;
  read: "stream" | "pages";
}

export const STREAMED_DESCENDANTS: DescendantReads = { segment: DESCENDANT_SEGMENT, read: "stream" };

/**
 * Every descendant document of `docPath`, at any depth, in document-name order (depth first, collection id
 * then document id). One kindless all-descendants query (platform/kindless.ts), read in segments with a
 * `select()` of the retention fields, walks the whole subtree: one read per document and one request per
 * segment, however the subtree is shaped. It also returns documents under a *missing* intermediate document
 * (subcollections of a deleted parent), which a subject's erasure must reach too. Each segment starts after the last
 * document seen.
 * - `stream` (the default): each segment is streamed, and the consumer's pace holds the stream back, so memory stays
 *   at the stream's buffer. The stream is open while the consumer works, so a consumer that pauses for long between
 *   documents must not read this way: a stream open past its deadline fails.
 * - `pages`: each segment is read whole with `get()` before any of it is yielded, so no query is open while the
 *   consumer works; memory is one page of snapshots.
 */
export async function* streamGovernedDescendants(docPath: string, reads: DescendantReads = STREAMED_DESCENDANTS): AsyncGenerator<QueryDocumentSnapshot> {
  const base = descendantsQuery(docPath).select(...GOVERNED_FIELDS);
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    const q = (last ? base.startAfter(last) : base).limit(reads.segment);
    const docs = reads.read === "stream" ? (q.stream() as AsyncIterable<QueryDocumentSnapshot>) : (await q.get()).docs;
    let seen = 0;
    for await (const d of docs) {
      seen++;
      last = d;
      yield d;
    }
    if (seen < reads.segment) return;
  }
}

