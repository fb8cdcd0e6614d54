import { hashCanonical } from "../kernel/canonical";
import { coveringHold, heldBy, type ActiveHoldRef } from "../kernel/held";
import type { GovernedFields } from "../kernel/governed";
import { compareNames, fillTemplate, sortedUnique } from "../kernel/paths";
import type { DataMapEntry, StorageEntry } from "../kernel/policy-schema";
import type { PolicyIndex } from "../kernel/policy";
import { isExpired } from "../kernel/retention";

/**
 * Whose data an erasure reaches: a user in one scope (`tenantId`, "" in an app without scopes), or a scope (its
 * closure). `scopedOnly`: the user is erased in this scope as one member of a request group (a user found in
 * several scopes) that is not the group's lead, so the erasure walks only the data-map entries that name the
 * scope (kernel/policy.ts#dataMapOf). Absent, never false, so a subject outside a group hashes as it always has.
 */
export type Subject = { type: "user"; uid: string; tenantId: string; scopedOnly?: true } | { type: "tenant"; tenantId: string };

/** A document found while walking the data map, with the retention fields the planner needs. */
export interface DiscoveredDoc {
  path: string;
  entryId: string;
  doc: Pick<GovernedFields, "legalHold" | "lifecycleState" | "expireAtMs" | "retainUntilMs"> & { retentionClass: string | null };
}

export interface RetainedItem {
  path: string;
  /** `removeFromArray`: the document stays, without the subject in the array field named in `fields`. */
  action: "retain" | "mask" | "removeFromArray";
  reasonCode: string;
  reason: string;
  /** Masked fields, for `mask`; the array field the subject leaves, for `removeFromArray`. */
  fields?: string[];
  /** When the retention ends, if known (ISO date). */
  until?: string;
  holdId?: string;
  /**
   * For a held document: what the erasure would do to it without the hold ("delete" or "mask"). The hold
   * defers that erasure; absent when the data map or its class would keep the document anyway.
   */
  deferredByHold?: "delete" | "mask" | "removeFromArray";
}

/**
 * A record the data map keeps as a verified archive copy (its `archive` action): the purge copies it to the
 * archive, verifies the copy by hash, and only then deletes the original, so it is in `delete` too.
 */
export interface ArchivedItem {
  path: string;
  reasonCode: string;
  reason: string;
  /** When the record's own retention ends (ISO date), if known; the archive copy keeps it at least that long. */
  until?: string;
}

/**
 * A Cloud Storage object found through a storage entry of the data map (docs/STORAGE.md): its path
 * (`gs://bucket/name`), the generation it was found at, and the document it is held with.
 */
export interface DiscoveredObject {
  path: string;
  generation: string;
  entryId: string;
  /** The entry's heldWith document for this object: a hold covering it (on it or an ancestor) holds the object. */
  heldWith: string;
  /** The holds whose marker the object carries (platform/storage.ts#placeHoldMarker). */
  markerHoldIds: readonly string[];
  /** Cloud Storage's own temporaryHold or eventBasedHold is set on it. */
  storageHold: boolean;
}

/** An object of the manifest with the generation the decision was about. */
export interface ManifestObject {
  path: string;
  generation: string;
}

export interface DeletionManifest {
  subject: Subject;
  /** Document paths, then Cloud Storage objects as `gs://bucket/name` (their generations in `objects`). */
  delete: string[];
  /** The delete paths that are archived first (a subset of `delete`). */
  archive: ArchivedItem[];
  retain: RetainedItem[];
  externalCopiesToReview: string[];
  policyVersion: string;
  /** Every Cloud Storage object the manifest deletes or keeps, with the generation decided on. */
  objects: ManifestObject[];
}

export interface DeletionPlan extends DeletionManifest {
  manifestHash: string;
}

type DataMapAction = DataMapEntry["action"];

