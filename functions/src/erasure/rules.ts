import type { DataMapEntry } from "../kernel/policy-schema";
import { matchPattern, segments } from "../kernel/paths";
import { PRIMARY_CELL } from "../kernel/policy";
import type { Subject } from "../plan/rules";

/**
 * The erasure ledger's rules, pure: what an entry holds, when two writes of it agree, which subjects of a
 * restored database it names, and where in a database a subject's id can appear. An entry holds no personal
 * data: the subject is a keyed hash (HMAC-SHA256 under the evidence key), what was masked is collection
 * patterns and field names, never paths with ids or values.
 */

export type SubjectKind = Subject["type"];

/** The masked records of an erasure, by collection: the registry's pattern, the field names, how many records. */
export interface MaskedCollection {
  collection: string;
  fields: string[];
  count: number;
}

export interface LedgerEntry {
  /** The request id; the entry's document id with its database (see ledgerEntryId). */
  requestId: string;
  /**
   * The governed database (logical name) whose erasure it records: each cell of a request across several databases
   * records its own entry (docs/decisions/0036-several-databases.md). `primary` for the primary (and for every entry
   * written before databases had names): absent.
   */
  database?: string;
  subjectKind: SubjectKind;
  /** Keyed hash of the uid (a user) or the tenant id (a tenant). */
  subjectHash: string;
  /** A user's erasure is of their data in one tenant: the keyed hash of that tenant id. Null for a tenant. */
  tenantHash: string | null;
  /** The policy version the erasure was decided under. */
  policyVersion: string;
  /** When the purge first reported the erasure done (business time). */
  erasedAtMs: number;
  masked: MaskedCollection[];
  /**
   * The request's "fully gone by" date (requests/rules/gone-by.ts): null until an erasure of it ends PURGED with
   * one (RETAINED_UNDER_HOLD has none). A date, never personal data.
   */
  fullyGoneByMs: number | null;
  /**
   * The erasure was of a request group's member that left the uid-only data-map entries to the group's lead
   * (plan/rules.ts#Subject): a replay erases the same part again. Stored only when true.
   */
  scopedOnly?: true;
}

/** A keyed hash of a subject id (in production: evidence/index.ts#keyedSubjectHash). */
export type KeyedHash = (id: string) => string;

/** The primary database's logical name (kernel/policy.ts#PRIMARY_CELL): an entry without `database` is its. */
export const PRIMARY_LEDGER_DATABASE = PRIMARY_CELL;

/** The governed database (logical name) an entry records the erasure of. */
export const entryDatabase = (e: Pick<LedgerEntry, "database">): string => e.database ?? PRIMARY_LEDGER_DATABASE;

/**
 * The ledger document of a request's erasure in one governed database: the request id as it is for the primary
 * (as every entry was before databases had names), `<requestId>@<database>` for another. Request ids are generated
 * ids (no personal data), and a document id derived from them makes the write idempotent and a look-up a single read.
 */
export function ledgerEntryId(requestId: string, database: string = PRIMARY_LEDGER_DATABASE): string {
  if (!/^[A-Za-z0-9_.~-]{1,200}$/.test(requestId) || requestId === "." || requestId === "..") throw new Error(`LEDGER_BAD_REQUEST_ID: ${JSON.stringify(requestId)} cannot name a ledger entry`);
  if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(database)) throw new Error(`LEDGER_BAD_DATABASE: ${JSON.stringify(database)} is not a database's logical name`);
  return database === PRIMARY_LEDGER_DATABASE ? requestId : `${requestId}@${database}`;
}

/** A path's collection shape with every document id replaced by `*` (for a path no registry pattern names). */
export function wildcardCollection(path: string): string {
  return segments(path)
    .map((s, i) => (i % 2 === 1 ? "*" : s))
    .slice(0, -1)
    .join("/");
}

/**
 * What an erasure masked, by collection: each masked record's collection pattern (from `patternOf`, which
 * names the registry pattern of a document path; a path no pattern names is wildcarded) with the union of
 * the masked fields and a count. Sorted, so the same erasure always gives the same list.
 */
export function maskedByCollection(masked: readonly { path: string; fields: readonly string[] }[], patternOf: (path: string) => string | null): MaskedCollection[] {
  const by = new Map<string, { fields: Set<string>; count: number }>();
  for (const m of masked) {
    const pattern = patternOf(m.path);
    const collection = pattern ? segments(pattern).slice(0, -1).join("/") : wildcardCollection(m.path);
    const slot = by.get(collection) ?? { fields: new Set<string>(), count: 0 };
    m.fields.forEach((f) => slot.fields.add(f));
    slot.count++;
    by.set(collection, slot);
  }
  return [...by.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([collection, s]) => ({ collection, fields: [...s.fields].sort(), count: s.count }));
}

