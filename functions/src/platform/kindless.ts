import { createRequire } from "node:module";
import type { DocumentReference, Firestore, Query } from "firebase-admin/firestore";
import { db } from "./firestore";

/**
 * Kindless all-descendants queries: every document under a parent, at any depth and in any collection,
 * in document-name order (which is depth-first, collection id then document id). This is the query the
 * Admin SDK's recursiveDelete and the Firebase CLI's delete engine list with. One paged query replaces a
 * `listCollections()` call per document plus a query per subcollection, and it also returns documents
 * nested under a missing intermediate document, which listing subcollections misses.
 *
 * The public SDK does not expose kindless queries, so the query is built from the SDK's own QueryOptions.
 * If that internal ever changes shape, the first use throws here instead of silently reading less.
 */

interface KindlessInternals {
  Query: new (firestore: Firestore, options: unknown) => Query;
  forKindless: (parent: unknown) => unknown;
  rootPath: unknown;
}

let internals: KindlessInternals | null = null;

function load(): KindlessInternals {
  if (internals) return internals;
  const req = createRequire(require.resolve("firebase-admin/firestore"));
  const sdk = createRequire(req.resolve("@google-cloud/firestore"));
  const q = sdk("./reference/query") as { Query?: KindlessInternals["Query"] };
  const o = sdk("./reference/query-options") as { QueryOptions?: { forKindlessAllDescendants?: (p: unknown, id: string, consistent: boolean) => unknown } };
  const p = sdk("./path") as { ResourcePath?: { EMPTY?: unknown } };
  const forKindless = o.QueryOptions?.forKindlessAllDescendants;
  if (typeof q.Query !== "function" || typeof forKindless !== "function" || p.ResourcePath?.EMPTY === undefined) {
    throw new Error("KINDLESS_QUERY_UNAVAILABLE: this @google-cloud/firestore version has no kindless all-descendants query");
  }
  internals = {
    Query: q.Query,
    forKindless: (parent) => forKindless.call(o.QueryOptions, parent, "", false),
    rootPath: p.ResourcePath.EMPTY,
  };
  return internals;
}

const resourcePathOf = (ref: DocumentReference): unknown => (ref as unknown as { _path: unknown })._path;

/** All documents under `parentDocPath` (null: the whole database), at any depth, in name order. */
export function descendantsQuery(parentDocPath: string | null): Query {
  const k = load();
  return new k.Query(db(), k.forKindless(parentDocPath === null ? k.rootPath : resourcePathOf(db().doc(parentDocPath))));
}
