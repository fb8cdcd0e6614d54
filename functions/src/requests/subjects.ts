import { getAuth } from "firebase-admin/auth";
import { FieldPath, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { DomainError, notFound } from "../kernel/errors";
import { fillTemplate, matchPattern, segments } from "../kernel/paths";
import type { ScopeLookup } from "../kernel/policy-schema";
import type { Subject } from "../plan/rules";
import { adminApp, COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { policy } from "../platform/registry";
import { GROUP_MAX_SCOPES, groupSubjects } from "./rules/group";

/** How many scopes one lookup reads for a user: one more than a group may have, so "too many" is known. */
const SCOPES_READ = GROUP_MAX_SCOPES + 1;
/** Firestore's `in` and `array-contains-any` take at most 30 values; Auth's getUsers 100 identifiers. */
const IN_LIMIT = 30;
const GET_USERS_LIMIT = 100;
/** Documents per page when a closure lists a scope's members. */
const MEMBERS_PAGE = 500;

type Claims = () => Promise<Record<string, unknown> | undefined>;

const text = (v: unknown): string[] => (typeof v === "string" && v ? [v] : []);

/** The collection id a path lookup's collection-group query runs on: the pattern's last collection. */
const lastCollectionId = (pattern: string): string => segments(pattern).slice(-2)[0] ?? "";

/** The scope a path lookup's membership document names, from its path (null: another collection of that id). */
function scopeOfMemberPath(pattern: string, path: string): string | null {
  const key = policy().scope?.key;
  return key ? (matchPattern(pattern, path)?.[key] ?? null) : null;
}

/** The scope ids one of the registry's lookups finds for a user (`subjects.user.scopeLookups`), at most SCOPES_READ read. */
async function lookUp(lookup: ScopeLookup, uid: string, claims: Claims): Promise<string[]> {
  switch (lookup.via) {
    case "claim":
      return text((await claims())?.[lookup.claim]);
    case "document":
      return text((await db().doc(fillTemplate(lookup.path, { uid })).get()).get(lookup.field));
    case "membership": {
      const snap = await db().collection(fillTemplate(lookup.collection, { uid })).where(lookup.userField, "==", uid).select(lookup.scopeField).limit(SCOPES_READ).get();
      return snap.docs.flatMap((d) => text(d.get(lookup.scopeField)));
    }
    case "array": {
      const snap = await db().collection(fillTemplate(lookup.collection, { uid })).where(lookup.field, "array-contains", uid).select().limit(SCOPES_READ).get();
      return snap.docs.map((d) => d.id);
    }
    case "path": {
      const snap = await db().collectionGroup(lastCollectionId(lookup.pattern)).where(lookup.userField, "==", uid).select().limit(SCOPES_READ).get();
      return snap.docs.flatMap((d) => text(scopeOfMemberPath(lookup.pattern, d.ref.path)));
    }
  }
}

/**
 * The scopes a user's data lives in, by the registry's lookups in order: the first that finds any decides, with
 * every scope it finds (sorted, unique). [""] when the app has no scope kind, [] when no lookup finds one.
 */
async function scopesOfUser(uid: string, claims: Claims): Promise<string[]> {
  const pol = policy();
  if (!pol.scope) return [""];
  for (const lookup of pol.subjects.user.scopeLookups) {
    const found = [...new Set(await lookUp(lookup, uid, claims))].sort();
    if (found.length > 0) return found;
  }
  return [];
}

/** The custom claims of a user's Auth account, read once and only if a lookup asks; undefined when there is no account. */
function claimsOf(uid: string): Claims {
  let read: Promise<Record<string, unknown> | undefined> | undefined;
  return () =>
    (read ??= getAuth(adminApp())
      .getUser(uid)
      .then((u) => u.customClaims)
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === "auth/user-not-found") return undefined;
        throw err;
      }));
}