export interface ErasureFacts {
  requestId: string;
  /** The governed database (logical name) the erasure was carried out in (absent: the primary). */
  database?: string;
  subject: Subject;
  policyVersion: string;
  erasedAtMs: number;
  masked: readonly { path: string; fields: readonly string[] }[];
  /** The request's "fully gone by" date when this erasure ends it PURGED with one; null (or absent) otherwise. */
  fullyGoneByMs?: number | null;
}

/** The ledger entry of an erasure the purge has carried out. */
export function buildLedgerEntry(facts: ErasureFacts, hash: KeyedHash, patternOf: (path: string) => string | null): LedgerEntry {
  const s = facts.subject;
  return {
    requestId: facts.requestId,
    ...(facts.database !== undefined && facts.database !== PRIMARY_LEDGER_DATABASE ? { database: facts.database } : {}),
    subjectKind: s.type,
    subjectHash: hash(s.type === "user" ? s.uid : s.tenantId),
    tenantHash: s.type === "user" ? hash(s.tenantId) : null,
    policyVersion: facts.policyVersion,
    erasedAtMs: facts.erasedAtMs,
    masked: maskedByCollection(facts.masked, patternOf),
    fullyGoneByMs: facts.fullyGoneByMs ?? null,
    ...(s.type === "user" && s.scopedOnly === true ? { scopedOnly: true as const } : {}),
  };
}

/**
 * The "fully gone by" date a later write of an entry stores, or null when the stored one stands. The entry's
 * other facts are the first write's, but the date moves later only: a round that ends RETAINED_UNDER_HOLD has
 * none, the round that purges after the hold sets it, and an erasure replayed into a restored database starts
 * that database's recovery windows again, so its date is the later one. An earlier or missing fresh date never
 * replaces a stored one.
 */
export function goneByUpdate(storedMs: number | null, freshMs: number | null): number | null {
  if (freshMs === null) return null;
  return storedMs === null || freshMs > storedMs ? freshMs : null;
}

/**
 * Whether a stored entry records the same erasure as a fresh one: the same request, subject kind and keyed
 * hashes. The rest (policy version, time, what was masked) is the first write's: a later round of the same
 * request (after a hold is released) or a retried finalize finds the entry there and leaves it, except for a later
 * "fully gone by" date ({@link goneByUpdate}). The fields
 * that differ, for the error; [] when they agree.
 */
export function entryConflicts(stored: Partial<LedgerEntry>, fresh: LedgerEntry): string[] {
  const keys = ["requestId", "subjectKind", "subjectHash", "tenantHash"] as const;
  const conflicts: string[] = keys.filter((k) => (stored[k] ?? null) !== fresh[k]);
  // An entry written before databases had names is the primary's.
  if ((stored.database ?? PRIMARY_LEDGER_DATABASE) !== (fresh.database ?? PRIMARY_LEDGER_DATABASE)) conflicts.push("database");
  return conflicts;
}

/** A subject of the restored database that a ledger entry names, with the entry (the latest, when several do). */
export interface LedgerMatch {
  subject: Subject;
  entry: LedgerEntry;
}

const subjectKey = (s: Subject): string => (s.type === "user" ? `user\u0000${s.uid}\u0000${s.tenantId}` : `tenant\u0000${s.tenantId}`);

/**
 * The subjects among `candidates` that the ledger says were erased: a user whose uid and tenant hash to an
 * entry's hashes, a tenant whose id does. `hashes` gives an id's keyed hash under every key of the ring
 * (after a rotation, entries made with an older key still match). Each subject once, with its latest entry;
 * users first, then tenants, each sorted by id.
 */
export function matchLedger(entries: readonly LedgerEntry[], candidates: Iterable<Subject>, hashes: (id: string) => readonly string[]): LedgerMatch[] {
  const byHash = new Map<string, LedgerEntry[]>();
  for (const e of entries) byHash.set(`${e.subjectKind}\u0000${e.subjectHash}`, [...(byHash.get(`${e.subjectKind}\u0000${e.subjectHash}`) ?? []), e]);
  const seen = new Set<string>();
  const out: LedgerMatch[] = [];
  for (const subject of candidates) {
    const key = subjectKey(subject);
    if (seen.has(key)) continue;
    seen.add(key);
    const id = subject.type === "user" ? subject.uid : subject.tenantId;
    const tenantHashes = subject.type === "user" ? new Set(hashes(subject.tenantId)) : null;
    const found = hashes(id)
      .flatMap((h) => byHash.get(`${subject.type}\u0000${h}`) ?? [])
      .filter((e) => (tenantHashes ? e.tenantHash !== null && tenantHashes.has(e.tenantHash) : true));
    const latest = [...found].sort((a, b) => b.erasedAtMs - a.erasedAtMs || (a.requestId < b.requestId ? -1 : 1))[0];
    // A group member's erasure is replayed as it was made: its scope's part only.
    if (latest) out.push({ subject: subject.type === "user" && latest.scopedOnly === true ? { ...subject, scopedOnly: true } : subject, entry: latest });
  }
  const order = (m: LedgerMatch): string => `${m.subject.type === "user" ? 0 : 1}\u0000${m.subject.type === "user" ? m.subject.uid : ""}\u0000${m.subject.tenantId}`;
  return out.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}

