import { matchPattern } from "../../kernel/paths";
import type { PolicyIndex } from "../../kernel/policy";

/**
 * Which Auth accounts a tenant's closure deletes, pure.
 *
 * A tenant's users are the uids of its uid-keyed documents: the user data map's `doc` entries ending in
 * `{uid}` (a profile `tenants/{tenantId}/users/{uid}`, a directory entry `userDirectory/{uid}`), among the paths
 * the closure's manifest names (deleted or kept). Membership of a tenant is a profile there: the user data
 * map's `doc` entries under `tenants/{tenantId}/` ending in `{uid}`, which carry the uid as a field. A user with
 * a profile in another tenant keeps the account; the last of a user's tenants to be closed takes it.
 */

/** The user data map's uid-keyed document patterns (e.g. `tenants/{tenantId}/users/{uid}`, `userDirectory/{uid}`). */
export function uidKeyedPatterns(policy: PolicyIndex): string[] {
  return policy
    .dataMap("user")
    .filter((e) => e.kind === "doc" && e.path?.endsWith("/{uid}"))
    .map((e) => e.path!);
}

/** The patterns that make a uid a member of a tenant: uid-keyed documents inside the tenant's tree. */
export function membershipPatterns(policy: PolicyIndex): string[] {
  return uidKeyedPatterns(policy).filter((p) => p.startsWith("tenants/{tenantId}/"));
}

/** The uid a path names for `tenantId`, if it is one of `patterns` (a pattern naming another tenant does not count). */
export function uidOfPath(path: string, patterns: readonly string[], tenantId: string): string | null {
  for (const p of patterns) {
    const vars = matchPattern(p, path);
    if (!vars?.uid) continue;
    if (vars.tenantId !== undefined && vars.tenantId !== tenantId) continue;
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

/** The membership a path proves (a profile in some tenant), if it matches one of `patterns`. */
export function membershipOf(path: string, patterns: readonly string[]): Membership | null {
  for (const p of patterns) {
    const vars = matchPattern(p, path);
    if (vars?.uid && vars.tenantId) return { uid: vars.uid, tenantId: vars.tenantId, path };
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
