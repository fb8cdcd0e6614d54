import { getAuth } from "firebase-admin/auth";
import type { CollectionReference, DocumentReference, QueryDocumentSnapshot } from "firebase-admin/firestore";
import { adminApp, db } from "../platform/firestore";
import { listFolders, listObjectsAfter } from "../platform/storage";
import { uidCandidates, type BucketSample, type CollectionSample, type SampleSummary } from "./rules";

/**
 * `retention discover`, the reading half: a bounded sample of the database and the Auth uids, for
 * `draftRegistry` (rules.ts). It only reads: `listCollections`, `limit`ed gets and `listUsers`; it never writes.
 *
 * The bounds (docs/DISCOVER.md): at most `perCollection` documents per collection-id path (spread over the
 * parents sampled above it), at most `maxCollections` collection-id paths, subcollections followed to `depth`
 * collection levels, and at most `maxUsers` Auth accounts listed; when Auth has more, at most `maxLookups` of the
 * sample's uid-shaped values are looked up (`getUsers`, 100 per call) instead. So at most maxCollections x perCollection
 * document reads, and as many `listCollections` calls (one per sampled document above the depth bound) plus one.
 */

export interface SampleOptions {
  perCollection: number;
  depth: number;
  maxCollections: number;
  maxUsers: number;
  /** When Auth has more than maxUsers accounts: at most this many of the sample's values are looked up. */
  maxLookups: number;
  /** Root collections never read (the product's own control plane). */
  skip: ReadonlySet<string>;
  onProgress?: (p: { collections: number; documents: number; phase: string }) => void;
}

export const DEFAULT_SAMPLE = { perCollection: 50, depth: 4, maxCollections: 100, maxUsers: 10_000, maxLookups: 10_000 } as const;

/** Auth's page size for listUsers, and the identifiers getUsers takes per call (their maxima). */
const USERS_PAGE = 1000;
const LOOKUP_BATCH = 100;

export interface Sampled {
  samples: CollectionSample[];
  uids: Set<string>;
  summary: SampleSummary;
}

interface Pending {
  collectionPath: string[];
  /** The collections to read (one per sampled parent; the root collection alone at depth 1). */
  collections: CollectionReference[];
}

/** Samples the governed database and lists the Auth uids, within the bounds. */
export async function sampleDatabase(opts: SampleOptions): Promise<Sampled> {
  let documentsRead = 0;
  let listCalls = 0;
  const samples: CollectionSample[] = [];
  const notSampled: string[] = [];
  const progress = (phase: string) => opts.onProgress?.({ collections: samples.length, documents: documentsRead, phase });

  listCalls += 1;
  const roots = (await db().listCollections()).filter((c) => !opts.skip.has(c.id)).sort((a, b) => (a.id < b.id ? -1 : 1));
  // Breadth first, so a low maxCollections spends its budget on the top of the tree, which the data map starts from.
  const queue: Pending[] = roots.map((c) => ({ collectionPath: [c.id], collections: [c] }));
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (samples.length >= opts.maxCollections) {
      notSampled.push(next.collectionPath.join("/"));
      continue;
    }
    progress(next.collectionPath.join("/"));
    // Spread the bound over the parents, so a subcollection's sample is not one parent's children.
    const perParent = Math.max(1, Math.ceil(opts.perCollection / next.collections.length));
    const docs: QueryDocumentSnapshot[] = [];
    let limited = false;
    for (const col of next.collections) {
      const room = opts.perCollection - docs.length;
      if (room <= 0) {
        limited = true;
        break;
      }
      const want = Math.min(perParent, room);
      const snap = await col.limit(want).get();
      documentsRead += snap.size;
      docs.push(...snap.docs);
      if (snap.size === want) limited = true;
    }
    const depthLimited = next.collectionPath.length >= opts.depth;
    const children = new Map<string, DocumentReference[]>();
    if (!depthLimited) {
      for (const d of docs) {
        listCalls += 1;
        for (const sub of await d.ref.listCollections()) children.set(sub.id, [...(children.get(sub.id) ?? []), d.ref]);
      }
    }
    const subcollections: Record<string, number> = {};
    for (const [id, parents] of [...children].sort(([a], [b]) => (a < b ? -1 : 1))) {
      subcollections[id] = parents.length;
      queue.push({ collectionPath: [...next.collectionPath, id], collections: parents.map((p) => p.collection(id)) });
    }
    samples.push({
      collectionPath: next.collectionPath,
      docs: docs.map((d) => ({ id: d.id, path: d.ref.path, fields: d.data() })),
      subcollections,
      limited,
      depthLimited,
    });
  }

  progress("auth users");
  const { uids, truncated } = await listUids(opts.maxUsers);
  const listed = uids.size;
  let lookedUp = 0;
  let lookupsTruncated = false;
  if (truncated) {
    // Auth has more accounts than listed: ask about the sample's own uid-shaped values instead, 100 per call.
    const candidates = uidCandidates(samples, uids);
    lookupsTruncated = candidates.length > opts.maxLookups;
    const asked = candidates.slice(0, opts.maxLookups);
    for (let i = 0; i < asked.length; i += LOOKUP_BATCH) {
      progress(`auth lookups ${i}/${asked.length}`);
      const found = await getAuth(adminApp()).getUsers(asked.slice(i, i + LOOKUP_BATCH).map((uid) => ({ uid })));
      for (const u of found.users) uids.add(u.uid);
    }
    lookedUp = asked.length;
  }
  progress("done");
  return {
    samples,
    uids,
    summary: {
      perCollection: opts.perCollection,
      depth: opts.depth,
      maxCollections: opts.maxCollections,
      documentsRead,
      listCalls,
      authUsersListed: listed,
      authTruncated: truncated,
      authLookedUp: lookedUp,
      authFound: uids.size - listed,
      authLookupsTruncated: lookupsTruncated,
      collectionsNotSampled: notSampled,
    },
  };
}