/** What the erasure does to a discovered document when no hold is in the way (an archived record is deleted too). */
function withoutHold(action: DataMapAction, doc: DiscoveredDoc["doc"], policy: PolicyIndex, nowMs: number): "delete" | "retain" | "mask" | "removeFromArray" {
  if (action === "archive") return "delete";
  if (action !== "delete") return action;
  const cls = policy.classById(doc.retentionClass);
  return cls && !cls.userDeletable && !isExpired(doc, nowMs) ? "retain" : "delete";
}

/**
 * What an erasure does to one discovered document, reached through `entry`: null when it deletes it, else the
 * record of why it stays. Retention beats deletion, in this order of precedence:
 * - a hold (reason: the hold's reason code), remembering what the erasure would have done without it;
 * - the data-map entry's own `retain` or `mask` action (reason from the registry);
 * - a class that is not user-deletable, while its retention runs (reason: the class), except for a record the
 *   data map archives (its `archive` action: {@link archivedOnErasure}), which a verified archive copy keeps.
 * Ancestors of anything retained stay too ({@link KeptBelow}).
 */
export function judgeDiscovered(d: DiscoveredDoc, entry: DataMapEntry, activeHolds: readonly ActiveHoldRef[], policy: PolicyIndex, nowMs: number): RetainedItem | null {
  const hold = heldBy({ path: d.path, ...d.doc }, activeHolds);
  if (hold) {
    const erasure = withoutHold(entry.action, d.doc, policy, nowMs);
    return {
      path: d.path,
      action: "retain",
      reasonCode: hold.reasonCode,
      reason: hold.holdId ? `retention hold ${hold.holdId}` : "document carries a legal hold",
      ...(hold.holdId ? { holdId: hold.holdId } : {}),
      ...(erasure !== "retain" ? { deferredByHold: erasure } : {}),
    };
  }
  if (entry.action === "archive") return null;
  const until = untilOf(d.doc);
  if (entry.action === "retain" || entry.action === "mask" || entry.action === "removeFromArray") {
    const fields = entry.action === "mask" ? [...(entry.maskFields ?? [])].sort() : entry.action === "removeFromArray" ? [entry.arrayField ?? ""] : null;
    return {
      path: d.path,
      action: entry.action,
      reasonCode: entry.reasonCode ?? "POLICY_RETENTION",
      reason: entry.reason ?? "retained by policy",
      ...(fields ? { fields } : {}),
      ...(until ? { until } : {}),
    };
  }
  const cls = policy.classById(d.doc.retentionClass);
  if (cls && !cls.userDeletable && !isExpired(d.doc, nowMs)) {
    return {
      path: d.path,
      action: "retain",
      reasonCode: `POLICY_${cls.id.toUpperCase().replace(/-/g, "_")}`,
      reason: `${cls.id}: ${cls.description}`,
      ...(until ? { until } : {}),
    };
  }
  return null;
}

/**
 * What the final sweep does with a document a request's data map reaches that the round did not decide about (written
 * after the plan): "sweep", delete it in a late batch, or "replan", leave it for the next plan. The plan lets a keep
 * entry win (retain, mask), archives what an archive entry reaches first, keeps what a hold or a class keeps
 * ({@link judgeDiscovered}), and judges everything under a recursive entry's document against every other entry too.
 * The final sweep has no archive step and records no retained items, so it deletes only a document that delete entries
 * alone reach, none of them recursive, and that none of them keeps; anything else waits for the next plan.
 */
export function judgeUnplanned(d: DiscoveredDoc, entries: readonly DataMapEntry[], activeHolds: readonly ActiveHoldRef[], policy: PolicyIndex, nowMs: number): "sweep" | "replan" {
  if (entries.length === 0 || entries.some((e) => e.action !== "delete" || e.recursive === true)) return "replan";
  return entries.some((e) => judgeDiscovered(d, e, activeHolds, policy, nowMs) !== null) ? "replan" : "sweep";
}

