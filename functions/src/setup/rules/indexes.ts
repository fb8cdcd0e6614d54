import { checkQuery, type CompositeIndexConfig, type FieldOverrideConfig, type FilterLeaf, type IndexConfig, type Proposal, type QueryShape } from "../../indexes/rules";
import { segments } from "../../kernel/paths";
import type { PolicyIndex } from "../../kernel/policy";
import { sweepTargets } from "../../purge/rules/sweep";

/**
 * The indexes an app's registry needs, for `retention setup` to write into the app's firestore.indexes.json: the
 * control plane's own (the same for every app), the TTL policies of the registry's TTL collections, and what each
 * query the engine builds from the registry needs, as the index coverage check's rules (indexes/rules.ts) judge it.
 * Pure. test/unit/setup/indexes.test.ts holds the control plane's to the product's index file and each example's
 * index file to the registry's queries; the index check proves those files against every query the suites send.
 */

const asc = (fieldPath: string) => ({ fieldPath, order: "ASCENDING" as const });
const desc = (fieldPath: string) => ({ fieldPath, order: "DESCENDING" as const });
const collectionIndex = (collectionGroup: string, ...fields: CompositeIndexConfig["fields"]): CompositeIndexConfig => ({ collectionGroup, queryScope: "COLLECTION", fields });

