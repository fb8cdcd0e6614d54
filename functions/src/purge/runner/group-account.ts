import { getAuth } from "firebase-admin/auth";
import { FieldValue, type Timestamp, type Transaction } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import type { Actor, EvidenceBody } from "../../evidence/rules";
import { GROUP_MAX_SCOPES, groupAccountDue } from "../../requests/rules/group";
import { parseRequestState, type RequestState } from "../../requests/rules/requests";
import { adminApp, COLLECTIONS, db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { checkpointFrom, checkpointRef, requestRef, type UnitCheckpoint } from "../store";

/**
 * The Auth account of a user erased by a request group (requests/rules/group.ts): deleted once, by the member whose
 * finalize transaction finds every member PURGED and none that has taken the account (`groupAccountDue`). That
 * transaction records the intent on its own request (AUTH_ACCOUNT_DELETE_INTENT, so the Auth-delete backstop and
 * every other member see the account taken) in the same commit that makes the request PURGED; the account is
 * deleted after the commit and the outcome recorded (AUTH_ACCOUNT_DELETED, `deleted` or `already-absent`). A crash
 * between the two leaves the intent on a PURGED request, which the nightly job finishes
 * (`resumeGroupAccountDeletions`). A request on its own keeps decision 0003's rule (finalize.ts#deleteAuthAccount).
 */

const requests = () => db().collection(COLLECTIONS.deletionRequests);

const authStateOf = (v: unknown): "INTENT" | "DONE" | null => (v === "INTENT" || v === "DONE" ? v : null);

/**
 * Whether this member's round, ending `end`, takes the group's account: read in the finalize transaction (the
 * group's members by one query, bounded by the group limit), before its writes. Of two members finishing together,
 * Firestore serialises their transactions (each reads the other's request), so exactly one sees the other PURGED.
 */
export async function groupTakesAccountInTx(tx: Transaction, groupId: string, requestId: string, end: RequestState): Promise<{ take: boolean; members: number }> {
  const snap = await tx.get(requests().where("groupId", "==", groupId).limit(GROUP_MAX_SCOPES));
  const members = snap.docs.map((d) => ({
    requestId: d.id,
    state: d.id === requestId ? end : parseRequestState(d.get("state")),
    authDeletion: authStateOf(d.get("authDeletion.state")),
  }));
  return { take: groupAccountDue(members), members: members.length };
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
  let outcome: "deleted" | "already-absent" = "deleted";
  try {
    await getAuth(adminApp()).deleteUser(uid);
  } catch (err) {
    if ((err as { code?: string }).code !== "auth/user-not-found") throw err;
    outcome = "already-absent";
  }
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
    const cp = checkpointFrom((await checkpointRef(d.id).get()).data());
    const evidenceCp: EvidenceCp = cp ?? { unitKey: d.id, round: 0, requestId: d.id, manifestHash: "", policyVersion: "" };
    if ((await finishGroupAccountDeletion(evidenceCp, String(d.get("uid")), actor, nowMs)) !== null) done.push(d.id);
  }
  return done;
}