/**
 * Whether the erasure archives a document before deleting it: the data map's `archive` action, while the
 * record's own retention runs (a record whose retention has already run out is simply deleted: a copy would
 * keep it past its retention). Null when it is not archived; otherwise the manifest's archive item. Asked only
 * of a document the erasure deletes ({@link judgeDiscovered} returned null).
 */
export function archivedOnErasure(d: DiscoveredDoc, entry: DataMapEntry, nowMs: number): ArchivedItem | null {
  if (entry.action !== "archive" || isExpired(d.doc, nowMs)) return null;
  const until = untilOf(d.doc);
  return { path: d.path, reasonCode: entry.reasonCode ?? "POLICY_RETENTION", reason: entry.reason ?? "archived by policy", ...(until ? { until } : {}) };
}

/**
 * What an erasure does to one object reached through a storage entry: null when it deletes it, else why it stays.
 * A hold first: an active hold record covering the object's heldWith document (on it or an ancestor), then a hold's
 * marker or Cloud Storage's own hold on the object itself; then the entry's `retain`.
 */
export function judgeObject(o: DiscoveredObject, entry: StorageEntry, activeHolds: readonly ActiveHoldRef[]): RetainedItem | null {
  const record = coveringHold(o.heldWith, activeHolds);
  const deferred = entry.action === "delete" ? { deferredByHold: "delete" as const } : {};
  if (record) return { path: o.path, action: "retain", reasonCode: record.reasonCode, reason: `retention hold ${record.holdId}`, holdId: record.holdId, ...deferred };
  if (o.markerHoldIds.length > 0 || o.storageHold) {
    const holdId = o.markerHoldIds[0];
    return { path: o.path, action: "retain", reasonCode: "LEGAL_HOLD", reason: holdId ? `retention hold ${holdId}` : "the object carries a Cloud Storage hold", ...(holdId ? { holdId } : {}), ...deferred };
  }
  if (entry.action === "retain") return { path: o.path, action: "retain", reasonCode: entry.reasonCode ?? "POLICY_RETENTION", reason: entry.reason ?? "retained by policy" };
  return null;
}

const untilOf = (doc: DiscoveredDoc["doc"]): string | undefined => (doc.retainUntilMs !== null ? new Date(doc.retainUntilMs).toISOString().slice(0, 10) : undefined);

/**
 * When two data-map entries reach the same path, the stricter one decides: an entry that keeps the live record
 * beats one that removes it (retain > mask and removeFromArray > archive > delete).
 */
const ACTION_RANK: Readonly<Record<DataMapAction, number>> = { delete: 0, archive: 1, mask: 2, removeFromArray: 2, retain: 3 };

/** The record of a document kept only because something under it is retained. */
export const retainedDescendant = (path: string): RetainedItem => ({
  path,
  action: "retain",
  reasonCode: "RETAINED_DESCENDANT",
  reason: "kept because a document under it is retained",
});

/**
 * The archive entries a recursive delete entry's stream can plan by itself, keyed by that entry's id and then by
 * the filled collection path. Such an archive entry names a whole collection (a `query` without a filter, neither
 * recursive nor external) inside the tree of a recursive `doc` delete entry of the same database, and no other
 * erasing entry can reach that collection. Planned in its own pass, each of its documents is read there and read
 * again by the tree's stream. Judged with the archive entry as the tree's stream passes it, each is read once and
 * decided as the separate pass decided it: the archive entry comes first, and nothing else reaches it. Anything
 * this cannot show from the templates alone (a collection group, a filter, a template that does not fill) keeps
 * its own pass.
 */
