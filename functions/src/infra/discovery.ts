import { FieldPath, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { isLifecycleState } from "../domain/lifecycle";
import { fillTemplate } from "../domain/paths";
import type { DiscoveredDoc, Subject } from "../domain/plan";
import type { DataMapEntry } from "../domain/policy-schema";
import { db } from "./firestore";
import { readGoverned } from "./governed-doc";
import { descendantsQuery } from "./kindless";
import { policy } from "./registry";

/**
 * The fields discovery reads: the retention fields and the soft-delete bookkeeping, never business content.
 * Planning decides on these alone, so a discovery read never moves personal data into memory it has no
 * use for.
 */
export const DISCOVERY_FIELDS = [
  "retentionClass",
  "lifecycleState",
  "tenantId",
  "policyVersion",
  "createdAt",
  "expireAt",
  "retainUntil",
  "legalHold",
  "holdIds",
  "deletionRequestId",
  // The purge's own decision record (which unit claimed the document), so planning needs no second read.
  "purgeDecision",
] as const;

export const DEFAULT_PAGE_SIZE = 300;

/**
 * Pages through a query in document-id order, one page in memory at a time. Ordering by document id gives
 * a stable cursor (`startAfter` the last snapshot) that needs no extra index and survives concurrent
 * writes to other documents.
 */
export async function* pageQuery(query: Query, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<QueryDocumentSnapshot> {
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = query.select(...DISCOVERY_FIELDS).orderBy(FieldPath.documentId()).limit(pageSize);
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

/**
 * Every descendant document of `docPath`, at any depth, in document-name order (depth first, collection id
 * then document id). One kindless all-descendants query (infra/kindless.ts), streamed in segments with a
 * `select()` of the retention fields, walks the whole subtree: one read per document and one request per
 * segment, however the subtree is shaped. The consumer's pace holds the stream back, so memory stays at the
 * stream's buffer. It also returns documents under a *missing* intermediate document (subcollections of a
 * deleted parent), which a subject's erasure must reach too.
 */
export async function* streamDescendants(docPath: string, segment: number = DESCENDANT_SEGMENT): AsyncGenerator<QueryDocumentSnapshot> {
  const base = descendantsQuery(docPath).select(...DISCOVERY_FIELDS);
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let seen = 0;
    for await (const d of (last ? base.startAfter(last) : base).limit(segment).stream() as AsyncIterable<QueryDocumentSnapshot>) {
      seen++;
      last = d;
      yield d;
    }
    if (seen < segment) return;
  }
}

export function discoveredFrom(snap: DiscoveredSnapshot["snap"], entryId: string): DiscoveredDoc {
  const g = readGoverned(snap.data());
  return {
    path: snap.ref.path,
    entryId,
    doc: {
      retentionClass: g?.retentionClass ?? null,
      // The planner decides on class, hold and expiry; the purge re-reads each document before it acts.
      lifecycleState: g && isLifecycleState(g.lifecycleState) ? g.lifecycleState : "ACTIVE",
      legalHold: g?.legalHold ?? false,
      expireAtMs: g?.expireAtMs ?? null,
      retainUntilMs: g?.retainUntilMs ?? null,
    },
  };
}

export function subjectVars(subject: Subject): Record<string, string> {
  return subject.type === "user" ? { uid: subject.uid, tenantId: subject.tenantId } : { tenantId: subject.tenantId };
}

/** The query a `query` or `collectionGroup` data-map entry stands for, with its foreign keys filled in. */
function entryQuery(entry: DataMapEntry, vars: Record<string, string>): Query {
  let q: Query =
    entry.kind === "collectionGroup"
      ? db().collectionGroup(entry.collectionId ?? "")
      : db().collection(fillTemplate(entry.collection ?? "", vars));
  for (const [field, op, value] of entry.where) q = q.where(field, op, fillTemplate(value, vars));
  return q;
}

/** A discovered document as read: its snapshot (retention fields only) and the data-map entry that reached it. */
export interface DiscoveredSnapshot {
  snap: { ref: { path: string }; data: () => Record<string, unknown> | undefined };
  entryId: string;
}

/**
 * Walks a subject's data map and yields every document it names: `doc` entries by path, `query` and
 * `collectionGroup` entries by their foreign-key filters, and for `recursive` entries every descendant at
 * any depth (reported under the same entry). A path may be yielded twice when two entries reach it; the
 * planner keeps the stricter entry.
 */
export async function* discoverSnapshots(subject: Subject, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<DiscoveredSnapshot> {
  const vars = subjectVars(subject);
  for (const entry of policy().dataMap(subject.type)) {
    if (entry.kind === "doc") {
      const path = fillTemplate(entry.path ?? "", vars);
      const snap = await db().doc(path).get();
      if (snap.exists) yield { snap, entryId: entry.id };
      if (entry.recursive) for await (const d of streamDescendants(path)) yield { snap: d, entryId: entry.id };
      continue;
    }
    for await (const snap of pageQuery(entryQuery(entry, vars), pageSize)) {
      yield { snap, entryId: entry.id };
      if (entry.recursive) for await (const d of streamDescendants(snap.ref.path)) yield { snap: d, entryId: entry.id };
    }
  }
}

/** discoverSnapshots, reduced to what the planner decides on. */
export async function* discoverSubject(subject: Subject, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<DiscoveredDoc> {
  for await (const d of discoverSnapshots(subject, pageSize)) yield discoveredFrom(d.snap, d.entryId);
}
