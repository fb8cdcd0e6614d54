import { getAuth } from "firebase-admin/auth";
import { FieldValue } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { segments } from "../../kernel/paths";
import { adminApp, db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { accountsToDelete, membershipOf, membershipPatterns, uidKeyedPatterns, uidOfPath, type Membership } from "../rules/accounts";
import { checkpointFrom, checkpointRef, requestRef, type UnitCheckpoint } from "../store";
import { fenceStep } from "./step";
import { roundBatches, roundRetained } from "./verify";
import { purgeEvidence, type StepEnv } from "./env";

/** Firestore's `in` takes at most 30 values; Auth's getUsers at most 100 identifiers, deleteUsers 1,000 uids. */
const IN_LIMIT = 30;
const GET_USERS_LIMIT = 100;
/** Paths named in one evidence entry. */
const MAX_EVIDENCE_PATHS = 100;

/** The uids of the tenant's uid-keyed documents among the round's manifest paths (deleted and kept). */
async function tenantUids(cp: UnitCheckpoint, tenantId: string): Promise<Set<string>> {
  const pol = policy();
  const patterns = uidKeyedPatterns(pol);
  const key = pol.scope?.key ?? "";
  const uids = new Set<string>();
  const offer = (path: string) => {
    const uid = uidOfPath(path, patterns, tenantId, key);
    if (uid) uids.add(uid);
  };
  for await (const b of roundBatches(cp)) for (const item of b.items) offer(item.path);
  for await (const r of roundRetained(cp)) offer(r.path);
  return uids;
}

/** Profiles of these uids in any tenant (one collection-group query per membership collection and 30 uids). */
async function membershipsOf(uids: readonly string[]): Promise<Membership[]> {
  const pol = policy();
  const patterns = membershipPatterns(pol);
  const key = pol.scope?.key ?? "";
  const found: Membership[] = [];
  for (const collectionId of new Set(patterns.map((p) => segments(p).slice(-2)[0]!))) {
    for (let i = 0; i < uids.length; i += IN_LIMIT) {
      const snap = await db().collectionGroup(collectionId).where("uid", "in", uids.slice(i, i + IN_LIMIT)).select().get();
      for (const d of snap.docs) {
        const m = membershipOf(d.ref.path, patterns, key);
        if (m) found.push(m);
      }
    }
  }
  return found;
}

/** Which accounts a tenant's closure deletes and which it keeps, from its round's manifest (purge/rules/accounts.ts). */
async function closureAccounts(cp: UnitCheckpoint & { subject: { type: "tenant"; tenantId: string } }) {
  const tenantId = cp.subject.tenantId;
  const uids = [...(await tenantUids(cp, tenantId))].sort();
  return accountsToDelete(uids, await membershipsOf(uids), tenantId);
}

/**
 * The accounts a scope's closure across several databases deletes, decided as its finalize would (its uid-keyed
 * documents among its last round's manifest, less those of users with a profile in another scope), from the
 * primary's last round, for the request of record's account step (cells/accounts.ts). Null: no finished round.
 */
export async function closureAccountsOf(requestId: string): Promise<{ delete: string[]; keep: { uid: string; paths: string[] }[] } | null> {
  const cp = checkpointFrom((await checkpointRef(requestId).get()).data());
  if (!cp || cp.phase !== "DONE" || cp.subject?.type !== "tenant") return null;
  return closureAccounts({ ...cp, subject: cp.subject });
}

/**
 * A tenant's closure deletes its users' Auth accounts once everything that may be erased is erased (PURGED, or
 * RETAINED_UNDER_HOLD, as for a user: decision 0003), except the accounts of users who belong to another tenant
 * (purge/rules/accounts.ts). Recorded like a user's account deletion, each record fenced by the lease: the
 * intent (AUTH_ACCOUNTS_DELETE_INTENT, on the request first, so the Auth-delete backstop sees the closure
 * handling its users), the deletes, then the outcome (AUTH_ACCOUNTS_DELETED: counts, and the profiles in other
 * tenants that kept accounts). Membership is judged after this tenant's own profiles are gone, so of two
 * tenants closing together the later one finds the other's profile gone too and takes the account. A crash
 * between intent and outcome is resumed by the next attempt: deleting an absent account is a no-op.
 */
export async function deleteTenantAccounts(cp: UnitCheckpoint, step: number, env: StepEnv): Promise<void> {
  if (cp.kind !== "request" || !cp.requestId || cp.subject?.type !== "tenant") return;
  const requestId = cp.requestId;
  const decision = await closureAccounts({ ...cp, subject: cp.subject });
  const record = async (phase: "INTENT" | "DONE", counts: Record<string, number>, paths: string[] = []): Promise<boolean> =>
    db().runTransaction(async (tx) => {
      const now = await fenceStep(tx, cp, env, step);
      if (!now) return false;
      const req = await tx.get(requestRef(requestId));
      const state = req.get("authDeletion.state") as unknown;
      if (state === "DONE" || (phase === "INTENT" && state === "INTENT")) return phase === "INTENT";
      const evidence = await openEvidence(tx, cp.unitKey);
      const at = toTimestamp(env.nowMs);
      tx.update(requestRef(requestId), {
        authDeletion: { state: phase, by: env.actor.id, counts, ...(phase === "INTENT" ? { intentAt: at } : { doneAt: at }) },
        timeline: FieldValue.arrayUnion({ at, event: phase === "INTENT" ? "AUTH_ACCOUNTS_DELETE_INTENT" : "AUTH_ACCOUNTS_DELETED", detail: Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") }),
      });
      evidence.append(
        purgeEvidence(env, cp, {
          action: phase === "INTENT" ? "AUTH_ACCOUNTS_DELETE_INTENT" : "AUTH_ACCOUNTS_DELETED",
          decision: { reason: "AUTHORIZED_BY_POLICY", ...(phase === "DONE" ? { kept: "MEMBER_OF_ANOTHER_TENANT" } : {}) },
          counts,
          ...(paths.length > 0 ? { paths: paths.slice(0, MAX_EVIDENCE_PATHS) } : {}),
        }),
      );
      return true;
    }, EVIDENCE_TX);
  if (!(await record("INTENT", { accounts: decision.delete.length, keptOtherTenant: decision.keep.length }))) return;
  const auth = getAuth(adminApp());
  let deleted = 0;
  for (let i = 0; i < decision.delete.length; i += GET_USERS_LIMIT) {
    const chunk = decision.delete.slice(i, i + GET_USERS_LIMIT);
    const existing = (await auth.getUsers(chunk.map((uid) => ({ uid })))).users.map((u) => u.uid);
    if (existing.length === 0) continue;
    // An absent uid counts as deleted: the call is idempotent, so a retry after a crash is safe.
    const r = await auth.deleteUsers(existing);
    if (r.failureCount > 0) throw new Error(`AUTH_DELETE_FAILED: ${r.failureCount} of ${existing.length} accounts of tenant closure ${requestId} were not deleted`);
    deleted += existing.length;
  }
  const counts = { deleted, alreadyAbsent: decision.delete.length - deleted, keptOtherTenant: decision.keep.length };
  await record("DONE", counts, decision.keep.flatMap((k) => k.paths));
  log.info("purge.auth.tenant_accounts", { requestId, ...counts });
}