export function archivesInTrees(erasing: readonly DataMapEntry[], vars: Readonly<Record<string, string>>): Map<string, Map<string, DataMapEntry>> {
  const found = new Map<string, Map<string, DataMapEntry>>();
  const filled = (template: string | undefined): string | null => {
    try {
      return fillTemplate(template ?? "", vars);
    } catch {
      return null;
    }
  };
  const dbOf = (e: DataMapEntry): string => e.database ?? "";
  for (const archive of erasing) {
    if (archive.action !== "archive" || archive.kind !== "query" || archive.where.length > 0 || archive.recursive || archive.external) continue;
    const collection = filled(archive.collection);
    if (collection === null) continue;
    const inTree = (e: DataMapEntry): boolean => {
      const root = e.kind === "doc" && e.recursive && dbOf(e) === dbOf(archive) ? filled(e.path) : null;
      return root !== null && collection.startsWith(`${root}/`);
    };
    const tree = erasing.find((e) => e.action === "delete" && inTree(e));
    if (!tree || erasing.some((e) => e !== archive && e !== tree && mayReachCollection(e, collection, dbOf(archive), filled))) continue;
    const trees = found.get(tree.id) ?? new Map<string, DataMapEntry>();
    trees.set(collection, archive);
    found.set(tree.id, trees);
  }
  return found;
}

/** Whether an entry may reach a document of `collection` (a filled path) in `database`; true when it can't be ruled out. */
function mayReachCollection(e: DataMapEntry, collection: string, database: string, filled: (t: string | undefined) => string | null): boolean {
  if (e.kind === "storage" || (e.database ?? "") !== database) return false;
  if (e.kind === "collectionGroup") return e.recursive || collection.slice(collection.lastIndexOf("/") + 1) === e.collectionId;
  const at = filled(e.kind === "doc" ? e.path : e.collection);
  if (at === null) return true;
  const docsIn = e.kind === "doc" ? at.slice(0, Math.max(at.lastIndexOf("/"), 0)) : at;
  return docsIn === collection || (e.recursive && collection.startsWith(`${e.kind === "doc" ? at : docsIn}/`));
}

/**
 * The ancestor rule over documents taken in Firestore's name order (kernel/paths.ts#compareNames), where a
 * subtree is contiguous: a document is never deleted while anything under it is kept, because that would
 * orphan the kept child. Each pushed document comes back through `emit` once the stream has passed its
 * subtree, with `keptBelow` (something under it was pushed as kept) and `leaf` (nothing under it was pushed
 * at all). Only the current chain of ancestors is held, so a subtree of any size passes in constant memory.
 */
export class KeptBelow<T> {
  private readonly chain: { path: string; value: T; keptBelow: boolean; leaf: boolean }[] = [];

  constructor(private readonly emit: (value: T, keptBelow: boolean, leaf: boolean) => void) {}

  push(path: string, value: T, kept: boolean): void {
    this.closeUntilAncestorOf(path);
    const parent = this.chain[this.chain.length - 1];
    if (parent) {
      parent.leaf = false;
      if (kept) parent.keptBelow = true;
    }
    this.chain.push({ path, value, keptBelow: false, leaf: true });
  }

  /** Emits what is still open: the stream has ended. */
  end(): void {
    this.closeUntilAncestorOf(null);
  }

  private closeUntilAncestorOf(path: string | null): void {
    for (let top = this.chain[this.chain.length - 1]; top !== undefined; top = this.chain[this.chain.length - 1]) {
      if (path !== null && path.startsWith(`${top.path}/`)) return;
      this.chain.pop();
      const parent = this.chain[this.chain.length - 1];
      if (parent && top.keptBelow) parent.keptBelow = true;
      this.emit(top.value, top.keptBelow, top.leaf);
    }
  }
}

/**
 * Builds the deletion manifest for a subject from the documents discovered through its data map. Pure and
 * deterministic: the same data gives the same manifest and hash, because every list is sorted and the
 * hash is SHA-256 over canonical JSON (the time of planning is not part of it). Each document is judged by
 * {@link judgeDiscovered}; a path reached by two entries keeps the stricter one (retain and mask beat
 * delete); ancestors of anything retained are retained ({@link KeptBelow}).
 */
