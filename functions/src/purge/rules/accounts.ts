import { matchPattern } from "../../kernel/paths";
import type { PolicyIndex } from "../../kernel/policy";

/**
 * Which Auth accounts a scope's closure (a tenant's) deletes, pure.
 *
 * A scope's users are the uids of its uid-keyed documents: the user data map's `doc` entries ending in
 * `{uid}` (a profile under the scope's record, a user directory entry), among the paths the closure's manifest
 * names (deleted or kept). Membership of a scope is a profile there: the user data map's `doc` entries under
 * the scope's record (the registry's `subjects.scope.record`) ending in `{uid}`. A user with a profile in
 * another scope keeps the account; the last of a user's scopes to be closed takes it.
 */

/** The user data map's uid-keyed document patterns (a profile, a directory entry). */
export function uidKeyedPatterns(policy: PolicyIndex): string[] {
  return policy
    .dataMap("user")
    .filter((e) => e.kind === "doc" && e.path?.endsWith("/{uid}"))
    .map((e) => e.path!);
}

/** The patterns that make a uid a member of a scope: uid-keyed documents inside the scope's tree (none without a scope kind). */
export function membershipPatterns(policy: PolicyIndex): string[] {
  const record = policy.scope?.record;
  return record ? uidKeyedPatterns(policy).filter((p) => p.startsWith(`${record}/`)) : [];
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

/** A membership found for a uid: the tenant and the path that proves it. */
export interface Membership {
  uid: string;
  tenantId: string;
  path: string;
}

/** The membership a path proves (a profile in some scope), if it matches one of `patterns`. */
export function membershipOf(path: string, patterns: readonly string[], scopeKey: string): Membership | null {
  for (const p of patterns) {
    const vars = matchPattern(p, path);
    const scope = vars?.[scopeKey];
    if (vars?.uid && scope) return { uid: vars.uid, tenantId: scope, path };
  }
  return null;
}

/**
 * Splits a closing tenant's users into the accounts to delete and the accounts kept because the user belongs
 * to another tenant (with the memberships that say so). Sorted, so the evidence is deterministic.
 */
export function accountsToDelete(
  uids: Iterable<string>,
  memberships: readonly Membership[],
  closingTenantId: string,
): { delete: string[]; keep: { uid: string; paths: string[] }[] } {
  const elsewhere = new Map<string, string[]>();
  for (const m of memberships) {
    if (m.tenantId === closingTenantId) continue;
    elsewhere.set(m.uid, [...(elsewhere.get(m.uid) ?? []), m.path].sort());
  }
  const all = [...new Set(uids)].sort();
  return {
    delete: all.filter((u) => !elsewhere.has(u)),
    keep: all.filter((u) => elsewhere.has(u)).map((uid) => ({ uid, paths: elsewhere.get(uid)! })),
  };
}
