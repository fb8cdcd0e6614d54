import { getAuth } from "firebase-admin/auth";
import { DomainError, notFound } from "../kernel/errors";
import { fillTemplate } from "../kernel/paths";
import type { ScopeLookup } from "../kernel/policy-schema";
import type { Subject } from "../plan/rules";
import { adminApp, COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { policy } from "../platform/registry";

/** How many scopes one lookup reads before it says the user is in several. */
const SCOPES_READ = 2;

/** The scope ids one of the registry's lookups finds for a user (`subjects.user.scopeLookups`). */
async function lookUp(lookup: ScopeLookup, uid: string, claims: () => Promise<Record<string, unknown> | undefined>): Promise<string[]> {
  const text = (v: unknown): string[] => (typeof v === "string" && v ? [v] : []);
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
  }
}

/**
 * The scope a user's data lives in, by the registry's lookups in order (the first that finds one decides):
 * "" when the app has no scope kind, null when no lookup finds one. A user a lookup finds in several scopes is
 * refused (SUBJECT_IN_SEVERAL_SCOPES): one request erases a user in one scope.
 */
async function scopeOfUser(uid: string, claims: () => Promise<Record<string, unknown> | undefined>): Promise<string | null> {
  const pol = policy();
  const scope = pol.scope;
  if (!scope) return "";
  for (const lookup of pol.subjects.user.scopeLookups) {
    const found = [...new Set(await lookUp(lookup, uid, claims))];
    if (found.length > 1) {
      throw new DomainError("failed-precondition", "SUBJECT_IN_SEVERAL_SCOPES", `The user belongs to more than one ${scope.name} (found by ${lookup.via}); erase them in each ${scope.name} separately.`);
    }
    if (found[0]) return found[0];
  }
  return null;
}

/** The custom claims of a user's Auth account, read once and only if a lookup asks; undefined when there is no account. */
function claimsOf(uid: string): () => Promise<Record<string, unknown> | undefined> {
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
 * A user as a subject, for planning by uid: the registry's scope lookups (e.g. the Auth account's claim, then a
 * user directory that outlives the account), then the user's latest deletion request (which outlives both).
 * No scope found where the app has scopes: SUBJECT_NOT_FOUND.
 */
export async function resolveUserSubject(uid: string): Promise<Subject> {
  const found = await scopeOfUser(uid, claimsOf(uid));
  if (found !== null) return { type: "user", uid, tenantId: found };
  // A user has few requests; sorting them here needs no composite index.
  const requests = await db().collection(COLLECTIONS.deletionRequests).where("uid", "==", uid).select("tenantId", "requestedAt").get();
  const latest = [...requests.docs].sort((a, b) => (toMs(b.get("requestedAt")) ?? 0) - (toMs(a.get("requestedAt")) ?? 0))[0];
  const fromRequest: unknown = latest?.get("tenantId");
  if (typeof fromRequest === "string" && fromRequest) return { type: "user", uid, tenantId: fromRequest };
  throw notFound("SUBJECT_NOT_FOUND", `No ${policy().scope?.name ?? "scope"} is known for this user.`);
}

/** A scope subject exists while its record, or anything under it, does. NO_SCOPE_KIND: the app has none. */
export async function resolveTenantSubject(tenantId: string): Promise<Subject> {
  const path = policy().scopeRecordPath(tenantId);
  if (path === null) throw new DomainError("failed-precondition", "NO_SCOPE_KIND", "This app's registry declares no scope kind: its users belong to none.");
  const ref = db().doc(path);
  const snap = await ref.get();
  if (!snap.exists && (await ref.listCollections()).length === 0) throw notFound("SUBJECT_NOT_FOUND", `No such ${policy().scope?.name ?? "scope"}.`);
  return { type: "tenant", tenantId };
}

/**
 * The scope a signed-in user asks to be erased in: "" when the app has no scope kind; the scope claim on their
 * token when the registry finds scopes by a claim (`claimScope`, null when the token has none); otherwise the
 * registry's other lookups. Null: the user has no scope, and no request is theirs to open.
 */
export async function scopeOfRequester(uid: string, claimScope: string | null): Promise<string | null> {
  const pol = policy();
  if (!pol.scope) return "";
  if (pol.subjects.user.scopeLookups.some((l) => l.via === "claim")) return claimScope;
  return scopeOfUser(uid, claimsOf(uid));
}

/**
 * The scope of a user whose Auth account was just deleted, from the claims the deleted account carried and the
 * registry's other lookups: "" when the app has no scope kind, null when the account had no scope (staff).
 */
export function tenantOfDeletedUser(uid: string, claims: Record<string, unknown> | undefined): Promise<string | null> {
  return scopeOfUser(uid, () => Promise.resolve(claims));
}
