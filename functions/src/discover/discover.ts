import { PRIMARY_CELL } from "../kernel/policy";
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
  // The part of the registry of the governed database it samples (platform/firestore.ts#inCell; the primary's by
  // default): a draft is of one database.
  const pol = policy();
  const base = pol.registry;
  const sampled = await sampleDatabase({ ...opts, skip: new Set(controlPlaneCollections(base)) });
  const draft = draftRegistry({
    samples: sampled.samples,
    uids: sampled.uids,
    base,
    version: nextVersion([base.version, ...opts.knownVersions]),
    nowMs: opts.nowMs,
    summary: sampled.summary,
    ...(opts.thresholds ? { thresholds: opts.thresholds } : {}),
  });
  // Drafted in another governed database than the primary: its collections and entries name that database, which
  // the draft declares as the registry does.
  const cell = pol.cell ?? PRIMARY_CELL;
  if (cell === PRIMARY_CELL && base.databases.length === 0) return draft;
  const named = <T extends object>(x: T): T => (cell === PRIMARY_CELL ? x : { ...x, database: cell });
  const r = draft.registry;
  return {
    ...draft,
    registry: { ...r, databases: base.databases.map((d) => ({ ...d })), collections: r.collections.map(named), dataMap: { ...r.dataMap, user: r.dataMap.user.map(named) } },
  };
}
