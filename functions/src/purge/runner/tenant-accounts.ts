import { getAuth } from "firebase-admin/auth";
import { FieldPath, FieldValue } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { CLOSURE_HANDLES_USERS_STATES, type RequestState } from "../../requests/rules/requests";
import { adminApp, db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { accountsToDelete, uidKeyedPatterns, uidOfPath } from "../rules/accounts";
import { scopesOfUsers, storedRequestStates, usersOfScope } from "../../requests/index";
import { checkpointFrom, checkpointRef, requestRef, type BatchDoc, type UnitCheckpoint } from "../store";
import { fenceStep } from "./step";
import { roundBatches, roundRetained } from "./verify";
import { purgeEvidence, type StepEnv } from "./env";

/** Auth's getUsers takes at most 100 identifiers, deleteUsers 1,000 uids. */
const GET_USERS_LIMIT = 100;
/** Paths named in one evidence entry. */
const MAX_EVIDENCE_PATHS = 100;

/** Users recorded per write batch, and read per page. */
const USERS_BATCH = 400;

/** Where a closure records its scope's users before it deletes anything: `deletionRequests/{id}/scopeUsers/{uid}`. */
const scopeUsersOf = (requestId: string) => requestRef(requestId).collection("scopeUsers");

/**
 * Records the users the registry's lookups place in a closing scope (requests/subjects.ts#usersOfScope), before
 * its round deletes anything: the closure deletes the memberships that name them (a member document, a
 * membership record), and its finalize must still know whose accounts to judge. Run when a round is planned
 * (drive.ts#planUnit); each round adds to what earlier rounds recorded (a user who was a member at any time of the
 * closure is judged). One document per user, written in batches; idempotent.
 */
export async function recordScopeUsers(requestId: string, tenantId: string): Promise<number> {
  let batch: string[] = [];
  let recorded = 0;
  const flush = async () => {
    const w = db().batch();
    for (const uid of batch) w.set(scopeUsersOf(requestId).doc(uid), { uid });
    await w.commit();
    recorded += batch.length;
    batch = [];
  };
  const seen = new Set<string>();
  for await (const m of usersOfScope(tenantId)) {
    if (seen.has(m.uid) || !/^[^/]{1,128}$/.test(m.uid) || m.uid === "." || m.uid === "..") continue;
    seen.add(m.uid);
    batch.push(m.uid);
    if (batch.length >= USERS_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  return recorded;
}

/** The users a closure recorded (`recordScopeUsers`), a page at a time. */
async function* recordedScopeUsers(requestId: string): AsyncGenerator<string> {
  let last: string | undefined;
  for (;;) {
    let q = scopeUsersOf(requestId).orderBy(FieldPath.documentId()).select().limit(USERS_BATCH);
    if (last !== undefined) q = q.startAfter(last);
    const snap = await q.get();
    for (const d of snap.docs) yield d.id;
    if (snap.size < USERS_BATCH) return;
    last = snap.docs[snap.docs.length - 1]!.id;
  }
}

/** The uids of a closing scope's uid-keyed documents among the paths offered (purge/rules/accounts.ts#uidOfPath). */
export class ScopeUids {
  readonly uids = new Set<string>();
  private readonly patterns: ReturnType<typeof uidKeyedPatterns>;
  private readonly key: string;

  constructor(private readonly tenantId: string) {
    const pol = policy();
    this.patterns = uidKeyedPatterns(pol);
    this.key = pol.scope?.key ?? "";
  }

  offer(path: string): void {
    const uid = uidOfPath(path, this.patterns, this.tenantId, this.key);
    if (uid) this.uids.add(uid);
  }

  /** Every item of a batch record, deleted or kept. */
  offerBatch(b: BatchDoc): void {
    for (const item of b.items) this.offer(item.path);
  }
}

/**
 * The closing scope's users (purge/rules/accounts.ts): those the registry's lookups placed in it when its rounds
 * were planned (`recordScopeUsers`), and the uids of the uid-keyed documents among the round's manifest paths
 * (deleted and kept). `fromBatches`: those of the round's batch records, when the caller read them already.
 */
async function tenantUids(cp: UnitCheckpoint, tenantId: string, fromBatches?: ScopeUids): Promise<Set<string>> {
  const found = new ScopeUids(tenantId);
  if (fromBatches) for (const uid of fromBatches.uids) found.uids.add(uid);
  else for await (const b of roundBatches(cp)) found.offerBatch(b);
  for await (const r of roundRetained(cp)) found.offer(r.path);
  if (cp.requestId) for await (const uid of recordedScopeUsers(cp.requestId)) found.uids.add(uid);
  return found.uids;
}

/**
 * The scopes among `scopeIds` whose closure the purge has taken (CLOSURE_HANDLES_USERS_STATES): a user's place in
 * one of them is no reason to keep the account (a claim naming a closed tenant stays on the account for ever).
 */
async function closedScopes(scopeIds: readonly string[]): Promise<Set<string>> {
  const states = await storedRequestStates("scope", scopeIds);
  return new Set([...states].filter(([, s]) => s.some((state) => CLOSURE_HANDLES_USERS_STATES.includes(state as RequestState))).map(([id]) => id));
}

/** Which accounts a tenant's closure deletes and which it keeps, from its round's manifest (purge/rules/accounts.ts). */
async function closureAccounts(cp: UnitCheckpoint & { subject: { type: "tenant"; tenantId: string } }, fromBatches?: ScopeUids) {
  const tenantId = cp.subject.tenantId;
  const uids = [...(await tenantUids(cp, tenantId, fromBatches))].sort();
  // Every scope the registry's lookups place each user in (a claim, a directory, memberships): any other keeps the
  // account, unless that scope's own closure has been taken by the purge (it takes its users' accounts itself).
  const memberships = await scopesOfUsers(uids);
  const closed = await closedScopes(memberships.map((m) => m.tenantId).filter((t) => t !== tenantId));
  return accountsToDelete(
    uids,
    memberships.filter((m) => !closed.has(m.tenantId)),
    tenantId,
  );
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
 * through the registry's lookups (purge/rules/accounts.ts). Recorded like a user's account deletion, each record fenced by the lease: the
 * intent (AUTH_ACCOUNTS_DELETE_INTENT, on the request first, so the Auth-delete backstop sees the closure
 * handling its users), the deletes, then the outcome (AUTH_ACCOUNTS_DELETED: counts, and the profiles in other
 * scopes that kept accounts). Membership is judged after this tenant's own profiles are gone, so of two
 * tenants closing together the later one finds the other's profile gone too and takes the account. A crash
 * between intent and outcome is resumed by the next attempt: deleting an absent account is a no-op. `fromBatches`: the
 * uids of the round's batch records, gathered as verification read them.
 */
export async function deleteTenantAccounts(cp: UnitCheckpoint, step: number, env: StepEnv, fromBatches?: ScopeUids): Promise<void> {
  if (cp.kind !== "request" || !cp.requestId || cp.subject?.type !== "tenant") return;
  const requestId = cp.requestId;
  const decision = await closureAccounts({ ...cp, subject: cp.subject }, fromBatches);
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
  // The list of the scope's users served this judgement; the request keeps no roster of people once it is made (a
  // later round, after a hold's release, records the users it finds again).
  await clearScopeUsers(requestId);
  log.info("purge.auth.tenant_accounts", { requestId, ...counts });
}

/** Deletes what `recordScopeUsers` recorded, a page at a time. */
export async function clearScopeUsers(requestId: string): Promise<void> {
  for (;;) {
    const snap = await scopeUsersOf(requestId).select().limit(USERS_BATCH).get();
    if (snap.empty) return;
    const w = db().batch();
    for (const d of snap.docs) w.delete(d.ref);
    await w.commit();
  }
}