/**
 * A place in the database where a subject's id appears, read from the data map: the id of a document the
 * map names by path (a scope's record, a user directory entry `…/{uid}`), or a field a query entry filters on
 * with the id (`[field, "==", "{uid}"]`).
 * - `pattern`: the document pattern (its variables give the ids found in a path);
 * - `field`: the field holding the subject's id (null: the id is in the path);
 * - `parent`: the collection to list when it has no variables (a tenant's document may be missing while its
 *   subcollections are not; listing finds it), else null and the collection group is scanned.
 */
export interface SubjectSource {
  pattern: string;
  collectionId: string;
  parent: string | null;
  field: string | null;
}

const hasVars = (s: string): boolean => /\{[^}]+\}/.test(s);

/**
 * Where the subjects of `kind` can be found, from its data-map entries: one source per entry that names the
 * subject's id, deduplicated. A `collectionGroup` entry's pattern is its collection id under any parent.
 * `scopeKey`: the variable of the scope's key (the registry's `subjects.scope.key`), null without a scope kind.
 */
export function subjectSources(kind: SubjectKind, dataMap: readonly DataMapEntry[], scopeKey: string | null): SubjectSource[] {
  if (kind === "tenant" && scopeKey === null) return [];
  const idVar = kind === "user" ? "{uid}" : `{${scopeKey}}`;
  const out = new Map<string, SubjectSource>();
  const add = (s: SubjectSource) => out.set(`${s.pattern}\u0000${s.field ?? ""}`, s);
  for (const e of dataMap) {
    if (e.kind === "doc") {
      const path = e.path ?? "";
      if (!path.includes(idVar)) continue;
      const segs = segments(path);
      const parent = segs.slice(0, -1).join("/");
      add({ pattern: path, collectionId: segs[segs.length - 2] ?? "", parent: hasVars(parent) ? null : parent, field: null });
      continue;
    }
    const field = e.where.find(([, op, value]) => op === "==" && value === idVar)?.[0];
    if (!field) continue;
    if (e.kind === "collectionGroup") {
      add({ pattern: `**/${e.collectionId ?? ""}/{docId}`, collectionId: e.collectionId ?? "", parent: null, field });
    } else {
      const collection = e.collection ?? "";
      add({ pattern: `${collection}/{docId}`, collectionId: segments(collection).slice(-1)[0] ?? "", parent: hasVars(collection) ? null : collection, field });
    }
  }
  return [...out.values()];
}

/**
 * The subject a document found through `source` names, or null: the id from the source's field or from the
 * path, and a user's scope from the path (the scope key's variable, `scopeKey`) else the document's `tenantId`
 * field (every governed document carries its scope there). `fields` are the document's values of the source
 * field and of `tenantId` (undefined when missing). Without a scope kind (`scopeKey` null) a user's scope is "".
 */
export function subjectOfFound(kind: SubjectKind, source: SubjectSource, path: string, fields: { id?: unknown; tenantId?: unknown }, scopeKey: string | null): Subject | null {
  const vars = source.pattern.startsWith("**/") ? (segments(path).length % 2 === 0 ? {} : null) : matchPattern(source.pattern, path);
  if (!vars) return null;
  const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
  const idVar = kind === "user" ? "uid" : (scopeKey ?? "");
  const id = source.field ? str(fields.id) : str(vars[idVar]);
  if (!id) return null;
  if (kind === "tenant") return { type: "tenant", tenantId: id };
  if (scopeKey === null) return { type: "user", uid: id, tenantId: "" };
  const tenantId = str(vars[scopeKey]) ?? str(fields.tenantId);
  return tenantId ? { type: "user", uid: id, tenantId } : null;
}

/**
 * Where a storage entry's object names carry a subject's ids, as folders to list (docs/STORAGE.md): the template's
 * segments up to the last of the subject's variables (`workspaces/{workspaceId}/members/{uid}/` -> `workspaces`,
 * `{workspaceId}`, `members`, `{uid}`). Null when one of them is not a whole segment (`photos/{uid}.jpg`): its ids are not folders, and
 * the replay finds that subject through its documents only. `vars`: the subject's variable names.
 */
export function storageSubjectSegments(template: string, vars: readonly string[]): string[] | null {
  const segs = template.split("/").filter((x) => x !== "");
  let last = -1;
  for (const v of vars) {
    const at = segs.indexOf(`{${v}}`);
    if (at < 0) {
      if (template.includes(`{${v}}`)) return null;
      continue;
    }
    last = Math.max(last, at);
  }
  if (last < 0) return null;
  const out = segs.slice(0, last + 1);
  // Any other variable before the subject's would have to be listed too: refused (the schema puts the subject's first).
  return out.every((x) => !/\{/.test(x) || /^\{[A-Za-z]+\}$/.test(x)) ? out : null;
}