/**
 * A user as the subjects of an erasure, for planning by uid: one per scope the registry's lookups find (a claim, a
 * directory that outlives the account, memberships...), the lead first and the others `scopedOnly`
 * (requests/rules/group.ts#groupSubjects); when no lookup finds one, the scope of the user's latest deletion
 * request (which outlives all of these), or its whole group. No scope found where the app has scopes:
 * SUBJECT_NOT_FOUND. TOO_MANY_SCOPES past the group limit.
 */
export async function resolveUserSubjects(uid: string): Promise<Subject[]> {
  const found = await scopesOfUser(uid, claimsOf(uid));
  if (found.length > 0) return groupSubjects(uid, found);
  // A user has few requests; sorting them here needs no composite index.
  const requests = await db().collection(COLLECTIONS.deletionRequests).where("uid", "==", uid).select("tenantId", "requestedAt", "groupId").get();
  const latest = [...requests.docs].sort((a, b) => (toMs(b.get("requestedAt")) ?? 0) - (toMs(a.get("requestedAt")) ?? 0))[0];
  const fromRequest: unknown = latest?.get("tenantId");
  if (typeof fromRequest === "string" && fromRequest) {
    const group: unknown = latest?.get("groupId");
    const scopes = typeof group === "string" ? requests.docs.filter((d) => d.get("groupId") === group).flatMap((d) => text(d.get("tenantId"))) : [fromRequest];
    return groupSubjects(uid, scopes);
  }
  throw notFound("SUBJECT_NOT_FOUND", `No ${policy().scope?.name ?? "scope"} is known for this user.`);
}

/**
 * A user as the subject of a plan in one scope: the member of their group for that scope when the lookups place
 * them there (so a plan shows what that scope's erasure does: without the uid-only entries unless it is the
 * lead), else the user in that scope as named. Without a scope: the only subject, or SUBJECT_IN_SEVERAL_SCOPES
 * (with the scopes in `details.scopes`) when the user has several; `resolveUserSubjects` plans them all.
 */
export async function resolveUserSubject(uid: string, scope?: string): Promise<Subject> {
  if (scope !== undefined) {
    if (!policy().scope) throw noScopeKind();
    const subjects = await resolveUserSubjects(uid).catch((err: unknown) => {
      if (err instanceof DomainError && err.reason === "SUBJECT_NOT_FOUND") return [];
      throw err;
    });
    return subjects.find((s) => s.tenantId === scope) ?? { type: "user", uid, tenantId: scope };
  }
  const subjects = await resolveUserSubjects(uid);
  if (subjects.length === 1) return subjects[0]!;
  const name = policy().scope?.name ?? "scope";
  throw new DomainError("failed-precondition", "SUBJECT_IN_SEVERAL_SCOPES", `The user belongs to ${subjects.length} ${name}s; name one, or plan them all.`, {
    scopes: subjects.map((s) => s.tenantId),
  });
}

const noScopeKind = () => new DomainError("failed-precondition", "NO_SCOPE_KIND", "This app's registry declares no scope kind: its users belong to none.");

/** A scope subject exists while its record, or anything under it, does. NO_SCOPE_KIND: the app has none. */
export async function resolveTenantSubject(tenantId: string): Promise<Subject> {
  const path = policy().scopeRecordPath(tenantId);
  if (path === null) throw noScopeKind();
  const ref = db().doc(path);
  const snap = await ref.get();
  if (!snap.exists && (await ref.listCollections()).length === 0) throw notFound("SUBJECT_NOT_FOUND", `No such ${policy().scope?.name ?? "scope"}.`);
  return { type: "tenant", tenantId };
}

/**
 * The scopes a signed-in user asks to be erased in: [""] when the app has no scope kind; the scope claim on their
 * token when the registry finds scopes by a claim (`claimScope`; [] when the token has none); otherwise the
 * registry's other lookups, every scope the first finding lookup names. []: the user has no scope, and no request
 * is theirs to open.
 */
