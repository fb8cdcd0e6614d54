import { FieldPath, type CollectionReference, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { isLifecycleState } from "../domain/lifecycle";
import { fillTemplate } from "../domain/paths";
import type { DiscoveredDoc, Subject } from "../domain/plan";
import type { DataMapEntry } from "../domain/policy-schema";
import { db } from "./firestore";
import { readGoverned } from "./governed-doc";
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
 * Every descendant document of `docPath`, at any depth, depth first, in (collection id, document id) order.
 * Memory stays bounded: one page per level of nesting. The walk recurses with `listCollections()` (which
 * also finds subcollections of a document that no longer exists) and pages each collection with a
 * `select()` of the retention fields. Children of a *missing* document inside a collection are not
 * reached by a query; such orphans are the TTL trigger's and the audit's (ORPHANED_SUBCOLLECTION) concern.
 */
export async function* streamDescendants(docPath: string, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<QueryDocumentSnapshot> {
  const collections = await db().doc(docPath).listCollections();
  for (const col of sortById(collections)) {
    for await (const d of pageQuery(col, pageSize)) {
      yield d;
      yield* streamDescendants(d.ref.path, pageSize);
    }
  }
}

function sortById(cols: CollectionReference[]): CollectionReference[] {
  return [...cols].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function discoveredFrom(snap: { ref: { path: string }; data: () => Record<string, unknown> | undefined }, entryId: string): DiscoveredDoc {
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

/**
 * Walks a subject's data map and yields every document it names: `doc` entries by path, `query` and
 * `collectionGroup` entries by their foreign-key filters, and for `recursive` entries every descendant at
 * any depth (reported under the same entry). A path may be yielded twice when two entries reach it; the
 * planner keeps the stricter entry.
 */
export async function* discoverSubject(subject: Subject, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<DiscoveredDoc> {
  const vars = subjectVars(subject);
  for (const entry of policy().dataMap(subject.type)) {
    if (entry.kind === "doc") {
      const path = fillTemplate(entry.path ?? "", vars);
      const snap = await db().doc(path).get();
      if (snap.exists) yield discoveredFrom(snap, entry.id);
      if (entry.recursive) for await (const d of streamDescendants(path, pageSize)) yield discoveredFrom(d, entry.id);
      continue;
    }
    for await (const snap of pageQuery(entryQuery(entry, vars), pageSize)) {
      yield discoveredFrom(snap, entry.id);
      if (entry.recursive) for await (const d of streamDescendants(snap.ref.path, pageSize)) yield discoveredFrom(d, entry.id);
    }
  }
}
