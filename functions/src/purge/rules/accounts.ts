import { matchPattern } from "../../kernel/paths";
import type { PolicyIndex } from "../../kernel/policy";

/**
 * Which Auth accounts a scope's closure (a tenant's) deletes, pure.
 *
 * A scope's users are found through the registry (purge/runner/tenant-accounts.ts): the users its scope lookups
 * place there (requests/subjects.ts#usersOfScope: membership, array, path and uid-keyed document lookups can list
 * them; a claim cannot), recorded when each round of the closure is planned, before it deletes the memberships;
 * and the uids of the uid-keyed documents the closure's manifest names (deleted or kept), read from their paths:
 * the user data map's `doc` entries ending in `{uid}` and path lookups whose membership document is keyed by the
 * uid. A user whom only a claim places in the scope is found by neither: their account stays. A user any lookup
 * places in another scope keeps the account; the last of a user's scopes to be closed takes it.
 */

/** The document patterns whose paths name a scope's user: uid-keyed data-map documents, uid-keyed path-lookup memberships. */
export function uidKeyedPatterns(policy: PolicyIndex): string[] {
  const fromMap = policy
    .dataMap("user")
    .filter((e) => e.kind === "doc" && e.path?.endsWith("/{uid}"))
    .map((e) => e.path!);
  const fromLookups = (policy.registry.subjects?.user.scopeLookups ?? []).flatMap((l) => (l.via === "path" && l.pattern.endsWith("/{uid}") ? [l.pattern] : []));
  return [...new Set([...fromMap, ...fromLookups])];
}

/** The uid a path names for scope `tenantId`, if it is one of `patterns` (a pattern naming another scope does not count). */
export function uidOfPath(path: string, patterns: readonly string[], tenantId: string, scopeKey: string): string | null {
  for (const p of patterns) {
    const vars = matchPattern(p, path);
    if (!vars?.uid) continue;
    if (vars[scopeKey] !== undefined && vars[scopeKey] !== tenantId) continue;
    return vars.uid;
  }
  return null;
}

/** A user's place in a scope, as a lookup shows it: the document that proves it, or null (a claim). */
export interface Membership {
  uid: string;
  tenantId: string;
  path: string | null;
}

/**
 * Splits a closing tenant's users into the accounts to delete and the accounts kept because a lookup places the
 * user in another scope (with the documents that say so; a claim names none). Sorted, so the evidence is
 * deterministic.
 */
export function accountsToDelete(
  uids: Iterable<string>,
  memberships: readonly Membership[],
  closingTenantId: string,
): { delete: string[]; keep: { uid: string; paths: string[] }[] } {
  const elsewhere = new Map<string, Set<string>>();
  for (const m of memberships) {
    if (m.tenantId === closingTenantId) continue;
    const paths = elsewhere.get(m.uid) ?? new Set<string>();
    if (m.path !== null) paths.add(m.path);
    elsewhere.set(m.uid, paths);
  }
  const all = [...new Set(uids)].sort();
  return {
    delete: all.filter((u) => !elsewhere.has(u)),
    keep: all.filter((u) => elsewhere.has(u)).map((uid) => ({ uid, paths: [...elsewhere.get(uid)!].sort() })),
  };
}
