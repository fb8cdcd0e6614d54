import { PRIMARY_CELL } from "../kernel/policy";
import { policy } from "../platform/registry";
import { controlPlaneCollections, draftRegistry, nextVersion, type DiscoverDraft, type Thresholds } from "./rules";
import { DEFAULT_BUCKET_SAMPLE, sampleBuckets, sampleDatabase, type BucketSampleOptions, type SampleOptions } from "./sample";
import { defaultBucket } from "../platform/storage";

export interface DiscoverOptions extends Omit<SampleOptions, "skip"> {
  nowMs: number;
  /** Versions already on file (policies/versions/), so the draft is for the one after all of them. */
  knownVersions: readonly string[];
  thresholds?: Thresholds;
  /** Buckets sampled for storage entries besides the project's default bucket (which is always sampled). */
  buckets?: readonly string[];
  bucketSample?: Partial<BucketSampleOptions>;
}

/**
 * `retention discover`: samples the database within its bounds and drafts the registry from the sample, on the
 * registry in force (its control plane is skipped, its product settings carried). Reads only.
 */
export async function discoverDraft(opts: DiscoverOptions): Promise<DiscoverDraft> {
  // The part of the registry of the governed database it samples (platform/firestore.ts#inCell; the primary's by
  // default): a draft is of one database.
  const pol = policy();
  const base = pol.registry;
  const sampled = await sampleDatabase({ ...opts, skip: new Set(controlPlaneCollections(base)) });
  const cell = pol.cell ?? PRIMARY_CELL;
  // Buckets belong to no database: they are sampled once, with the primary's draft (a storage entry's objects go
  // with the database of its heldWith document, which the registry, not the draft of one database, settles).
  const own = defaultBucket();
  const others = [...new Set(opts.buckets ?? [])].filter((b) => b !== own && b !== "(default)");
  const buckets = cell === PRIMARY_CELL ? await sampleBuckets([{ as: "(default)", name: own }, ...others.map((b) => ({ as: b, name: b }))], { ...DEFAULT_BUCKET_SAMPLE, ...opts.bucketSample }) : [];
  const draft = draftRegistry({
    samples: sampled.samples,
    buckets,
    uids: sampled.uids,
    base,
    version: nextVersion([base.version, ...opts.knownVersions]),
    nowMs: opts.nowMs,
    summary: sampled.summary,
    ...(opts.thresholds ? { thresholds: opts.thresholds } : {}),
  });
  // Drafted in another governed database than the primary: its collections and entries name that database, which
  // the draft declares as the registry does.
  if (cell === PRIMARY_CELL && base.databases.length === 0) return draft;
  const named = <T extends object>(x: T): T => (cell === PRIMARY_CELL || ("kind" in x && x.kind === "storage") ? x : { ...x, database: cell });
  const r = draft.registry;
  return {
    ...draft,
    registry: { ...r, databases: base.databases.map((d) => ({ ...d })), collections: r.collections.map(named), dataMap: { ...r.dataMap, user: r.dataMap.user.map(named) } },
  };
}
