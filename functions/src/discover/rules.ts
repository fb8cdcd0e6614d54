import type { z } from "zod";
import type { Registry, RegistrySchema } from "../kernel/policy-schema";
import { DRAFT_ONLY_CLASS } from "../kernel/registry-check";

/**
 * `retention discover`, the pure half: from a bounded sample of a database (documents per collection-id path,
 * the subcollection ids seen under them) and the set of Auth uids, classify how each kind of document links to
 * a user (its id is a uid, a string field holds one, an array field contains one) and draft the registry's
 * collections and its user data map, each proposal carrying the numbers behind it. Nothing here reads a database:
 * `sample.ts` collects the input, and a unit test drives this file with plain objects.
 *
 * What a draft can never know (a uid-shaped value that is not the user's data, data keyed by email, copies
 * outside Firebase) is why every proposal is evidence for a reviewer, not a decision: docs/DISCOVER.md.
 */

/** The draft's own format; `registry` inside it parses with RegistrySchema as it stands. */
export const DRAFT_FORMAT = "retention-discover-draft/1";

/**
 * The class every discovered collection gets until a person picks one. It is a valid class, so the draft parses
 * with RegistrySchema; the registry check refuses a version file that still uses it (kernel/registry-check.ts),
 * so a draft can be read and tested like a registry but never published unreviewed.
 */
export const UNREVIEWED_CLASS = DRAFT_ONLY_CLASS;

export interface SampledDoc {
  /** The document id. */
  id: string;
  /** The full path, `notes/n-1/replies/r-1`. */
  path: string;
  /** Its top-level fields as read (only strings and arrays of strings are looked at). */
  fields: Readonly<Record<string, unknown>>;
}

/** The sample of one collection-id path: every document read under every parent sampled above it. */
export interface CollectionSample {
  /** Collection ids from the root: `["notes", "replies"]` for `notes/{noteId}/replies/{replyId}`. */
  collectionPath: readonly string[];
  docs: readonly SampledDoc[];
  /** Subcollection ids seen under the sampled documents, with how many of them have each. */
  subcollections: Readonly<Record<string, number>>;
  /** The sample stopped at its bound: the collection has more documents than were read. */
  limited: boolean;
  /** Subcollections under these documents were not listed (the depth bound). */
  depthLimited: boolean;
}