/** The Auth uids, a page of 1000 at a time, at most `max` of them. */
async function listUids(max: number): Promise<{ uids: Set<string>; truncated: boolean }> {
  const auth = getAuth(adminApp());
  const uids = new Set<string>();
  let token: string | undefined;
  do {
    const page = await auth.listUsers(Math.min(USERS_PAGE, max - uids.size), token);
    for (const u of page.users) uids.add(u.uid);
    token = page.pageToken;
  } while (token && uids.size < max);
  return { uids, truncated: token !== undefined };
}

/** How much of each bucket is read: its top-level folders, and the objects under each. */
export interface BucketSampleOptions {
  /** Top-level folders listed per bucket at most. */
  maxFolders: number;
  /** Objects read under each folder at most (in name order, so a bound spreads over the first subfolders). */
  perFolder: number;
  onProgress?: (p: { bucket: string; objects: number }) => void;
}

export const DEFAULT_BUCKET_SAMPLE = { maxFolders: 100, perFolder: 200 } as const;

/**
 * A bounded sample of each bucket (docs/DISCOVER.md): its top-level folders (one delimiter listing, at most
 * `maxFolders`), and under each at most `perFolder` objects' names. At most maxFolders x perFolder names per bucket,
 * from about maxFolders + 1 list calls. Reads metadata only, never an object's bytes. `buckets`: what each is called
 * in a storage entry (`(default)`) and its real name.
 */
export async function sampleBuckets(buckets: readonly { as: string; name: string }[], opts: BucketSampleOptions): Promise<BucketSample[]> {
  const out: BucketSample[] = [];
  for (const b of buckets) {
    const { folders, truncated, objectsHere } = await listFolders(b.name, "", opts.maxFolders);
    const sampled: BucketSample["folders"][number][] = [];
    let objects = 0;
    for (const prefix of folders) {
      const listed = await listObjectsAfter(b.name, prefix, null, opts.perFolder + 1);
      const names = listed.slice(0, opts.perFolder).map((o) => o.name);
      objects += names.length;
      sampled.push({ prefix, names, limited: listed.length > opts.perFolder });
      opts.onProgress?.({ bucket: b.as, objects });
    }
    out.push({ bucket: b.as, folders: sampled, foldersLimited: truncated, rootObjects: objectsHere });
  }
  return out;
}