export function buildDeletionPlan(
  subject: Subject,
  discovered: readonly DiscoveredDoc[],
  activeHolds: readonly ActiveHoldRef[],
  policy: PolicyIndex,
  nowMs: number,
  objects: readonly DiscoveredObject[] = [],
): DeletionPlan {
  const entries = new Map(policy.dataMapOf(subject).map((e) => [e.id, e]));
  const retained: RetainedItem[] = [];
  const toDelete: string[] = [];
  const archived: ArchivedItem[] = [];
  const external = new Set<string>();

  const byPath = new Map<string, DiscoveredDoc>();
  for (const d of discovered) {
    const prev = byPath.get(d.path);
    const prevRank = prev ? ACTION_RANK[entries.get(prev.entryId)?.action ?? "delete"] : -1;
    if (prevRank <= 0 || ACTION_RANK[entries.get(d.entryId)?.action ?? "delete"] > prevRank) byPath.set(d.path, d);
  }

  const keeper = new KeptBelow<{ path: string; kept: RetainedItem | null; archived: ArchivedItem | null }>((v, keptBelow) => {
    if (v.kept) retained.push(v.kept);
    else if (keptBelow) retained.push(retainedDescendant(v.path));
    else {
      toDelete.push(v.path);
      if (v.archived) archived.push(v.archived);
    }
  });
  for (const d of [...byPath.values()].sort((a, b) => compareNames(a.path, b.path))) {
    const entry = entries.get(d.entryId);
    if (!entry) throw new Error(`discovered doc names unknown data-map entry ${d.entryId}`);
    if (entry.external) external.add(d.path);
    const kept = judgeDiscovered(d, entry, activeHolds, policy, nowMs);
    keeper.push(d.path, { path: d.path, kept, archived: kept ? null : archivedOnErasure(d, entry, nowMs) }, kept !== null);
  }
  keeper.end();

  // Objects after documents: `gs://` sorts after every collection name, and no object has an ancestor to keep.
  const storageEntries = new Map(policy.storageMapOf(subject).map((e) => [e.id, e]));
  const objectsByPath = new Map<string, DiscoveredObject>();
  for (const o of objects) {
    const prev = objectsByPath.get(o.path);
    if (!prev || storageEntries.get(prev.entryId)?.action === "delete") objectsByPath.set(o.path, o);
  }
  const objectsDeleted: string[] = [];
  const objectsKept: RetainedItem[] = [];
  for (const o of objectsByPath.values()) {
    const entry = storageEntries.get(o.entryId);
    if (!entry) throw new Error(`discovered object names unknown storage entry ${o.entryId}`);
    const kept = judgeObject(o, entry, activeHolds);
    if (kept) objectsKept.push(kept);
    else objectsDeleted.push(o.path);
  }

  const manifest: DeletionManifest = {
    subject,
    delete: [...sortedUnique(toDelete), ...sortedUnique(objectsDeleted)],
    archive: archived.sort((a, b) => (a.path < b.path ? -1 : 1)),
    retain: [...retained.sort((a, b) => (a.path < b.path ? -1 : 1)), ...objectsKept.sort((a, b) => (a.path < b.path ? -1 : 1))],
    externalCopiesToReview: sortedUnique(external),
    policyVersion: policy.version,
    objects: [...objectsByPath.values()].map((o) => ({ path: o.path, generation: o.generation })).sort((a, b) => (a.path < b.path ? -1 : 1)),
  };
  return { ...manifest, manifestHash: hashManifest(manifest) };
}

/**
 * SHA-256 of the canonical JSON of a manifest (without its hash). `archive` and `objects` are hashed only when
 * they list something, so a manifest that archives nothing and names no object keeps the hash it had before
 * either existed; an object's generation is in the hash, so the same name uploaded again is another manifest.
 */
export function hashManifest(manifest: DeletionManifest): string {
  const { subject, delete: del, archive, retain, externalCopiesToReview, policyVersion, objects } = manifest;
  return hashCanonical({
    subject,
    delete: del,
    ...(archive.length > 0 ? { archive } : {}),
    retain,
    externalCopiesToReview,
    policyVersion,
    ...(objects.length > 0 ? { objects } : {}),
  });
}