/** The composite indexes of the engine's fixed queries on its own collections (requests, holds, archives, runs, reports). */
export const CONTROL_PLANE_INDEXES: readonly CompositeIndexConfig[] = [
  collectionIndex("deletionRequests", asc("state"), asc("graceEndsAt")),
  collectionIndex("deletionRequests", asc("state"), asc("dueAt")),
  collectionIndex("deletionRequests", asc("state"), asc("requestedAt")),
  collectionIndex("retentionReports", asc("kind"), desc("createdAt")),
  collectionIndex("deletionRequests", asc("uid"), desc("requestedAt")),
  collectionIndex("deletionRequests", asc("tenantId"), desc("requestedAt")),
  collectionIndex("deletionRequests", asc("uid"), asc("tenantId"), desc("requestedAt")),
  collectionIndex("deletionRequests", asc("erasureComplete"), asc("fullyGoneBy")),
  collectionIndex("archives", asc("unitKey"), desc("retainUntil")),
  // The shred's reads of one data key's copies (shred/shred.ts): the latest end of retention, and those under a hold's target.
  collectionIndex("archives", asc("dataKey"), desc("retainUntil")),
  collectionIndex("archives", asc("dataKey"), asc("sourcePath")),
  collectionIndex("retentionHolds", asc("state"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("reasonCode"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("placedBy"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("targetPath"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("reasonCode"), asc("placedBy"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("reasonCode"), asc("targetPath"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("placedBy"), asc("targetPath"), desc("placedAt")),
  collectionIndex("retentionHolds", asc("state"), asc("reasonCode"), asc("placedBy"), asc("targetPath"), desc("placedAt")),
  collectionIndex("retentionJobs", asc("state"), desc("lastTrippedAt")),
  // The processors' outbox: the relay's due notices, and the audit's overdue ones (docs/decisions/0039-processors.md).
  collectionIndex("processorNotices", asc("state"), asc("queuedUntil")),
  collectionIndex("processorNotices", asc("state"), asc("deadlineAt")),
];

/**
 * The control plane's field overrides: its TTL policies (idempotency markers, archive copies, access exports and their
 * parts), each exempt from indexing as nothing queries the field; the access export parts' contents, exempt as nothing
 * queries them; and the evidence's append time, exempt so that appends never make a hotspot of its index.
 */
export const CONTROL_PLANE_OVERRIDES: readonly FieldOverrideConfig[] = [
  { collectionGroup: "processedEvents", fieldPath: "expireAt", ttl: true, indexes: [] },
  { collectionGroup: "archives", fieldPath: "expireAt", ttl: true, indexes: [] },
  // Access exports and their parts (access/service.ts): deleted by TTL once they expire.
  { collectionGroup: "dataExports", fieldPath: "expireAt", ttl: true, indexes: [] },
  { collectionGroup: "exportParts", fieldPath: "expireAt", ttl: true, indexes: [] },
  // A part's bytes and what names them: read by id and by `index` only. Indexing `data` would cost a write per part
  // for nothing and fail a string past the 1,500-byte index entry limit.
  { collectionGroup: "exportParts", fieldPath: "data", indexes: [] },
  { collectionGroup: "exportParts", fieldPath: "file", indexes: [] },
  { collectionGroup: "exportParts", fieldPath: "chunk", indexes: [] },
  { collectionGroup: "exportParts", fieldPath: "encoding", indexes: [] },
  { collectionGroup: "deletionAudits", fieldPath: "atMs", indexes: [] },
];

/** The field Firestore's TTL policy reads on a TTL-managed collection (kernel/governed.ts: `expireAt`). */
export const TTL_FIELD = "expireAt";

const OPS: Record<string, string> = { "==": "EQUAL", "array-contains": "ARRAY_CONTAINS", "array-contains-any": "ARRAY_CONTAINS_ANY", in: "IN", "<=": "LESS_THAN_OR_EQUAL" };
const leaf = (field: string, op: string): FilterLeaf => ({ field, op: OPS[op] ?? op });
const and = (filters: FilterLeaf[]): QueryShape["where"] => (filters.length === 0 ? null : filters.length === 1 ? filters[0]! : { op: "AND", filters });
const lastCollection = (pattern: string): string => {
  const s = segments(pattern);
  return s[s.length % 2 === 0 ? s.length - 2 : s.length - 1]!;
};

/** A query the engine builds from the registry, and which part of the registry it comes from. */
export interface RegistryQuery {
  shape: QueryShape;
  why: string;
}

/**
 * Every query the engine sends whose shape follows from the registry (the fixed control-plane queries are covered by
 * CONTROL_PLANE_INDEXES):
 * - each `query` and `collectionGroup` data-map entry, paged by document id (plan/discovery.ts);
 * - per governed collection id, a cancelled request's restore by `deletionRequestId` across collections
 *   (requests/service.ts);
 * - the scope lookups (requests/subjects.ts): a user's scopes, and a scope's users for its closure;
 * - the purge's sweep of expired documents per top-level collection (purge/runner/plan.ts).
 */
export function registryQueries(policy: PolicyIndex, database: string = "(default)"): RegistryQuery[] {
  const out: RegistryQuery[] = [];
  const shape = (scope: QueryShape["scope"], collectionId: string, where: FilterLeaf[], orderBy: QueryShape["orderBy"] = []): QueryShape => ({
    database,
    scope,
    collectionId,
    where: and(where),
    orderBy,
    aggregations: [],
  });
  const byName = [{ field: "__name__", direction: "ASCENDING" as const }];
  for (const kind of ["user", "tenant"] as const) {
    for (const e of policy.dataMap(kind)) {
      if (e.kind !== "query" && e.kind !== "collectionGroup") continue;
      const where = e.where.map(([field, op]) => leaf(field, op));
      const s = e.kind === "collectionGroup" ? shape("collection-group", e.collectionId ?? "", where, byName) : shape("collection", lastCollection(e.collection ?? ""), where, byName);
      out.push({ shape: s, why: `the ${kind === "user" ? "user" : "scope"} data map's ${e.id} entry` });
    }
  }
  for (const id of [...new Set(policy.registry.collections.map((c) => lastCollection(c.pattern)))].sort()) {
    out.push({ shape: shape("collection-group", id, [leaf("deletionRequestId", "==")], byName), why: `a cancelled request's restore of ${id} documents` });
  }
  // The scope lookups (requests/subjects.ts): a user's scopes, one uid (==) or a page of uids (in) at a time, and a
  // scope's users for its closure, paged by document id. A collection with variables is one collection per user,
  // queried by its last id; a path lookup's memberships are a collection group.
  for (const lookup of policy.subjects.user.scopeLookups) {
    const perUser = /\{[A-Za-z]+\}/.test(lookup.via === "membership" || lookup.via === "array" ? lookup.collection : "");
    if (lookup.via === "membership") {
      const id = lastCollection(lookup.collection);
      out.push({ shape: shape("collection", id, [leaf(lookup.userField, "==")]), why: "the membership scope lookup" });
      if (!perUser) out.push({ shape: shape("collection", id, [leaf(lookup.userField, "in")]), why: "the membership scope lookup, a page of users" });
      out.push({ shape: shape(perUser ? "collection-group" : "collection", id, [leaf(lookup.scopeField, "==")], byName), why: "a scope's users, listed through the membership lookup" });
    }
    if (lookup.via === "array") {
      const id = lastCollection(lookup.collection);
      out.push({ shape: shape("collection", id, [leaf(lookup.field, "array-contains")]), why: "the array scope lookup" });
      if (!perUser) out.push({ shape: shape("collection", id, [leaf(lookup.field, "array-contains-any")]), why: "the array scope lookup, a page of users" });
    }
    if (lookup.via === "path") {
      const id = lastCollection(lookup.pattern);
      out.push({ shape: shape("collection-group", id, [leaf(lookup.userField, "==")]), why: "the path scope lookup" });
      out.push({ shape: shape("collection-group", id, [leaf(lookup.userField, "in")]), why: "the path scope lookup, a page of users" });
    }
    if (lookup.via === "document") {
      out.push({ shape: shape("collection", segments(lookup.path)[0]!, [leaf(lookup.field, "==")], byName), why: "a scope's users, listed through the document lookup" });
    }
  }
  for (const t of sweepTargets(policy)) {
    out.push({ shape: shape("collection", t.collection, [leaf(t.field, "<=")], [{ field: t.field, direction: "ASCENDING" }]), why: `the purge's sweep of expired ${t.collection}` });
    out.push({ shape: shape("collection", t.collection, [leaf("lifecycleState", "==")]), why: `the purge's sweep of ${t.collection} marked for deletion` });
  }
  return out;
}

/** The TTL policy of each TTL-managed collection group of the registry, exempt from indexing until a query needs the field. */
export function ttlOverrides(policy: PolicyIndex): FieldOverrideConfig[] {
  const groups = [...new Set(policy.ttlCollections().map((r) => lastCollection(r.pattern)))].sort();
  return groups.map((collectionGroup) => ({ collectionGroup, fieldPath: TTL_FIELD, ttl: true, indexes: [] }));
}

function apply(config: Required<IndexConfig>, proposal: Proposal): void {
  if (proposal.kind === "index") {
    if (!config.indexes.some((i) => JSON.stringify(i) === JSON.stringify(proposal.entry))) config.indexes.push(proposal.entry);
    return;
  }
  const at = config.fieldOverrides.findIndex((o) => o.collectionGroup === proposal.entry.collectionGroup && o.fieldPath === proposal.entry.fieldPath);
  if (at >= 0) config.fieldOverrides[at] = proposal.entry;
  else config.fieldOverrides.push(proposal.entry);
}

/**
 * The indexes `policy` needs: the control plane's, the registry's TTL policies, and each registry query's index as
 * the index check's rules propose it (an override keeps what the field already has, so adding it takes nothing away
 * from the app's own queries on that field). Every registry query is served by the result.
 */
export function requiredIndexes(policy: PolicyIndex, database: string = "(default)"): Required<IndexConfig> {
  const config: Required<IndexConfig> = { indexes: [...CONTROL_PLANE_INDEXES], fieldOverrides: [...CONTROL_PLANE_OVERRIDES, ...ttlOverrides(policy)] };
  for (const { shape } of registryQueries(policy, database)) {
    const verdict = checkQuery(config, shape);
    if (verdict.status === "missing") for (const p of verdict.proposals) apply(config, p);
    else if (verdict.status === "unsupported") throw new Error(`the registry asks for a query Firestore cannot serve: ${verdict.why}`);
  }
  return config;
}
