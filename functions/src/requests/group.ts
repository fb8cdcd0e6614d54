import type { DocumentSnapshot } from "firebase-admin/firestore";
import { COLLECTIONS, db } from "../platform/firestore";
import { goneByFacts, staffFacts } from "./queries";
import { GROUP_MAX_SCOPES, groupFacts, type GroupFacts, type GroupMember } from "./rules/group";
import type { DeletionRequest } from "./rules/requests";
import { requestFromFirestore, sortMembers } from "./service";

/** A member of a request group as read: the request and its stored document. */
export interface ReadMember {
  request: DeletionRequest;
  snap: DocumentSnapshot;
}

/**
 * The members of a request group, lead first (one query on `groupId`, bounded by the group limit). A request on its
 * own is its own only member.
 */
export async function readGroup(request: DeletionRequest, snap: DocumentSnapshot): Promise<ReadMember[]> {
  if (request.groupId === undefined) return [{ request, snap }];
  const docs = (await db().collection(COLLECTIONS.deletionRequests).where("groupId", "==", request.groupId).limit(GROUP_MAX_SCOPES).get()).docs;
  const byId = new Map(docs.map((d) => [d.id, d]));
  return sortMembers(docs.map(requestFromFirestore)).map((r) => ({ request: r, snap: byId.get(r.requestId)! }));
}

/** What the group's rules read of a member (requests/rules/group.ts). */
export function memberFacts(m: ReadMember): GroupMember {
  const goneBy = goneByFacts(m.snap);
  const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));
  return {
    requestId: m.request.requestId,
    tenantId: m.request.subject.tenantId,
    state: m.request.state,
    graceEndsAtMs: m.request.graceEndsAtMs,
    dueAtMs: m.request.dueAtMs,
    fullyGoneByMs: ms(goneBy.fullyGoneBy),
    goneByUnknown: goneBy.fullyGoneByUnknown,
    erasureCompleteAtMs: ms(goneBy.erasureCompleteAt),
  };
}

/** The group as outputs name it: its id and each member's request, scope and own state, lead first. */
export function groupView(members: readonly ReadMember[] | readonly DeletionRequest[]) {
  const requests = members.map((m) => ("request" in m ? m.request : m));
  return {
    groupId: requests[0]?.groupId ?? requests[0]?.requestId ?? "",
    requests: requests.map((r) => ({ requestId: r.requestId, scope: r.subject.tenantId, state: r.state, lead: r.requestId === r.groupId })),
  };
}

/** A group's derived facts (state, dates, "fully gone by") from its members as read. */
export const factsOfGroup = (members: readonly ReadMember[]): GroupFacts => groupFacts(members.map(memberFacts));

/** What staff see of a group besides its timeline: the lead's subject and source, every member's block and hold. */
export function groupStaffFacts(members: readonly ReadMember[]) {
  const facts = members.map((m) => staffFacts(m.snap));
  const lead = facts[0]!;
  const held = facts.map((f) => f.retainedUnderHold).filter((h): h is NonNullable<typeof h> => h !== null);
  const holds = new Map(held.flatMap((h) => h.holds).map((h) => [`${h.holdId ?? ""}:${h.reasonCode}`, h]));
  return {
    ...lead,
    blockedReason: facts.map((f) => f.blockedReason).find((r) => r !== null) ?? null,
    retainedUnderHold: held.length > 0 ? { count: held.reduce((n, h) => n + h.count, 0), holds: [...holds.values()] } : null,
  };
}
