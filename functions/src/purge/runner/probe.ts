import { FieldPath, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { compareNames, parentDocumentPath, segments } from "../../kernel/paths";
import { db } from "../../platform/firestore";
import { descendantsQuery } from "../../platform/kindless";
import { readAll } from "../store";

/**
 * The "does anything remain under this document" probe before a parent is deleted, for a whole batch at
 * once: one kindless all-descendants query (platform/kindless.ts) over the document-name range the batch
 * spans, instead of one listCollections call (plus one query per subcollection) per document. It also sees
 * documents nested under a missing intermediate document.
 */

/** Longest common ancestor document of `paths` (null: the database root). */
function commonAncestorDoc(paths: readonly string[]): string | null {
  let common = segments(paths[0]!);
  for (const p of paths.slice(1)) {
    const s = segments(p);
    let k = 0;
    while (k < common.length && k < s.length && common[k] === s[k]) k++;
    common = common.slice(0, k);
  }
  // A batch item is not its own ancestor; the ancestor must be a document (an even number of segments).
  let n = Math.min(common.length, Math.min(...paths.map((p) => segments(p).length)) - 1);
  if (n % 2 === 1) n--;
  return n >= 2 ? common.slice(0, n).join("/") : null;
}

const PAGE = 1000;
const SINGLE_CONCURRENCY = 50;

/**
 * Scans the document-name range a set of items spans (from the first item to the last, and with
 * `subtreeOfLast` everything under the last too), passing each document found to `visit`. Items of a
 * policy sweep can be spread thinly over a large live collection; once the scan has met more than
 * `maxForeign` (default: max(100, items)) documents that are neither items nor under one, it stops and
 * returns false, and the caller falls back to asking about each item on its own. Cost is therefore bounded
 * by about twice the batch.
 */
async function scanRange(
  sorted: readonly string[],
  subtreeOfLast: boolean,
  isForeign: (path: string) => boolean,
  visit: (path: string) => void,
  maxForeign: number = Math.max(100, sorted.length),
): Promise<boolean> {
  const ancestor = commonAncestorDoc(sorted);
  const last = sorted[sorted.length - 1]!;
  const base = descendantsQuery(ancestor)
    .select(FieldPath.documentId())
    .where(FieldPath.documentId(), ">=", db().doc(sorted[0]!))
    // Past `last` and everything under it: its last segment with a NUL appended.
    .where(FieldPath.documentId(), subtreeOfLast ? "<" : "<=", db().doc(subtreeOfLast ? `${last}\u0000` : last))
    .limit(PAGE);
  let foreign = 0;
  let cursor: QueryDocumentSnapshot | undefined;
  for (;;) {
    const snap = await (cursor ? base.startAfter(cursor) : base).get();
    for (const d of snap.docs) {
      if (isForeign(d.ref.path) && ++foreign > maxForeign) return false;
      visit(d.ref.path);
    }
    if (snap.size < PAGE) return true;
    cursor = snap.docs[snap.docs.length - 1];
  }
}

/** The nearest ancestor of `path` (or itself) among `items`, if any. */
function itemAtOrAbove(path: string, items: ReadonlySet<string>): string | null {
  for (let up: string | null = path; up !== null; up = parentDocumentPath(up)) if (items.has(up)) return up;
  return null;
}

/**
 * Paths among `paths` with at least one document under them, at any depth. Only the batch's own items
 * are trusted to bound the range: an item the query did not return as itself (already gone, or outside
 * the computed range) is probed on its own, so a range mistake can only cost time, never hide a
 * descendant (every descendant sorts between its item and the range's upper bound once the item itself
 * is inside the range).
 */
export async function descendantsRemainBatch(paths: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  if (paths.length === 0) return out;
  const items = new Set(paths);
  const sorted = [...items].sort(compareNames);
  const seen = new Set<string>();
  const complete = await scanRange(
    sorted,
    true,
    (path) => itemAtOrAbove(path, items) === null,
    (path) => {
      if (items.has(path)) {
        seen.add(path);
        return;
      }
      const parent = parentDocumentPath(path);
      const owner = parent === null ? null : itemAtOrAbove(parent, items);
      if (owner !== null) out.add(owner);
    },
  );
  if (!complete) {
    out.clear();
    seen.clear();
  }
  const unseen = sorted.filter((p) => !seen.has(p) && !out.has(p));
  for (let i = 0; i < unseen.length; i += SINGLE_CONCURRENCY) {
    const slice = unseen.slice(i, i + SINGLE_CONCURRENCY);
    const remain = await Promise.all(slice.map(descendantsRemainOne));
    slice.forEach((p, j) => {
      if (remain[j]) out.add(p);
    });
  }
  return out;
}

/**
 * How many documents lie in the name range a batch's items span, everything under the last item included: one
 * count() aggregation over the same kindless range the scan reads, which production bills at about one read per
 * 1,000 index entries where the scan bills one per document returned. When the count equals the number of items
 * that exist, the range holds the items and nothing else, so no item has anything under it (see
 * {@link probeBatch} for when that conclusion is sound).
 */
export async function countInBatchRange(paths: readonly string[]): Promise<number> {
  const sorted = [...new Set(paths)].sort(compareNames);
  const last = sorted[sorted.length - 1]!;
  const snap = await descendantsQuery(commonAncestorDoc(sorted))
    .where(FieldPath.documentId(), ">=", db().doc(sorted[0]!))
    .where(FieldPath.documentId(), "<", db().doc(`${last}\u0000`))
    .count()
    .get();
  return snap.data().count;
}

/** Whether an item of the batch lies under another: then one item's count hides the other's descendants, and only the scan can say. */
function itemsNest(paths: readonly string[]): boolean {
  const items = new Set(paths);
  return paths.some((p) => {
    const parent = parentDocumentPath(p);
    return parent !== null && itemAtOrAbove(parent, items) !== null;
  });
}

/**
 * Which of a batch's items have something under them. One count() over the batch's name range answers "none of them"
 * when the range holds exactly the items that exist and the documents `inRange` names that exist:
 * - a read item exists as the transaction's read of it saw it (`readGone` counts those it found gone);
 * - an unread item is deleted with its decided version as a precondition, so an unread item that is gone (or was
 *   replaced) fails the whole commit and the batch runs again on the read path, where every item is read;
 * - `inRangePresent` is how many of {@link ancestorsInRange} the transaction read and found: a batch of children
 *   spanning several parents takes the parents between in, and they are read (and so locked) in the transaction.
 * A descendant, any other document, or a gone item's orphan makes the count differ, and the range scan then says which
 * items have descendants. `inRangePresent` null (ancestorsInRange said the count cannot be used: items nested in one
 * another, where an item would stand for its parent's descendant, or too many parents) sends the batch to the scan.
 */
export async function probeBatch(paths: readonly string[], readGone: number, inRangePresent: number | null): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  if (inRangePresent !== null && (await countInBatchRange(paths)) === paths.length - readGone + inRangePresent) return new Set();
  return descendantsRemainBatch(paths);
}

