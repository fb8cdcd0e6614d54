import type { DocumentSnapshot, Query, Timestamp } from "firebase-admin/firestore";
import { isLifecycleState } from "../kernel/lifecycle";
import { fillTemplate } from "../kernel/paths";
import type { DiscoveredDoc, DiscoveredObject, Subject } from "./rules";
import type { DataMapEntry, StorageEntry } from "../kernel/policy-schema";
import { fillObjectTemplate, heldWithPath, listingPrefix, objectPath, objectVars, templateOf } from "../kernel/storage-map";
import { templateVariables } from "../kernel/policy-schema";
import { bucketOfEntry, listObjects, readObject, type StorageObject } from "../platform/storage";
import { db } from "../platform/firestore";
import { DEFAULT_PAGE_SIZE, STREAMED_DESCENDANTS, pageGoverned, readGoverned, streamGovernedDescendants, type DescendantReads } from "../platform/governed-doc";
import { policy } from "../platform/registry";

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

/** A subject's template variables (kernel/policy.ts#subjectVars), in the registry the functions enforce. */
export const subjectVars = (subject: Subject): Record<string, string> => policy().subjectVars(subject);

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
  snap: { ref: { path: string }; data: () => Record<string, unknown> | undefined; updateTime?: Timestamp };
  entryId: string;
  /** Reached by the entry itself (a `doc` path or a query result), not as a descendant of one. */
  root: boolean;
}

/**
 * Walks a subject's data map and yields every document it names: `doc` entries by path, `query` and
 * `collectionGroup` entries by their foreign-key filters, and for `recursive` entries every descendant at
 * any depth (reported under the same entry). A path may be yielded twice when two entries reach it; the
 * planner keeps the stricter entry.
 */
export async function* discoverSnapshots(
  subject: Subject,
  pageSize: number = DEFAULT_PAGE_SIZE,
  descendants: DescendantReads = STREAMED_DESCENDANTS,
): AsyncGenerator<DiscoveredSnapshot> {
  for (const entry of policy().dataMapOf(subject)) yield* discoverEntry(subject, entry, pageSize, descendants);
}

/**
 * One data-map entry's documents: each root (the `doc` path, or each query result), followed at once by its
 * descendants in name order when the entry is recursive. A root's subtree is therefore contiguous in the
 * stream, which is what lets the purge plan it in constant memory.
 */
export async function* discoverEntry(
  subject: Subject,
  entry: DataMapEntry,
  pageSize: number = DEFAULT_PAGE_SIZE,
  descendants: DescendantReads = STREAMED_DESCENDANTS,
): AsyncGenerator<DiscoveredSnapshot> {
  for await (const snap of entryRoots(subject, entry, pageSize)) {
    if (snap.exists) yield { snap, entryId: entry.id, root: true };
    // A `doc` entry's descendants are the entry's even when the document itself is gone.
    if (entry.recursive) for await (const d of streamGovernedDescendants(snap.ref.path, descendants)) yield { snap: d, entryId: entry.id, root: false };
  }
}

/**
 * The documents a data-map entry reaches itself, without their descendants (retention fields only): a `doc` entry's
 * document as read (it may not exist), or each result of its query.
 */
export async function* entryRoots(subject: Subject, entry: DataMapEntry, pageSize: number = DEFAULT_PAGE_SIZE): AsyncGenerator<DocumentSnapshot> {
  const vars = subjectVars(subject);
  if (entry.kind === "doc") {
    yield await db().doc(fillTemplate(entry.path ?? "", vars)).get();
    return;
  }
  yield* pageGoverned(entryQuery(entry, vars), pageSize);
}

/**
 * discoverSnapshots, reduced to what the planner decides on. `descendants`: how recursive entries' subtrees are read
 * (a consumer that pauses for long between documents reads them in pages, so no query is open meanwhile).
 */
export async function* discoverSubject(
  subject: Subject,
  pageSize: number = DEFAULT_PAGE_SIZE,
  descendants: DescendantReads = STREAMED_DESCENDANTS,
): AsyncGenerator<DiscoveredDoc> {
  for await (const d of discoverSnapshots(subject, pageSize, descendants)) yield discoveredFrom(d.snap, d.entryId);
}

/** An object as discovery reports it, for the storage entry that reached it. */
export function discoveredObjectFrom(o: StorageObject, entry: StorageEntry, vars: Readonly<Record<string, string>>): DiscoveredObject {
  return {
    path: objectPath(o.bucket, o.name),
    generation: o.generation,
    entryId: entry.id,
    heldWith: heldWithPath(entry, vars),
    markerHoldIds: o.holdIds,
    storageHold: o.temporaryHold === true || o.eventBasedHold === true,
  };
}

/**
 * One storage entry's objects for a subject (docs/STORAGE.md), with the StorageObject each came from: a prefix
 * entry lists everything under its filled prefix, a page at a time in name order; an object entry reads its one
 * object. The names a prefix lists all match it; the variables the subject fills are what the heldWith document is
 * filled from.
 */
export async function* discoverEntryObjects(subject: Subject, entry: StorageEntry): AsyncGenerator<{ object: StorageObject; found: DiscoveredObject }> {
  const vars = subjectVars(subject);
  const bucket = bucketOfEntry(entry);
  const template = templateOf(entry);
  // Every variable the subject fills: one object's name, or the whole prefix.
  if (templateVariables(template).every((v) => vars[v] !== undefined && vars[v] !== "")) {
    const filled = fillObjectTemplate(template, vars);
    if (entry.object !== undefined) {
      const o = await readObject(bucket, filled);
      if (o) yield { object: o, found: discoveredObjectFrom(o, entry, vars) };
      return;
    }
    for await (const page of listObjects(bucket, filled)) for (const o of page) yield { object: o, found: discoveredObjectFrom(o, entry, vars) };
    return;
  }
  // A scope's entry that names each user's objects ({uid} read from the name): listed from the scope's own prefix,
  // each name matched against the template, and its variables agreeing with the subject's.
  const prefix = listingPrefix(entry, vars);
  if (prefix === null || !templateVariables(template).some((v) => vars[v] !== undefined && prefix.includes(vars[v]))) {
    throw new Error(`storage entry ${entry.id}: ${template} cannot be listed within the subject`);
  }
  for await (const page of listObjects(bucket, prefix)) {
    for (const o of page) {
      const found = objectVars(entry, o.name);
      if (found === null || Object.entries(vars).some(([k, v]) => found[k] !== undefined && found[k] !== v)) continue;
      yield { object: o, found: discoveredObjectFrom(o, entry, { ...found, ...vars }) };
    }
  }
}

/** Every object a subject's storage entries reach (an app without storage entries reads nothing). */
export async function* discoverObjects(subject: Subject): AsyncGenerator<DiscoveredObject> {
  for (const entry of policy().storageMapOf(subject)) for await (const d of discoverEntryObjects(subject, entry)) yield d.found;
}
