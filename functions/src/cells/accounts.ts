import { getAuth } from "firebase-admin/auth";
import { FieldValue } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { PRIMARY_CELL } from "../kernel/policy";
import { adminApp, db, inCell } from "../platform/firestore";
import { toTimestamp } from "../platform/governed-doc";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { clearScopeUsers, closureAccountsOf, finishGroupAccount, requestRef } from "../purge/index";
import { accountsReady, cellsOfRecord, readRequest, settleIfDone } from "../requests/index";

/** Auth's getUsers takes at most 100 identifiers. */
const GET_USERS_LIMIT = 100;
/** Paths named in one evidence entry. */
const MAX_EVIDENCE_PATHS = 100;

export type AccountsOutcome = "NOT_ACROSS_CELLS" | "DONE" | "WAITING_FOR_CELLS";

/**
 * The Auth accounts of a request across several governed databases (docs/decisions/0036-several-databases.md):
 * deleted once, by the request of record in the primary, when every cell has erased all it may (each PURGED or
 * RETAINED_UNDER_HOLD: decision 0003 across cells). No cell's finalize deletes them (purge/runner/finalize.ts).
 * Recorded like finalize's: the intent on the request of record first (AUTH_ACCOUNT_DELETE_INTENT, or
 * AUTH_ACCOUNTS_DELETE_INTENT for a scope's closure: the Auth-delete backstop then sees the request handled), the
 * deletes, then the outcome; each record is a transaction of the primary that reads the request's `authDeletion`, so
 * two finishers at once (a cell's task and the nightly reconciliation) record each once, and a crash between intent
 * and outcome is resumed by the next call (deleting an absent account is a no-op). The other cells are read outside
 * that transaction: a cell read as not done only delays this; one read as done is done for good. A member of a request
 * group leaves the account to its group (purge/runner/group-account.ts#finishGroupAccount): it goes once, when every
 * member is PURGED in the primary and every member's every database is done.
 */
export async function finishRecordAccounts(requestId: string, actor: Actor, nowMs: number): Promise<AccountsOutcome> {
  return inCell(PRIMARY_CELL, async () => {
    const snap = await requestRef(requestId).get();
    if (!snap.exists || cellsOfRecord(snap.data()).length === 0) return "NOT_ACROSS_CELLS";
    // A member of a request group: the group's account goes once, when every member's every database is done.
    const groupId = snap.get("groupId") as unknown;
    if (typeof groupId === "string" && groupId !== "") {
      if ((await finishGroupAccount(groupId, actor, nowMs)) === "WAITING") return "WAITING_FOR_CELLS";
      await settleIfDone(requestId);
      return "DONE";
    }
    if (snap.get("authDeletion.state") === "DONE") {
      await settleIfDone(requestId);
      return "DONE";
    }
    const { ready, cells } = await accountsReady(requestId, snap.data()!);
    if (!ready) return "WAITING_FOR_CELLS";
    const request = await readRequest(requestId);
    const closure = request.subject.type === "tenant" ? await closureAccountsOf(requestId) : null;
    if (request.subject.type === "tenant" && closure === null) return "WAITING_FOR_CELLS";
    const uids = request.subject.type === "user" ? [request.subject.uid] : closure!.delete;
    const tenant = request.subject.type === "tenant";
    const cellStates = cells.map((c) => `${c.cell}:${c.state ?? "-"}`).join(",");
    const record = async (phase: "INTENT" | "DONE", counts: Record<string, number>, paths: string[] = []): Promise<boolean> =>
      db().runTransaction(async (tx) => {
        const req = await tx.get(requestRef(requestId));
        const state = req.get("authDeletion.state") as unknown;
        if (state === "DONE" || (phase === "INTENT" && state === "INTENT")) return phase === "INTENT";
        const evidence = await openEvidence(tx, requestId);
        const at = toTimestamp(nowMs);
        const event = tenant ? (phase === "INTENT" ? "AUTH_ACCOUNTS_DELETE_INTENT" : "AUTH_ACCOUNTS_DELETED") : phase === "INTENT" ? "AUTH_ACCOUNT_DELETE_INTENT" : "AUTH_ACCOUNT_DELETED";
        tx.update(requestRef(requestId), {
          authDeletion: { state: phase, by: actor.id, counts, ...(phase === "INTENT" ? { intentAt: at } : { doneAt: at }) },
          timeline: FieldValue.arrayUnion({ at, event, detail: `every database done (${cellStates})` }),
        });
        evidence.append({
          action: event,
          actor,
          decision: { reason: "AUTHORIZED_BY_POLICY", cellsDone: cellStates, ...(tenant && phase === "DONE" ? { kept: "MEMBER_OF_ANOTHER_TENANT" } : {}) },
          policyVersion: policy().version,
          atMs: nowMs,
          requestId,
          counts,
          ...(paths.length > 0 ? { paths: paths.slice(0, MAX_EVIDENCE_PATHS) } : {}),
        });
        return true;
      }, EVIDENCE_TX);
    if (!(await record("INTENT", tenant ? { accounts: uids.length, keptOtherTenant: closure!.keep.length } : { accounts: 1 }))) return "DONE";
    const auth = getAuth(adminApp());
    let deleted = 0;
    for (let i = 0; i < uids.length; i += GET_USERS_LIMIT) {
      const chunk = uids.slice(i, i + GET_USERS_LIMIT);
      const existing = (await auth.getUsers(chunk.map((uid) => ({ uid })))).users.map((u) => u.uid);
      if (existing.length === 0) continue;
      const r = await auth.deleteUsers(existing);
      if (r.failureCount > 0) throw new Error(`AUTH_DELETE_FAILED: ${r.failureCount} of ${existing.length} accounts of request ${requestId} were not deleted`);
      deleted += existing.length;
    }
    const counts: Record<string, number> = tenant ? { deleted, alreadyAbsent: uids.length - deleted, keptOtherTenant: closure!.keep.length } : { accounts: 1, [deleted > 0 ? "deleted" : "alreadyAbsent"]: 1 };
    await record("DONE", counts, tenant ? closure!.keep.flatMap((k) => k.paths) : []);
    // The closure's roster of its scope's users served this judgement; the request keeps no list of people.
    if (tenant) await clearScopeUsers(requestId);
    log.info("deletion.cells.accounts", { requestId, deleted, cells: cellStates });
    await settleIfDone(requestId);
    return "DONE";
  });
}