export interface Thresholds {
  /** Share of sampled documents that must show a link for a proposal (0.8: 40 of 50). */
  minShare: number;
  /** ...and at least this many documents, so two lucky documents propose nothing. */
  minDocs: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = { minShare: 0.8, minDocs: 3 };

/** What was read and within which bounds: copied into the draft as the sample's description. */
export interface SampleSummary {
  perCollection: number;
  depth: number;
  maxCollections: number;
  documentsRead: number;
  /** `listCollections` calls (root and per sampled document). */
  listCalls: number;
  authUsersListed: number;
  /** Auth has more accounts than were listed: the sample's other uid-shaped values were looked up instead. */
  authTruncated: boolean;
  /** Values looked up in Auth (`getUsers`) because the listing was truncated, and how many were accounts. */
  authLookedUp: number;
  authFound: number;
  /** More candidate values than `maxLookups`: those beyond it count as no uid. */
  authLookupsTruncated: boolean;
  /** Collection-id paths not sampled because `maxCollections` was reached. */
  collectionsNotSampled: string[];
}

/**
 * The sample of one bucket (docs/DISCOVER.md): the objects read under each of its top-level folders, at most a
 * bound per folder. `bucket` is what a storage entry would name: `(default)`, or the name given.
 */
export interface BucketSample {
  bucket: string;
  folders: readonly { prefix: string; names: readonly string[]; limited: boolean }[];
  /** The bucket has more top-level folders than were listed. */
  foldersLimited: boolean;
  /** Objects at the bucket's root (no folder): not sampled, counted. */
  rootObjects: number;
}

export interface DiscoverInput {
  samples: readonly CollectionSample[];
  /** The buckets sampled, for storage entries (none: the draft proposes none). */
  buckets?: readonly BucketSample[];
  uids: ReadonlySet<string>;
  /** The registry in force: its control-plane collections are skipped, its product settings carried over. */
  base: Registry;
  /** The version the draft is for (`v4`). */
  version: string;
  nowMs: number;
  summary: SampleSummary;
  thresholds?: Thresholds;
}

/** How a document links to a user (its id, a field, an array), or an object (a folder of its path). */
export type Link = "id" | "field" | "array" | "path";

export interface FieldOverrideIndex {
  order?: "ASCENDING" | "DESCENDING";
  arrayConfig?: "CONTAINS";
  queryScope: "COLLECTION" | "COLLECTION_GROUP";
}
/** A `fieldOverrides` entry of firestore.indexes.json. */
export interface FieldOverride {
  collectionGroup: string;
  fieldPath: string;
  indexes: FieldOverrideIndex[];
}

/** The index a proposed query needs, in firestore.indexes.json terms. */
export interface IndexNeed {
  scope: "collection" | "collection-group";
  collectionGroup: string;
  fieldPath: string;
  mode: "ASCENDING" | "CONTAINS";
  /** Served by Firestore's automatic single-field index (collection scope), unless an override removes it. */
  automatic: boolean;
  why: string;
}

/** A proposed data-map entry and why. */
export interface Candidate {
  entryId: string;
  link: Link;
  field?: string;
  /** The document patterns the entry reaches. */
  patterns: string[];
  matched: number;
  sampled: number;
  share: number;
  evidence: string;
  index?: IndexNeed;
}

export type UnclassifiedKind =
  | "storage-ids-before-uid"
  | "storage-no-held-with"
  | "no-uid-link"
  | "below-threshold"
  | "id-under-parent"
  | "other-user-field"
  | "field-name-not-expressible"
  | "collection-id-not-expressible";

export interface Unclassified {
  /** The document pattern (or collection-id path when it cannot be a pattern). */
  pattern: string;
  kind: UnclassifiedKind;
  link?: Link;
  field?: string;
  matched?: number;
  sampled: number;
  why: string;
}

export interface CollectionFinding {
  pattern: string;
  sampled: number;
  limited: boolean;
  subcollections: string[];
  /** The class carried over from the base registry, else `unreviewed`. */
  retentionClass: string;
  /** How erasure reaches it: the entry ids, or "goes with <entry>" for a recursive parent's subtree. */
  reachedBy: string[];
}

type RegistryJson = z.input<typeof RegistrySchema>;
type DataMapEntryJson = NonNullable<RegistryJson["dataMap"]["user"]>[number];

export interface DiscoverDraft {
  format: typeof DRAFT_FORMAT;
  basedOn: string;
  generatedAt: string;
  thresholds: Thresholds;
  sample: SampleSummary & {
    collectionsSampled: number;
    skippedControlPlane: string[];
    /** Each bucket sampled: its top-level folders read, the object names read, and what was left. */
    buckets: { bucket: string; folders: number; objectsRead: number; foldersLimited: boolean; rootObjects: number }[];
  };
  review: {
    steps: string[];
    entries: Candidate[];
    collections: CollectionFinding[];
    unclassified: Unclassified[];
    /** To merge into firestore.indexes.json `fieldOverrides` (the proposed queries' and the engine's own). */
    indexes: { fieldOverrides: FieldOverride[] };
  };
  /** A registry version as RegistrySchema reads it; every discovered collection is `unreviewed`. */
  registry: RegistryJson;
}

const COLLECTION_ID = /^[A-Za-z][A-Za-z0-9_-]*$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Auth uids are at most 128 characters and never empty. */
const UID_SHAPE = /^[^/\s]{1,128}$/;

/**
 * The values of a sample that could be uids and are not among `known`: document ids, string fields and the
 * strings in arrays, sorted. When Auth has more accounts than were listed, these are looked up one batch at a
 * time, so a uid field still counts on a large user base without listing every account.
 */
export function uidCandidates(samples: readonly CollectionSample[], known: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  const add = (v: unknown) => {
    if (typeof v === "string" && UID_SHAPE.test(v) && !known.has(v)) out.add(v);
  };
  for (const s of samples) {
    for (const d of s.docs) {
      add(d.id);
      for (const v of Object.values(d.fields)) {
        if (Array.isArray(v)) v.forEach(add);
        else add(v);
      }
    }
  }
  return [...out].sort(byText);
}

/** The collection ids of the control plane (the product's own records), which discover never samples. */
export function controlPlaneCollections(base: Registry): string[] {
  return [...new Set(base.controlPlane.map((c) => c.collection))].sort(byText);
}

/** `v3` -> `v4`, past every version already on file. */
export function nextVersion(versions: readonly string[]): string {
  const numbers = versions.map((v) => /^v([0-9]+)$/.exec(v)?.[1]).filter((n): n is string => n !== undefined).map(Number);
  return `v${Math.max(0, ...numbers) + 1}`;
}

/** A collection id as a template variable: `replies` -> `replyId`, `addresses` -> `addressId`, `user_logs` -> `userLogId`. */
export function variableFor(collectionId: string): string {
  const words = collectionId.split(/[^A-Za-z]+/).filter((w) => w.length > 0);
  if (words.length === 0) return "docId";
  const last = words[words.length - 1]!;
  words[words.length - 1] =
    /ies$/.test(last) && last.length > 3
      ? `${last.slice(0, -3)}y`
      : /(ss|sh|ch|x|us)es$/.test(last)
        ? last.slice(0, -2)
        : /[^s]s$/.test(last)
          ? last.slice(0, -1)
          : last;
  const camel = words.map((w, i) => (i === 0 ? w[0]!.toLowerCase() + w.slice(1) : w[0]!.toUpperCase() + w.slice(1))).join("");
  return `${camel}Id`;
}

/** kebab-case for entry ids: `ownerUid` -> `owner-uid`. */
function kebab(text: string): string {
  const k = text
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replace(/[^A-Za-z0-9]+/g, "-")
    .toLowerCase()
    .replace(/^-+|-+$/g, "")
    .replace(/-+/g, "-");
  return k.length > 0 ? k : "x";
}

const shapeOf = (pattern: string): string => pattern.replace(/\{[A-Za-z]+\}/g, "{}");

interface Stats {
  sample: CollectionSample;
  key: string;
  idMatches: number;
  /** Per field: documents whose string value is a uid other than an uid-keyed ancestor's (or its own) id. */
  strings: Map<string, { matched: number; covered: number }>;
  arrays: Map<string, { matched: number; covered: number }>;
}

function ratio(matched: number, sampled: number): number {
  return sampled === 0 ? 0 : Math.round((matched / sampled) * 1000) / 1000;
}

function meets(matched: number, sampled: number, t: Thresholds): boolean {
  return matched >= t.minDocs && sampled > 0 && matched / sampled >= t.minShare;
}

/** The ids along a document's path that are uid-keyed ancestors (or itself, when its own collection is uid-keyed). */
function ownerIds(doc: SampledDoc, keyed: ReadonlySet<string>): Set<string> {
  const parts = doc.path.split("/");
  const out = new Set<string>();
  for (let i = 1; i < parts.length; i += 2) {
    const key = parts.filter((_, j) => j % 2 === 0 && j < i).join("/");
    if (keyed.has(key)) out.add(parts[i]!);
  }
  return out;
}

function statsOf(sample: CollectionSample, uids: ReadonlySet<string>): Omit<Stats, "strings" | "arrays"> {
  return { sample, key: sample.collectionPath.join("/"), idMatches: sample.docs.filter((d) => uids.has(d.id)).length };
}

function fieldStats(stats: Omit<Stats, "strings" | "arrays">, uids: ReadonlySet<string>, keyed: ReadonlySet<string>): Stats {
  const strings = new Map<string, { matched: number; covered: number }>();
  const arrays = new Map<string, { matched: number; covered: number }>();
  const bump = (m: typeof strings, field: string, covered: boolean) => {
    const s = m.get(field) ?? { matched: 0, covered: 0 };
    if (covered) s.covered += 1;
    else s.matched += 1;
    m.set(field, s);
  };
  for (const doc of stats.sample.docs) {
    const owners = ownerIds(doc, keyed);
    for (const [field, value] of Object.entries(doc.fields)) {
      if (typeof value === "string" && uids.has(value)) bump(strings, field, owners.has(value));
      else if (Array.isArray(value)) {
        const found = value.filter((v): v is string => typeof v === "string" && uids.has(v));
        if (found.length > 0) bump(arrays, field, found.every((v) => owners.has(v)));
      }
    }
  }
  return { ...stats, strings, arrays };
}

const linkWords = (link: Link, field: string | undefined): string =>
  link === "id" ? "an id equal to an Auth uid" : link === "field" ? `\`${field}\` equal to an Auth uid` : `\`${field}\` containing an Auth uid`;

/**
 * Classifies a sample and drafts the registry: collections (every pattern seen, `unreviewed` unless the base
 * registry already governs its shape), the user data map, the indexes the proposed queries need, and everything
 * that could not be classified. Deterministic: the same sample gives the same draft, whatever its order.
 */
export function draftRegistry(input: DiscoverInput): DiscoverDraft {
  const t = input.thresholds ?? DEFAULT_THRESHOLDS;
  const skip = new Set(controlPlaneCollections(input.base));
  const unclassified: Unclassified[] = [];
  const skippedControlPlane = new Set<string>();

  // 1. Which samples can be patterns at all.
  const usable: CollectionSample[] = [];
  for (const s of [...input.samples].sort((a, b) => byText(a.collectionPath.join("/"), b.collectionPath.join("/")))) {
    if (skip.has(s.collectionPath[0] ?? "")) {
      skippedControlPlane.add(s.collectionPath[0]!);
      continue;
    }
    const bad = s.collectionPath.find((c) => !COLLECTION_ID.test(c));
    if (bad !== undefined) {
      unclassified.push({
        pattern: s.collectionPath.join("/"),
        kind: "collection-id-not-expressible",
        sampled: s.docs.length,
        why: `collection id ${JSON.stringify(bad)} cannot be written as a registry pattern (a letter, then letters, digits, _ or -)`,
      });
      continue;
    }
    usable.push(s);
  }
  const usableKeys = new Set(usable.map((s) => s.collectionPath.join("/")));
  const reachable = usable.filter((s) => s.collectionPath.every((_, i) => usableKeys.has(s.collectionPath.slice(0, i + 1).join("/"))));

  // 2. Uid-keyed collection paths first: an owner's id along a path explains a field that repeats it.
  const base = reachable.map((s) => statsOf(s, input.uids));
  const keyed = new Set(base.filter((b) => meets(b.idMatches, b.sample.docs.length, t)).map((b) => b.key));
  const stats = new Map(base.map((b) => [b.key, fieldStats(b, input.uids, keyed)]));

  // 3. Patterns: the base registry's wording for shapes it already governs, else a variable per collection.
  const baseRules = new Map(input.base.collections.map((r) => [shapeOf(r.pattern), r]));
  const patternOf = new Map<string, string>();
  for (const key of [...stats.keys()].sort(byText)) {
    const path = key.split("/");
    const used = new Set<string>();
    const parts: string[] = [];
    path.forEach((collectionId, i) => {
      const prefix = path.slice(0, i + 1).join("/");
      let name = keyed.has(prefix) ? (parts.some((p) => p === "{uid}") ? "otherUid" : "uid") : variableFor(collectionId);
      while (used.has(name)) name = `sub${name[0]!.toUpperCase()}${name.slice(1)}`;
      used.add(name);
      parts.push(collectionId, `{${name}}`);
    });
    const drafted = parts.join("/");
    patternOf.set(key, baseRules.get(shapeOf(drafted))?.pattern ?? drafted);
  }

  // 4. Proposals.
  const entries: { entry: DataMapEntryJson; candidate: Candidate }[] = [];
  const reachedBy = new Map<string, string[]>();
  const reach = (key: string, what: string) => reachedBy.set(key, [...(reachedBy.get(key) ?? []), what]);
  const hasSubcollections = (keys: string[]) => keys.some((k) => Object.keys(stats.get(k)!.sample.subcollections).length > 0);
  const label = (key: string) => `\`${key.split("/").at(-1)}\``;

  for (const [key, s] of [...stats].sort(([a], [b]) => byText(a, b))) {
    if (s.sample.collectionPath.length !== 1) continue;
    const collection = key;
    const pattern = patternOf.get(key)!;
    const n = s.sample.docs.length;
    const recursive = hasSubcollections([key]);
    if (keyed.has(key)) {
      const entryId = `${kebab(collection)}-doc`;
      entries.push({
        entry: { id: entryId, kind: "doc", path: `${collection}/{uid}`, action: "delete", recursive },
        candidate: {
          entryId,
          link: "id",
          patterns: [pattern],
          matched: s.idMatches,
          sampled: n,
          share: ratio(s.idMatches, n),
          evidence: `${s.idMatches} of ${n} sampled ${label(key)} have ${linkWords("id", undefined)}${recursive ? "; subcollections go with the document (recursive)" : ""}`,
        },
      });
      reach(key, entryId);
    } else if (s.idMatches > 0) {
      unclassified.push(belowThreshold(pattern, "id", undefined, s.idMatches, n, t, label(key)));
    }
    for (const [link, m] of [["field", s.strings], ["array", s.arrays]] as const) {
      for (const [field, c] of [...m].sort(([a], [b]) => byText(a, b))) {
        if (c.matched === 0) continue;
        if (keyed.has(key)) {
          unclassified.push({
            pattern,
            kind: "other-user-field",
            link,
            field,
            matched: c.matched,
            sampled: n,
            why: `${c.matched} of ${n} sampled ${label(key)} have ${linkWords(link, field)} other than their own id: a reference to another user (a referrer, a friend); the document is its owner's, and whether the reference is the other user's data is a review decision`,
          });
          continue;
        }
        if (!meets(c.matched, n, t)) {
          unclassified.push(belowThreshold(pattern, link, field, c.matched, n, t, label(key)));
          continue;
        }
        if (!FIELD_NAME.test(field)) {
          unclassified.push({ pattern, kind: "field-name-not-expressible", link, field, matched: c.matched, sampled: n, why: `field name ${JSON.stringify(field)} is not a plain top-level field name a data map can filter on` });
          continue;
        }
        const entryId = `${kebab(collection)}-by-${kebab(field)}`;
        const arrays = link === "array";
        entries.push({
          entry: {
            id: entryId,
            kind: "query",
            collection,
            where: [[field, arrays ? "array-contains" : "==", "{uid}"]],
            ...(arrays ? sharedAction(field) : { action: "delete" as const, recursive }),
          },
          candidate: {
            entryId,
            link,
            field,
            patterns: [pattern],
            matched: c.matched,
            sampled: n,
            share: ratio(c.matched, n),
            evidence: `${c.matched} of ${n} sampled ${label(key)} have ${linkWords(link, field)}${arrays ? ": a shared document, the user is taken out of the array and the document stays" : recursive ? "; subcollections go with each document (recursive)" : ""}`,
            index: {
              scope: "collection",
              collectionGroup: collection,
              fieldPath: field,
              mode: arrays ? "CONTAINS" : "ASCENDING",
              automatic: true,
              why: `a collection query with ${arrays ? "array-contains" : "equality"} on one field: Firestore's automatic single-field index serves it, unless a fieldOverrides entry for ${collection}.${field} removes it (a TTL exemption does)`,
            },
          },
        });
        reach(key, entryId);
      }
    }
  }

  // Nested collections: a collection-group entry per collection id, its numbers summed over every parent.
  const nested = new Map<string, string[]>();
  for (const key of stats.keys()) {
    const s = stats.get(key)!;
    if (s.sample.collectionPath.length < 2) continue;
    const id = s.sample.collectionPath.at(-1)!;
    nested.set(id, [...(nested.get(id) ?? []), key]);
  }
  for (const [collectionId, keys] of [...nested].sort(([a], [b]) => byText(a, b))) {
    keys.sort(byText);
    const patterns = keys.map((k) => patternOf.get(k)!);
    const n = keys.reduce((sum, k) => sum + stats.get(k)!.sample.docs.length, 0);
    const where = patterns.length === 1 ? `under ${parentOf(patterns[0]!)}` : `under ${patterns.map(parentOf).join(", ")}`;
    const alsoTop = stats.has(collectionId) ? `; a collection-group query also reaches the top-level \`${collectionId}\` collection` : "";
    for (const key of keys) {
      const s = stats.get(key)!;
      if (keyed.has(key)) {
        unclassified.push({
          pattern: patternOf.get(key)!,
          kind: "id-under-parent",
          link: "id",
          matched: s.idMatches,
          sampled: s.sample.docs.length,
          why: `${s.idMatches} of ${s.sample.docs.length} sampled ${label(key)} (${where}) have ${linkWords("id", undefined)}, often another user's (a follow, a membership); no data-map query finds documents by their id across parents, so when they are that user's data too, give them a field holding the uid`,
        });
      } else if (s.idMatches > 0) {
        unclassified.push(belowThreshold(patternOf.get(key)!, "id", undefined, s.idMatches, s.sample.docs.length, t, label(key)));
      }
    }
    for (const link of ["field", "array"] as const) {
      const fields = new Map<string, { matched: number; covered: number }>();
      for (const k of keys) {
        for (const [f, c] of link === "field" ? stats.get(k)!.strings : stats.get(k)!.arrays) {
          const sum = fields.get(f) ?? { matched: 0, covered: 0 };
          fields.set(f, { matched: sum.matched + c.matched, covered: sum.covered + c.covered });
        }
      }
      for (const [field, c] of [...fields].sort(([a], [b]) => byText(a, b))) {
        if (c.matched === 0) continue;
        const first = patterns.length === 1 ? patterns[0]! : patterns.join(", ");
        if (!meets(c.matched, n, t)) {
          unclassified.push(belowThreshold(first, link, field, c.matched, n, t, `\`${collectionId}\``));
          continue;
        }
        if (!FIELD_NAME.test(field)) {
          unclassified.push({ pattern: first, kind: "field-name-not-expressible", link, field, matched: c.matched, sampled: n, why: `field name ${JSON.stringify(field)} is not a plain top-level field name a data map can filter on` });
          continue;
        }
        const arrays = link === "array";
        const recursive = hasSubcollections(keys);
        const entryId = `${kebab(collectionId)}-group-by-${kebab(field)}`;
        entries.push({
          entry: {
            id: entryId,
            kind: "collectionGroup",
            collectionId,
            where: [[field, arrays ? "array-contains" : "==", "{uid}"]],
            ...(arrays ? sharedAction(field) : { action: "delete" as const, recursive }),
          },
          candidate: {
            entryId,
            link,
            field,
            patterns,
            matched: c.matched,
            sampled: n,
            share: ratio(c.matched, n),
            evidence: `${c.matched} of ${n} sampled \`${collectionId}\` (${where}) have ${linkWords(link, field)}${c.covered > 0 ? ` (${c.covered} more hold their owner's uid and go with the owner's document)` : ""}${alsoTop}`,
            index: {
              scope: "collection-group",
              collectionGroup: collectionId,
              fieldPath: field,
              mode: arrays ? "CONTAINS" : "ASCENDING",
              automatic: false,
              why: `a collection-group query on ${field}: Firestore keeps no single-field index at collection-group scope, so firestore.indexes.json needs a fieldOverrides entry for ${collectionId}.${field} with queryScope COLLECTION_GROUP`,
            },
          },
        });
        for (const k of keys) reach(k, entryId);
      }
    }
  }

  // A subtree goes with a recursive entry that reaches its parent.
  const recursiveAt = new Map<string, string[]>();
  for (const { entry } of entries) {
    if (!entry.recursive) continue;
    const key = entry.kind === "doc" ? entry.path!.split("/")[0]! : entry.kind === "query" ? entry.collection! : null;
    const keys = key !== null ? [key] : (nested.get(entry.collectionId!) ?? []);
    for (const k of keys) recursiveAt.set(k, [...(recursiveAt.get(k) ?? []), entry.id]);
  }
  const goesWith = (key: string): string[] => {
    const path = key.split("/");
    const out: string[] = [];
    for (let i = path.length - 1; i >= 1; i--) for (const id of recursiveAt.get(path.slice(0, i).join("/")) ?? []) out.push(`goes with ${id}`);
    return out;
  };
  for (const key of [...stats.keys()].sort(byText)) {
    for (const g of goesWith(key)) reach(key, g);
    const s = stats.get(key)!;
    // A sample with any uid in it has been listed already: as a proposal, or as unclassified with its numbers.
    const signal = s.idMatches > 0 || [...s.strings.values(), ...s.arrays.values()].some((c) => c.matched + c.covered > 0);
    if ((reachedBy.get(key) ?? []).length === 0 && !signal) {
      unclassified.push({
        pattern: patternOf.get(key)!,
        kind: "no-uid-link",
        sampled: s.sample.docs.length,
        why: `no sampled ${label(key)} has an id, a field or an array holding an Auth uid${s.sample.docs.length < t.minDocs ? ` (only ${s.sample.docs.length} sampled)` : ""}: no entry proposed; if it is personal data keyed another way (an email, a phone number), write its entry by hand`,
      });
    }
  }

  // Cloud Storage: folders of sampled object paths that are Auth uids.
  for (const proposal of draftStorage(input.buckets ?? [], input.uids, t, entries.map((e) => e.entry), unclassified)) entries.push(proposal);

  // 5. The draft.
  const collections: RegistryJson["collections"] = [];
  const findings: CollectionFinding[] = [];
  for (const key of [...stats.keys()].sort(byText)) {
    const pattern = patternOf.get(key)!;
    const known = baseRules.get(shapeOf(pattern));
    const s = stats.get(key)!;
    const by = [...new Set(reachedBy.get(key) ?? [])].sort(byText);
    collections.push(
      known
        ? { ...known }
        : {
            pattern,
            retentionClass: UNREVIEWED_CLASS,
            description: `Found by retention discover (${s.sample.docs.length} sampled${s.sample.limited ? ", more exist" : ""}); ${by.length > 0 ? `erasure: ${by.join(", ")}` : "no uid link found"}. Pick its retention class.`,
          },
    );
    findings.push({
      pattern,
      sampled: s.sample.docs.length,
      limited: s.sample.limited,
      subcollections: Object.keys(s.sample.subcollections).sort(byText),
      retentionClass: known?.retentionClass ?? UNREVIEWED_CLASS,
      reachedBy: by,
    });
  }
  collections.sort((a, b) => byText(a.pattern, b.pattern));

  const usedClasses = new Set([...input.base.controlPlane.map((c) => c.retentionClass), ...collections.map((c) => c.retentionClass)]);
  const classes: RegistryJson["classes"] = input.base.classes.filter((c) => usedClasses.has(c.id)).map((c) => ({ ...c }));
  if (usedClasses.has(UNREVIEWED_CLASS)) classes.push(unreviewedClass());
  classes.sort((a, b) => byText(a.id, b.id));

  const ids = new Set<string>();
  for (const e of entries.sort((a, b) => byText(a.entry.id, b.entry.id))) {
    let id = e.entry.id;
    for (let i = 2; ids.has(id); i++) id = `${e.entry.id}-${i}`;
    ids.add(id);
    e.entry.id = id;
    e.candidate.entryId = id;
  }

  const overrides = new Map<string, FieldOverride>();
  const need = (collectionGroup: string, fieldPath: string, mode: "ASCENDING" | "CONTAINS") => {
    const k = `${collectionGroup}\u0000${fieldPath}`;
    const o = overrides.get(k) ?? { collectionGroup, fieldPath, indexes: [...AUTOMATIC] };
    const add: FieldOverrideIndex = mode === "CONTAINS" ? { arrayConfig: "CONTAINS", queryScope: "COLLECTION_GROUP" } : { order: "ASCENDING", queryScope: "COLLECTION_GROUP" };
    if (!o.indexes.some((i) => i.queryScope === add.queryScope && i.order === add.order && i.arrayConfig === add.arrayConfig)) o.indexes.push(add);
    overrides.set(k, o);
  };
  for (const { candidate } of entries) if (candidate.index && !candidate.index.automatic) need(candidate.index.collectionGroup, candidate.index.fieldPath, candidate.index.mode);
  // The engine's own: a cancelled request's restore finds what it soft-deleted by deletionRequestId, per governed collection id.
  for (const id of new Set(collections.map((c) => c.pattern.split("/").at(-2)!))) need(id, "deletionRequestId", "ASCENDING");
  const fieldOverrides = [...overrides.values()]
    .map((o) => ({ ...o, indexes: [...o.indexes].sort((a, b) => indexRank(a) - indexRank(b)) }))
    .sort((a, b) => byText(a.collectionGroup, b.collectionGroup) || byText(a.fieldPath, b.fieldPath));

  unclassified.sort((a, b) => byText(a.pattern, b.pattern) || byText(a.kind, b.kind) || byText(a.field ?? "", b.field ?? ""));

  const registry: RegistryJson = {
    version: input.version,
    effectiveFrom: new Date(input.nowMs).toISOString().replace(/\.\d{3}Z$/, "Z"),
    description: `Drafted by retention discover from a sample of the database (${input.summary.documentsRead} documents read), based on ${input.base.version}. Every collection is ${UNREVIEWED_CLASS} and every data-map entry a proposal until a person has reviewed it.`,
    classes,
    collections,
    controlPlane: input.base.controlPlane.map((c) => ({ ...c })),
    holdReasons: input.base.holdReasons.map((h) => ({ ...h })),
    subjects: { user: { description: "A Firebase Auth account; its key is the uid.", scopeLookups: [] } },
    subtreeHoldRoots: [],
    dataMap: { user: entries.map((e) => e.entry) },
    purge: { ...input.base.purge },
    processedEventTtlDays: input.base.processedEventTtlDays,
  };

  return {
    format: DRAFT_FORMAT,
    basedOn: input.base.version,
    generatedAt: new Date(input.nowMs).toISOString(),
    thresholds: t,
    sample: {
      ...input.summary,
      collectionsNotSampled: [...input.summary.collectionsNotSampled].sort(byText),
      collectionsSampled: stats.size,
      skippedControlPlane: [...skippedControlPlane].sort(byText),
      buckets: (input.buckets ?? []).map((b) => ({
        bucket: b.bucket,
        folders: b.folders.length,
        objectsRead: b.folders.reduce((n, f) => n + f.names.length, 0),
        foldersLimited: b.foldersLimited,
        rootObjects: b.rootObjects,
      })),
    },
    review: {
      steps: [
        `Give every collection whose retentionClass is ${UNREVIEWED_CLASS} a real class (add the class to registry.classes if it is new), then drop the ${UNREVIEWED_CLASS} class.`,
        "Check every dataMap.user entry against review.entries (its evidence and numbers): remove links that are not the user's data, change actions (retain, mask, archive) where the law or the business keeps a record.",
        "Go through review.unclassified: personal data the sample could not link to a uid needs its entry written by hand.",
        "For every storage entry, check its heldWith: the document a hold must cover to hold those objects (a hold on it, or on an ancestor, keeps them). The draft proposes the uid-keyed document the path names; it is a proposal like the rest.",
        "Merge review.indexes.fieldOverrides into firestore.indexes.json (keep what an existing override of the same field lists), and run npm run check:indexes.",
        `Copy registry to policies/versions/${input.version}.json, then npm run policies:publish -- ${input.version}.json and npm run build.`,
      ],
      entries: entries.map((e) => e.candidate),
      collections: findings,
      unclassified,
      indexes: { fieldOverrides },
    },
    registry,
  };
}

/** What Firestore keeps for a field with no override (collection scope): an override replaces it, so it keeps them. */
const AUTOMATIC: FieldOverrideIndex[] = [
  { order: "ASCENDING", queryScope: "COLLECTION" },
  { order: "DESCENDING", queryScope: "COLLECTION" },
  { arrayConfig: "CONTAINS", queryScope: "COLLECTION" },
];

function indexRank(i: FieldOverrideIndex): number {
  const mode = i.arrayConfig === "CONTAINS" ? 2 : i.order === "DESCENDING" ? 1 : 0;
  return (i.queryScope === "COLLECTION_GROUP" ? 10 : 0) + mode;
}

function parentOf(pattern: string): string {
  return pattern.split("/").slice(0, -2).join("/");
}

function sharedAction(field: string) {
  return {
    action: "removeFromArray" as const,
    arrayField: field,
    reason: `A document the user shares with others: erasure takes the user out of ${field}, and the document stays for the rest.`,
    reasonCode: "SHARED_WITH_OTHERS",
  };
}

function belowThreshold(pattern: string, link: Link, field: string | undefined, matched: number, sampled: number, t: Thresholds, what: string): Unclassified {
  return {
    pattern,
    kind: "below-threshold",
    link,
    ...(field !== undefined ? { field } : {}),
    matched,
    sampled,
    why: `only ${matched} of ${sampled} sampled ${what} have ${linkWords(link, field)} (a proposal needs ${Math.round(t.minShare * 100)}% and at least ${t.minDocs}): sometimes a uid, sometimes not; review by hand`,
  };
}

function unreviewedClass(): RegistryJson["classes"][number] {
  return {
    id: UNREVIEWED_CLASS,
    description:
      "Draft only (retention discover): a collection nobody has given a retention class yet. Replace it with a real class before publishing; the registry check refuses a version that still uses it.",
    durationDays: null,
    expiryIsBusinessFact: false,
    mechanism: "workflow",
    holdBehaviour: "allow",
    archive: { required: false },
    recovery: "Unknown until reviewed: say what a restore from PITR or an export brings back.",
    userDeletable: true,
  };
}

/**
 * Storage entries from the sampled buckets: in each top-level folder, the object paths one of whose folders is an
 * Auth uid (`members/m-1/avatar.jpg`: `members/{uid}/`). A position proposes an entry when enough of the folder's sampled
 * objects have a uid there (the thresholds of documents), every folder before it is the same literal (other ids
 * before the uid, such as a tenant's, are listed for review: the draft names no scope), and a heldWith document can be
 * proposed: the path's own `<collection>/{uid}` when its folders before the uid are one collection name, else the
 * draft's first uid-keyed document entry. Each proposal is delete, with its numbers.
 */
function draftStorage(
  buckets: readonly BucketSample[],
  uids: ReadonlySet<string>,
  t: Thresholds,
  drafted: readonly DataMapEntryJson[],
  unclassified: Unclassified[],
): { entry: DataMapEntryJson; candidate: Candidate }[] {
  const out: { entry: DataMapEntryJson; candidate: Candidate }[] = [];
  const keyedDocs = drafted.filter((e) => e.kind === "doc" && typeof e.path === "string" && /^[A-Za-z][A-Za-z0-9_-]*\/\{uid\}$/.test(e.path)).map((e) => e.path!);
  for (const b of buckets) {
    for (const folder of b.folders) {
      const n = folder.names.length;
      // Each uid position (the folder index of the first uid in a name), with the folders before it.
      const at = new Map<number, { before: Set<string>; matched: number }>();
      for (const name of folder.names) {
        const segs = name.split("/").slice(0, -1);
        const i = segs.findIndex((seg, k) => k > 0 && uids.has(seg));
        if (i < 0) continue;
        const slot = at.get(i) ?? { before: new Set<string>(), matched: 0 };
        slot.before.add(segs.slice(0, i).join("/"));
        slot.matched++;
        at.set(i, slot);
      }
      for (const [i, slot] of [...at].sort(([a], [b2]) => a - b2)) {
        const where = `gs://${b.bucket === "(default)" ? "<default bucket>" : b.bucket}/${folder.prefix}`;
        const pattern = `${where}${"{…}/".repeat(Math.max(0, i - 1))}{uid}/`;
        if (!meets(slot.matched, n, t)) {
          unclassified.push({ pattern, kind: "below-threshold", link: "path", matched: slot.matched, sampled: n, why: `${slot.matched} of ${n} sampled objects under ${where} have an Auth uid as folder ${i + 1} of their path: below the thresholds (${Math.round(t.minShare * 100)}% and ${t.minDocs})` });
          continue;
        }
        if (slot.before.size !== 1) {
          unclassified.push({
            pattern,
            kind: "storage-ids-before-uid",
            link: "path",
            matched: slot.matched,
            sampled: n,
            why: `${slot.matched} of ${n} sampled objects under ${where} have an Auth uid as folder ${i + 1}, after folders that differ from one object to another (${slot.before.size} different): another id (a tenant's, a workspace's) comes first; write the entry by hand with the scope's key (the draft declares no scope)`,
          });
          continue;
        }
        const literal = [...slot.before][0]!;
        const prefix = `${literal}/{uid}/`;
        const own = literal.split("/").length === 1 ? `${literal}/{uid}` : null;
        const heldWith = own ?? keyedDocs[0] ?? null;
        if (heldWith === null) {
          unclassified.push({ pattern: `${where.slice(0, -folder.prefix.length)}${prefix}`, kind: "storage-no-held-with", link: "path", matched: slot.matched, sampled: n, why: `${slot.matched} of ${n} sampled objects carry a uid, but no document of the draft can hold them: write the entry by hand with its heldWith (the document a hold on the user targets)` });
          continue;
        }
        const entryId = `${kebab(literal.replace(/\//g, "-"))}-objects`;
        const ownDocDrafted = own !== null && keyedDocs.includes(own);
        out.push({
          entry: { id: entryId, kind: "storage", bucket: b.bucket, prefix, heldWith, action: "delete" },
          candidate: {
            entryId,
            link: "path",
            patterns: [`${where.slice(0, -folder.prefix.length)}${prefix}`],
            matched: slot.matched,
            sampled: n,
            share: ratio(slot.matched, n),
            evidence:
              `${slot.matched} of ${n} sampled objects under ${where}${folder.limited ? " (more exist)" : ""} have an Auth uid as folder ${i + 1} of their path (${prefix}); ` +
              (ownDocDrafted
                ? `heldWith ${heldWith}: the uid-keyed document the draft deletes, so a hold on it holds the objects (a proposal: check it)`
                : own !== null
                  ? `heldWith ${heldWith}: the document the path names, which the sample did not find: check that a hold on the user targets it`
                  : `heldWith ${heldWith}: the draft's first uid-keyed document (the path names none): check it`),
          },
        });
      }
    }
  }
  return out;
}
