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
  const base = policy().registry;
  const sampled = await sampleDatabase({ ...opts, skip: new Set(controlPlaneCollections(base)) });
  const own = defaultBucket();
  const named = [...new Set(opts.buckets ?? [])].filter((b) => b !== own && b !== "(default)");
  const buckets = await sampleBuckets([{ as: "(default)", name: own }, ...named.map((b) => ({ as: b, name: b }))], { ...DEFAULT_BUCKET_SAMPLE, ...opts.bucketSample });
  return draftRegistry({
    samples: sampled.samples,
    buckets,
    uids: sampled.uids,
    base,
    version: nextVersion([base.version, ...opts.knownVersions]),
    nowMs: opts.nowMs,
    summary: sampled.summary,
    ...(opts.thresholds ? { thresholds: opts.thresholds } : {}),
  });
}
