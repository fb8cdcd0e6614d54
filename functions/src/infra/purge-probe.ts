import { createRequire } from "node:module";
import { FieldPath, type DocumentReference, type Firestore, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { parentDocumentPath, segments } from "../domain/paths";
import { db } from "./firestore";

/**
 * The "does anything remain under this document" probe before a parent is deleted, for a whole batch at
 * once. One kindless all-descendants query (the query the Admin SDK's recursiveDelete and the Firebase
 * CLI's delete engine use) over the document-name range the batch spans replaces one listCollections
 * call (plus one query per subcollection) per document: at 10k documents that was ~30% of the purge's
 * wall time. It also sees what listCollections-then-query missed: documents nested under a missing
 * intermediate document. The public SDK does not expose kindless queries, so the query is built from the SDK's own
 * QueryOptions; if that internal ever changes shape, loading fails loudly here instead of probing wrong.
 */

interface KindlessInternals {
  Query: new (firestore: Firestore, options: unknown) => Query;
  forKindless: (parent: unknown) => unknown;
  pathOf: (ref: DocumentReference) => unknown;
  rootPath: () => unknown;
}

let internals: KindlessInternals | null = null;

function kindless(): KindlessInternals {
  if (internals) return internals;
  const req = createRequire(require.resolve("firebase-admin/firestore"));
  const sdk = createRequire(req.resolve("@google-cloud/firestore"));
  const q = sdk("./reference/query") as { Query?: KindlessInternals["Query"] };
  const o = sdk("./reference/query-options") as { QueryOptions?: { forKindlessAllDescendants?: (p: unknown, id: string, consistent: boolean) => unknown } };
  const p = sdk("./path") as { ResourcePath?: { EMPTY?: unknown } };
  const forKindless = o.QueryOptions?.forKindlessAllDescendants;
  if (typeof q.Query !== "function" || typeof forKindless !== "function" || p.ResourcePath?.EMPTY === undefined) {
    throw new Error("PURGE_PROBE_UNAVAILABLE: this @google-cloud/firestore version has no kindless all-descendants query");
  }
  const Q = q.Query;
  const empty = p.ResourcePath.EMPTY;
  internals = {
    Query: Q,
    forKindless: (parent) => forKindless.call(o.QueryOptions, parent, "", false),
    pathOf: (ref) => (ref as unknown as { _path: unknown })._path,
    rootPath: () => empty,
  };
  return internals;
}

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

/** Firestore's order for document names: segment by segment, each by its UTF-8 bytes. */
function compareNames(a: string, b: string): number {
  const x = segments(a);
  const y = segments(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = Buffer.compare(Buffer.from(x[i]!, "utf8"), Buffer.from(y[i]!, "utf8"));
    if (c !== 0) return c;
  }
  return x.length - y.length;
}

const PAGE = 1000;
const SINGLE_CONCURRENCY = 50;

/**
 * Paths among `paths` with at least one document under them, at any depth. Only the batch's own items
 * are trusted to bound the range: an item the query did not return as itself (already gone, or outside
 * the computed range) is probed on its own, so a range mistake can only cost time,
 * never hide a descendant (every descendant sorts between its item and the range's upper bound once the
 * item itself is inside the range).
 */
export async function descendantsRemainBatch(paths: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  if (paths.length === 0) return out;
  const k = kindless();
  const items = new Set(paths);
  const sorted = [...items].sort(compareNames);
  const ancestor = commonAncestorDoc(sorted);
  const parent = ancestor === null ? k.rootPath() : k.pathOf(db().doc(ancestor));
  const last = sorted[sorted.length - 1]!;
  // Just past `last` and everything under it: the last segment with a NUL appended.
  const upper = db().doc(`${last}\u0000`);
  const base = new k.Query(db(), k.forKindless(parent))
    .select(FieldPath.documentId())
    .where(FieldPath.documentId(), ">=", db().doc(sorted[0]!))
    .where(FieldPath.documentId(), "<", upper)
    .limit(PAGE);
  const seen = new Set<string>();
  let cursor: QueryDocumentSnapshot | undefined;
  for (;;) {
    const snap = await (cursor ? base.startAfter(cursor) : base).get();
    for (const d of snap.docs) {
      const path = d.ref.path;
      if (items.has(path)) {
        seen.add(path);
        continue;
      }
      for (let up = parentDocumentPath(path); up !== null; up = parentDocumentPath(up)) {
        if (items.has(up)) {
          out.add(up);
          break;
        }
      }
    }
    if (snap.size < PAGE) break;
    cursor = snap.docs[snap.docs.length - 1];
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
 * The one-document probe: the same kindless query under the document itself, one document enough to say
 * "not yet". Unlike listing subcollections and querying each, it also sees documents nested under a
 * missing intermediate document (a/b/c/y/d/z with no a/b/c/y).
 */
export async function descendantsRemainOne(path: string): Promise<boolean> {
  const k = kindless();
  const snap = await new k.Query(db(), k.forKindless(k.pathOf(db().doc(path))))
    .select(FieldPath.documentId())
    .limit(1)
    .get();
  return !snap.empty;
}
