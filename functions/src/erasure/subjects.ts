import { FieldPath, type Query } from "firebase-admin/firestore";
import { keyedSubjectHashes } from "../evidence/index";
import type { Subject } from "../plan/rules";
import { currentCell, db } from "../platform/firestore";
import { policy } from "../platform/registry";
import { readLedger } from "./ledger";
import { entryDatabase, matchLedger, storageSubjectSegments, subjectOfFound, subjectSources, type LedgerEntry, type LedgerMatch, type SubjectKind, type SubjectSource } from "./rules";
import { templateOf } from "../kernel/storage-map";
import { bucketOfEntry, listFolders } from "../platform/storage";

/** Folders listed per level at most while finding subjects in a bucket (a bound, far above any real listing). */
const MAX_FOLDERS = 10_000_000;

const PAGE = 1_000;

/** Every document a source reaches (only the two fields it needs), a page at a time, in id order. */
async function* scan(kind: SubjectKind, source: SubjectSource): AsyncGenerator<{ path: string; id?: unknown; tenantId?: unknown }> {
  const fields = source.field ? [source.field, "tenantId"] : ["tenantId"];
  const base: Query = source.parent ? db().collection(source.parent) : db().collectionGroup(source.collectionId);
  let last: string | undefined;
  for (;;) {
    let q = base.select(...fields).orderBy(FieldPath.documentId()).limit(PAGE);
    if (last) q = q.startAfter(db().doc(last));
    const snap = await q.get();
    for (const d of snap.docs) yield { path: d.ref.path, id: source.field ? d.get(source.field) : undefined, tenantId: d.get("tenantId") };
    if (snap.size < PAGE) break;
    last = snap.docs[snap.docs.length - 1]!.ref.path;
  }
  // A document named by path may be missing while its subcollections are not (a tenant whose own record is
  // gone): listing the collection finds those ids too, when the path alone names the subject.
  const key = policy().scope?.key;
  const pathNamesSubject = kind === "tenant" || (key !== undefined && source.pattern.includes(`{${key}}`));
  if (source.parent && !source.field && pathNamesSubject) for (const ref of await db().collection(source.parent).listDocuments()) yield { path: ref.path };
}

/**
 * Every subject of `kind` whose id appears in the database `db()` names (the data map's documents by path and
 * the fields its queries filter on): a full read of those collections, two fields per document.
 */
async function* candidates(kind: SubjectKind): AsyncGenerator<Subject> {
  const pol = policy();
  const scopeKey = pol.scope?.key ?? null;
  for (const source of subjectSources(kind, pol.dataMap(kind), scopeKey)) {
    for await (const found of scan(kind, source)) {
      const s = subjectOfFound(kind, source, found.path, found, scopeKey);
      if (s) yield s;
    }
  }
  // The cell's view names the storage entries only in the cell whose holds cover their objects
  // (kernel/policy.ts#cellOfEntry), so a bucket's subjects are found once, with that cell's copy.
  yield* storageCandidates(kind, scopeKey);
}

/**
 * The subjects whose ids a bucket's paths carry (an object back from a bucket restore or a soft delete whose subject
 * left no document in the restored database): each storage entry's folders listed level by level down to the
 * subject's ids (erasure/rules.ts#storageSubjectSegments). A user in an app with scopes is found this way only when
 * the path names the scope too.
 */
async function* storageCandidates(kind: SubjectKind, scopeKey: string | null): AsyncGenerator<Subject> {
  const vars = kind === "user" ? ["uid", ...(scopeKey ? [scopeKey] : [])] : scopeKey ? [scopeKey] : [];
  if (vars.length === 0) return;
  for (const entry of policy().storageMap(kind)) {
    const segs = storageSubjectSegments(templateOf(entry), vars);
    if (!segs || (kind === "user" && scopeKey !== null && !segs.includes(`{${scopeKey}}`))) continue;
    const bucket = bucketOfEntry(entry);
    for await (const bound of walkFolders(bucket, segs, "", {})) {
      if (kind === "tenant") yield { type: "tenant", tenantId: bound[scopeKey!]! };
      else yield { type: "user", uid: bound.uid!, tenantId: scopeKey ? bound[scopeKey]! : "" };
    }
  }
}

async function* walkFolders(bucket: string, segs: readonly string[], prefix: string, vars: Record<string, string>): AsyncGenerator<Record<string, string>> {
  if (segs.length === 0) {
    yield vars;
    return;
  }
  const [head, ...rest] = segs;
  const name = /^\{([A-Za-z]+)\}$/.exec(head!)?.[1];
  if (name === undefined) {
    yield* walkFolders(bucket, rest, `${prefix}${head}/`, vars);
    return;
  }
  if (prefix === "") return;
  const { folders } = await listFolders(bucket, prefix, MAX_FOLDERS);
  for (const f of folders) {
    const value = f.slice(prefix.length, -1);
    if (value !== "") yield* walkFolders(bucket, rest, f, { ...vars, [name]: value });
  }
}

/**
 * The subjects of the database `db()` names (run it inside `inDatabase` for a restored one) that the erasure
 * ledger says were erased: their ids hashed with every key of the evidence key ring and looked up among the
 * ledger's hashes. The ledger is read from its own database.
 */
export async function findLedgerMatches(entries?: readonly LedgerEntry[]): Promise<{ entries: number; matches: LedgerMatch[] }> {
  // The erasures of this cell only: a request across several databases has an entry per cell, and a restored copy of
  // one cell is put right with that cell's (docs/decisions/0036-several-databases.md).
  const cell = currentCell();
  const ledger = (entries ?? (await readLedger())).filter((e) => entryDatabase(e) === cell);
  if (ledger.length === 0) return { entries: 0, matches: [] };
  const memo = new Map<string, string[]>();
  const hashes = (id: string): string[] => {
    let h = memo.get(id);
    if (!h) memo.set(id, (h = keyedSubjectHashes(id)));
    return h;
  };
  const found = new Map<string, Subject>();
  for (const kind of ["user", "tenant"] as const) {
    for await (const s of candidates(kind)) found.set(s.type === "user" ? `u/${s.uid}/${s.tenantId}` : `t/${s.tenantId}`, s);
  }
  return { entries: ledger.length, matches: matchLedger(ledger, found.values(), hashes) };
}