export async function scopesOfRequester(uid: string, claimScope: string | null): Promise<string[]> {
  const pol = policy();
  if (!pol.scope) return [""];
  if (pol.subjects.user.scopeLookups.some((l) => l.via === "claim")) return claimScope ? [claimScope] : [];
  return scopesOfUser(uid, claimsOf(uid));
}

/**
 * The scopes of a user whose Auth account was just deleted, from the claims the deleted account carried and the
 * registry's other lookups: [""] when the app has no scope kind, [] when the account had no scope (staff).
 */
export function scopesOfDeletedUser(uid: string, claims: Record<string, unknown> | undefined): Promise<string[]> {
  return scopesOfUser(uid, () => Promise.resolve(claims));
}

/** A user's place in a scope, as a lookup shows it: the document that proves it, or null for a claim. */
export interface ScopeMembership {
  uid: string;
  tenantId: string;
  path: string | null;
}

/** Pages a query in document-id order, reading only `fields`. */
async function* pageOf(query: Query, fields: string[]): AsyncGenerator<QueryDocumentSnapshot> {
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = query.select(...fields).orderBy(FieldPath.documentId()).limit(MEMBERS_PAGE);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    for (const d of snap.docs) yield d;
    if (snap.size < MEMBERS_PAGE) return;
    last = snap.docs[snap.docs.length - 1];
  }
}

/** Whether a collection path template has variables (`people/{uid}/memberships`): it is one collection per user. */
const hasVars = (template: string): boolean => /\{[A-Za-z]+\}/.test(template);

/**
 * Whether a lookup can list the users of a scope: a membership, an array or a path lookup can, and so can a
 * document lookup whose document is keyed by the uid in a fixed collection (`directory/{uid}`: a query on its
 * field); a membership collection per user (`people/{uid}/memberships`) is read as a collection group. A claim
 * cannot (Auth has no query by claim, and reading every account is unbounded), nor can an array lookup whose
 * collection depends on the uid.
 */
export function canListScopeUsers(lookup: ScopeLookup): boolean {
  switch (lookup.via) {
    case "claim":
      return false;
    case "document": {
      const s = segments(lookup.path);
      return s.length === 2 && s[1] === "{uid}";
    }
    case "membership":
      return true;
    case "array":
      return !hasVars(lookup.collection);
    case "path":
      return true;
  }
}

/**
 * The users the registry's lookups place in a scope, for its closure (purge/runner/tenant-accounts.ts): each lookup
 * that can list them (`canListScopeUsers`), paged. A claim lookup lists no one.
 */
export async function* usersOfScope(scopeId: string): AsyncGenerator<ScopeMembership> {
  const pol = policy();
  const key = pol.scope?.key;
  if (!key) return;
  for (const lookup of pol.subjects.user.scopeLookups) {
    if (!canListScopeUsers(lookup)) continue;
    switch (lookup.via) {
      case "document": {
        const collection = segments(lookup.path)[0]!;
        for await (const d of pageOf(db().collection(collection).where(lookup.field, "==", scopeId), [])) yield { uid: d.id, tenantId: scopeId, path: d.ref.path };
        break;
      }
      case "membership": {
        const perUser = hasVars(lookup.collection);
        const q = perUser ? db().collectionGroup(segments(lookup.collection).slice(-1)[0]!) : db().collection(lookup.collection);
        for await (const d of pageOf(q.where(lookup.scopeField, "==", scopeId), [lookup.userField])) {
          // A collection group also has collections of that id elsewhere: only the lookup's own count.
          if (perUser && !matchPattern(`${lookup.collection}/{memberDoc}`, d.ref.path)) continue;
          for (const uid of text(d.get(lookup.userField))) yield { uid, tenantId: scopeId, path: d.ref.path };
        }
        break;
      }
      case "array": {
        const snap = await db().collection(lookup.collection).doc(scopeId).get();
        const members: unknown = snap.get(lookup.field);
        for (const uid of Array.isArray(members) ? members.flatMap(text) : []) yield { uid, tenantId: scopeId, path: snap.ref.path };
        break;
      }
      case "path": {
        const parent = fillTemplate(lookup.pattern.slice(0, lookup.pattern.lastIndexOf("/")), { [key]: scopeId });
        for await (const d of pageOf(db().collection(parent), [lookup.userField])) {
          for (const uid of text(d.get(lookup.userField))) yield { uid, tenantId: scopeId, path: d.ref.path };
        }
        break;
      }
      case "claim":
        break;
    }
  }
}

