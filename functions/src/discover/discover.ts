import { policy } from "../platform/registry";
import { controlPlaneCollections, draftRegistry, nextVersion, type DiscoverDraft, type Thresholds } from "./rules";
import { sampleDatabase, type SampleOptions } from "./sample";

export interface DiscoverOptions extends Omit<SampleOptions, "skip"> {
  nowMs: number;
  /** Versions already on file (policies/versions/), so the draft is for the one after all of them. */
  knownVersions: readonly string[];
  thresholds?: Thresholds;
}

/**
 * `retention discover`: samples the database within its bounds and drafts the registry from the sample, on the
 * registry in force (its control plane is skipped, its product settings carried). Reads only.
 */
export async function discoverDraft(opts: DiscoverOptions): Promise<DiscoverDraft> {
  const base = policy().registry;
  const sampled = await sampleDatabase({ ...opts, skip: new Set(controlPlaneCollections(base)) });
  return draftRegistry({
    samples: sampled.samples,
    uids: sampled.uids,
    base,
    version: nextVersion([base.version, ...opts.knownVersions]),
    nowMs: opts.nowMs,
    summary: sampled.summary,
    ...(opts.thresholds ? { thresholds: opts.thresholds } : {}),
  });
}
