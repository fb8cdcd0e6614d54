import { deleteAuthAccount } from "../../platform/auth-accounts";
import { FieldValue, type DocumentData, type QueryDocumentSnapshot, type Timestamp, type Transaction } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import type { Actor, EvidenceBody } from "../../evidence/rules";
import { PRIMARY_CELL } from "../../kernel/policy";
import { cellsOfRecord, requestCells } from "../../requests/index";
import { GROUP_MAX_SCOPES, groupAccountDue, type AccountFacts } from "../../requests/rules/group";
import { parseRequestState, type RequestState } from "../../requests/rules/requests";
import { COLLECTIONS, db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { checkpointFrom, checkpointRef, requestRef, type UnitCheckpoint } from "../store";

/**
 * The Auth account of a user erased by a request group (requests/rules/group.ts#groupAccountDue): deleted once, when
 * every member is PURGED in the primary and every member's other governed databases are done
 * (docs/decisions/0036-several-databases.md), by whichever decider finds it so first:
 * - the finalize transaction of the member whose round ends PURGED (`groupTakesAccountInTx`), which records the
 *   intent on its own request in the same commit that makes the request PURGED;
 * - or, when a member's cell in another database finishes last, the request of record's account step
 *   (cells/accounts.ts#finishRecordAccounts, run by the cells' tasks and the nightly reconciliation: `finishGroupAccount`),
 *   which records the intent on the group's lead.
 * Each decides in a transaction of the primary that reads every member's request (their `authDeletion` included), so
 * Firestore serialises any two of them and exactly one records the intent (AUTH_ACCOUNT_DELETE_INTENT: the Auth-delete
 * backstop and every other member then see the account taken). The members' cells are read outside that
 * transaction: a cell read as not done only delays the account (the nightly reconciliation asks again: a member across
 * databases stays `cellsOutstanding` until the group's account is DONE); one read as done is done for good. The
 * account is deleted after the commit and the outcome recorded once (AUTH_ACCOUNT_DELETED, `deleted` or
 * `already-absent`). A crash between the two leaves the intent on a PURGED request, which the nightly job
 * (`resumeGroupAccountDeletions`) or the next account step finishes. A request on its own keeps decision 0003's rule
 * (finalize.ts#deleteAuthAccount).
 */

const requests = () => db().collection(COLLECTIONS.deletionRequests);

const authStateOf = (v: unknown): "INTENT" | "DONE" | null => (v === "INTENT" || v === "DONE" ? v : null);

/**
 * A member's cell requests' states in its other databases (none for a member of one database): point reads in each
 * cell, outside any transaction of the primary. A cell read as not done only delays the account; one read as done
 * is done for good (PURGED is terminal; a RETAINED_UNDER_HOLD cell that resumes after a release only erases more).
 */
async function memberCells(requestId: string, data: DocumentData): Promise<(RequestState | null)[]> {
  if (cellsOfRecord(data).length === 0) return [];
  return (await requestCells(requestId, data)).filter((c) => c.cell !== PRIMARY_CELL).map((c) => c.state);
}

/**
 * Every member's facts for `groupAccountDue`, read in `tx` (the members by one query, bounded by the group limit),
 * before its writes; `self` is the member whose round ends now, with its end state. The cells are read only when the
 * primary's part already says yes.
 */
async function groupFactsInTx(tx: Transaction, groupId: string, self: { requestId: string; end: RequestState } | null): Promise<{ facts: AccountFacts[]; docs: QueryDocumentSnapshot[] }> {
  const snap = await tx.get(requests().where("groupId", "==", groupId).limit(GROUP_MAX_SCOPES));
  const facts: AccountFacts[] = snap.docs.map((d) => ({
    requestId: d.id,
    state: self !== null && d.id === self.requestId ? self.end : parseRequestState(d.get("state")),
    authDeletion: authStateOf(d.get("authDeletion.state")),
    cells: [],
  }));
  if (!groupAccountDue(facts)) return { facts, docs: snap.docs };
  const cells = await Promise.all(snap.docs.map((d) => memberCells(d.id, d.data())));
  return { facts: facts.map((f, i) => ({ ...f, cells: cells[i]! })), docs: snap.docs };
}

/**
 * Whether this member's round, ending `end`, takes the group's account: read in the finalize transaction. Of two
 * members finishing together, Firestore serialises their transactions (each reads the other's request), so exactly
 * one sees the other PURGED; a member whose other databases are not all done leaves it to the cells' account step.
 */
export async function groupTakesAccountInTx(tx: Transaction, groupId: string, requestId: string, end: RequestState): Promise<{ take: boolean; members: number }> {
  const { facts } = await groupFactsInTx(tx, groupId, { requestId, end });
  return { take: groupAccountDue(facts), members: facts.length };
}

/** What the finalize transaction writes on the member that takes the account: the intent, and its timeline entry. */
export function groupAccountIntent(actor: Actor, groupId: string, at: Timestamp): { fields: Record<string, unknown>; timeline: Record<string, unknown> } {
  return {
    fields: { authDeletion: { state: "INTENT", by: actor.id, intentAt: at, groupId } },
    timeline: { at, event: "AUTH_ACCOUNT_DELETE_INTENT", detail: `request group ${groupId}` },
  };
}

type EvidenceCp = Pick<UnitCheckpoint, "unitKey" | "round" | "requestId" | "manifestHash" | "policyVersion">;

function accountEvidence(cp: EvidenceCp, actor: Actor, nowMs: number, action: string, groupId: string, members: number, outcome?: "deleted" | "already-absent"): EvidenceBody {
  return {
    action,
    actor,
    decision: { reason: "AUTHORIZED_BY_POLICY", rule: "REQUEST_GROUP_ALL_PURGED", ...(outcome ? { outcome } : {}) },
    policyVersion: cp.policyVersion,
    atMs: nowMs,
    requestId: cp.requestId,
    manifestHash: cp.manifestHash,
    counts: { accounts: 1, ...(members > 0 ? { groupMembers: members } : {}) },
    detail: { unitKey: cp.unitKey, round: cp.round, groupId },
  };
}

/** The intent's evidence, appended in the finalize transaction. */
export const groupAccountIntentEvidence = (cp: EvidenceCp, actor: Actor, nowMs: number, groupId: string, members: number): EvidenceBody =>
  accountEvidence(cp, actor, nowMs, "AUTH_ACCOUNT_DELETE_INTENT", groupId, members);

/**
 * Deletes the account a member recorded the intent for, then records the outcome once (a request whose intent is
 * already DONE is left as it is). Idempotent: deleting an absent account is `already-absent`.
 */
export async function finishGroupAccountDeletion(cp: EvidenceCp, uid: string, actor: Actor, nowMs: number): Promise<"deleted" | "already-absent" | null> {
  const requestId = cp.requestId;
  if (!requestId) return null;
  const outcome = await deleteAuthAccount(uid);
  const recorded = await db().runTransaction(async (tx) => {
    const req = await tx.get(requestRef(requestId));
    if (authStateOf(req.get("authDeletion.state")) !== "INTENT") return false;
    const groupId = String(req.get("authDeletion.groupId") ?? req.get("groupId") ?? "");
    const evidence = await openEvidence(tx, cp.unitKey);
    const at = toTimestamp(nowMs);
    tx.update(requestRef(requestId), {
      "authDeletion.state": "DONE",
      "authDeletion.doneAt": at,
      "authDeletion.outcome": outcome,
      timeline: FieldValue.arrayUnion({ at, event: "AUTH_ACCOUNT_DELETED", detail: outcome }),
    });
    evidence.append(accountEvidence(cp, actor, nowMs, "AUTH_ACCOUNT_DELETED", groupId, 0, outcome));
    return true;
  }, EVIDENCE_TX);
  if (!recorded) return null;
  log.info("purge.auth.deleted", { requestId, outcome });
  return outcome;
}

/** A member's checkpoint as its evidence names it (a request purged in an earlier version may have none). */
async function evidenceCpOf(requestId: string): Promise<EvidenceCp> {
  const cp = checkpointFrom((await checkpointRef(requestId).get()).data());
  return cp ?? { unitKey: requestId, round: 0, requestId, manifestHash: "", policyVersion: "" };
}

/**
 * The group's account step for the members across several databases (called by cells/accounts.ts for a member of a
 * group, from the cells' tasks and the nightly reconciliation): once `groupAccountDue`, records the intent on the
 * group's lead in a transaction of the primary that reads every member, deletes the account, and records the
 * outcome. An intent already recorded (by a finalize, by another finisher, or left by a crash) is finished instead;
 * an outcome already recorded is left as it is. Returns DONE once the account is gone and recorded, else WAITING.
 */
export async function finishGroupAccount(groupId: string, actor: Actor, nowMs: number): Promise<"WAITING" | "DONE"> {
  const leadCp = await evidenceCpOf(groupId);
  const taker = await db().runTransaction(async (tx) => {
    const { facts, docs } = await groupFactsInTx(tx, groupId, null);
    const taken = facts.find((f) => f.authDeletion !== null);
    if (taken) return { requestId: taken.requestId, state: taken.authDeletion!, uid: String(docs.find((d) => d.id === taken.requestId)!.get("uid")) };
    if (!groupAccountDue(facts)) return null;
    const lead = docs.find((d) => d.id === groupId) ?? docs[0]!;
    const evidence = await openEvidence(tx, leadCp.unitKey);
    const intent = groupAccountIntent(actor, groupId, toTimestamp(nowMs));
    tx.update(lead.ref, { ...intent.fields, timeline: FieldValue.arrayUnion(intent.timeline) });
    evidence.append(groupAccountIntentEvidence(leadCp, actor, nowMs, groupId, facts.length));
    return { requestId: lead.id, state: "INTENT" as const, uid: String(lead.get("uid")) };
  }, EVIDENCE_TX);
  if (taker === null) return "WAITING";
  if (taker.state === "INTENT") {
    const cp = taker.requestId === groupId ? leadCp : await evidenceCpOf(taker.requestId);
    await finishGroupAccountDeletion(cp, taker.uid, actor, nowMs);
  }
  return "DONE";
}

/**
 * Finishes every group account deletion a crash left between its intent and its outcome: a PURGED member whose
 * `authDeletion` says INTENT (a request on its own records both inside its live lease, and finishes on its own).
 * Run by the nightly job, before it leases anything.
 */
export async function resumeGroupAccountDeletions(actor: Actor, nowMs: number): Promise<string[]> {
  const snap = await requests().where("authDeletion.state", "==", "INTENT").select("uid", "state", "groupId").get();
  const done: string[] = [];
  for (const d of snap.docs) {
    if (typeof d.get("groupId") !== "string" || d.get("state") !== "PURGED") continue;
    if ((await finishGroupAccountDeletion(await evidenceCpOf(d.id), String(d.get("uid")), actor, nowMs)) !== null) done.push(d.id);
  }
  return done;
}