/**
 * Every scope the registry's lookups place each of these users in, by every lookup (not only the first that finds
 * one): a closure keeps the account of a user any lookup places in another scope (purge/rules/accounts.ts). Batched:
 * an `in` (or `array-contains-any`) query per 30 users for a lookup with a fixed collection, a query per user for one
 * whose collection depends on the uid, the claims of 100 accounts a call.
 */
export async function scopesOfUsers(uids: readonly string[]): Promise<ScopeMembership[]> {
  const pol = policy();
  if (!pol.scope || uids.length === 0) return [];
  const out: ScopeMembership[] = [];
  const chunks = (size: number) => Array.from({ length: Math.ceil(uids.length / size) }, (_, i) => uids.slice(i * size, (i + 1) * size));
  for (const lookup of pol.subjects.user.scopeLookups) {
    switch (lookup.via) {
      case "claim":
        for (const chunk of chunks(GET_USERS_LIMIT)) {
          for (const u of (await getAuth(adminApp()).getUsers(chunk.map((uid) => ({ uid })))).users) {
            for (const tenantId of text(u.customClaims?.[lookup.claim])) out.push({ uid: u.uid, tenantId, path: null });
          }
        }
        break;
      case "document":
        for (const chunk of chunks(GET_USERS_LIMIT)) {
          const snaps = await db().getAll(...chunk.map((uid) => db().doc(fillTemplate(lookup.path, { uid }))), { fieldMask: [lookup.field] });
          snaps.forEach((s, i) => text(s.get(lookup.field)).forEach((tenantId) => out.push({ uid: chunk[i]!, tenantId, path: s.ref.path })));
        }
        break;
      case "membership":
      case "array":
        if (hasVars(lookup.collection)) {
          for (const uid of uids) for (const tenantId of await lookUp(lookup, uid, () => Promise.resolve(undefined))) out.push({ uid, tenantId, path: null });
          break;
        }
        for (const chunk of chunks(IN_LIMIT)) {
          if (lookup.via === "membership") {
            const snap = await db().collection(lookup.collection).where(lookup.userField, "in", chunk).select(lookup.userField, lookup.scopeField).get();
            for (const d of snap.docs) for (const uid of text(d.get(lookup.userField))) for (const tenantId of text(d.get(lookup.scopeField))) out.push({ uid, tenantId, path: d.ref.path });
          } else {
            const snap = await db().collection(lookup.collection).where(lookup.field, "array-contains-any", chunk).select(lookup.field).get();
            for (const d of snap.docs) {
              const members: unknown = d.get(lookup.field);
              for (const uid of chunk.filter((u) => Array.isArray(members) && members.includes(u))) out.push({ uid, tenantId: d.id, path: d.ref.path });
            }
          }
        }
        break;
      case "path":
        for (const chunk of chunks(IN_LIMIT)) {
          const snap = await db().collectionGroup(lastCollectionId(lookup.pattern)).where(lookup.userField, "in", chunk).select(lookup.userField).get();
          for (const d of snap.docs) {
            const tenantId = scopeOfMemberPath(lookup.pattern, d.ref.path);
            for (const uid of text(d.get(lookup.userField))) if (tenantId) out.push({ uid, tenantId, path: d.ref.path });
          }
        }
        break;
    }
  }
  return out;
}