/** More ancestors in a batch's range than this, and the batch is scanned rather than counted (each would cost a read). */
export const MAX_ANCESTORS_IN_RANGE = 100;

/**
 * The items' ancestor documents whose names lie inside the batch's range (after the first item, before the end of the
 * last one's subtree): the parents a batch of children takes in when it spans several of them. Null when the count
 * cannot be used: nested items, or more such ancestors than {@link MAX_ANCESTORS_IN_RANGE}.
 */
export function ancestorsInRange(paths: readonly string[]): string[] | null {
  if (paths.length === 0) return [];
  if (itemsNest(paths)) return null;
  const items = new Set(paths);
  const sorted = [...items].sort(compareNames);
  const [first, last] = [sorted[0]!, sorted[sorted.length - 1]!];
  const out = new Set<string>();
  for (const p of sorted) {
    for (let up = parentDocumentPath(p); up !== null; up = parentDocumentPath(up)) {
      if (compareNames(first, up) < 0 && compareNames(up, last) < 0 && !items.has(up)) out.add(up);
    }
  }
  return out.size > MAX_ANCESTORS_IN_RANGE ? null : [...out].sort(compareNames);
}

/**
 * Which of `paths` exist now, by scanning their name range instead of reading each one: a range holding
 * only what survived costs one read per survivor (plus one per query), where reading a deleted document
 * by name costs a read each. Falls back to reading by name when the range is crowded with other documents.
 */
export async function existingAmong(paths: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  if (paths.length === 0) return out;
  const items = new Set(paths);
  const sorted = [...items].sort(compareNames);
  const complete = await scanRange(
    sorted,
    false,
    (path) => !items.has(path),
    (path) => {
      if (items.has(path)) out.add(path);
    },
  );
  if (complete) return out;
  out.clear();
  for (const s of await readAll(sorted)) if (s.exists) out.add(s.ref.path);
  return out;
}

/**
 * Every document whose name lies in [first, last], streamed, or null once there are more than `limit` of
 * them. After a unit's deletes the range a manifest spans holds only what survived, so one scan answers
 * "which paths still exist" for the whole manifest, at one read per survivor.
 */
export async function documentsInRange(first: string, last: string, limit: number): Promise<Set<string> | null> {
  const out = new Set<string>();
  // Every document counts against the limit: none of them is known in advance.
  const complete = await scanRange([first, last], false, () => true, (path) => out.add(path), limit);
  return complete ? out : null;
}

/**
 * The one-document probe: the same kindless query under the document itself, one document enough to say
 * "not yet". Unlike listing subcollections and querying each, it also sees documents nested under a
 * missing intermediate document (a/b/c/y/d/z with no a/b/c/y).
 */
export async function descendantsRemainOne(path: string): Promise<boolean> {
  const snap = await descendantsQuery(path)
    .select(FieldPath.documentId())
    .limit(1)
    .get();
  return !snap.empty;
}
