import type { z } from "zod";
import { RequestAccountDeletionInput } from "../../contract/requests";
import { permissionDenied } from "../../kernel/errors";
import { groupView, openUserErasure, scopesOfRequester, writeStatusSummary } from "../../requests/index";
import { groupState } from "../../requests/rules/group";
import { actorOf, callable, type Caller } from "./shared";

export { RequestAccountDeletionInput };

/**
 * The signed-in user asks for their own account to be erased. Idempotent while a request is open. A user the
 * registry finds in several scopes opens one request per scope together, a request group: the answer names the
 * group by its id (its lead's request id), which getDeletionStatus and cancelAccountDeletion take, and lists each
 * member in `group`.
 */
export async function requestAccountDeletionHandler(input: z.infer<typeof RequestAccountDeletionInput>, caller: Caller) {
  const scopes = await scopesOfRequester(caller.uid, caller.tenantId);
  if (scopes.length === 0) throw permissionDenied("NO_TENANT_CLAIM", "Only an app user with a tenant can request account deletion.");
  const nowMs = Date.now();
  const { request, members, created } = await openUserErasure({ uid: caller.uid, scopes, source: "user", reason: input.reason, actor: { ...actorOf(caller), type: "user" }, nowMs });
  // The request's status summary starts with it, so the subject's status calls plan nothing for a while.
  if (created) for (const m of members) await writeStatusSummary(m, nowMs);
  // Only a tenant's closure waits for an approval before its grace starts; a user's erasure has one from the start.
  if (request.graceEndsAtMs === null) throw new Error(`request ${request.requestId} of a user has no grace period`);
  const grouped = members.length > 1;
  return {
    requestId: request.requestId,
    state: grouped ? groupState(members.map((m) => m.state)) : request.state,
    graceEndsAt: new Date(request.graceEndsAtMs).toISOString(),
    ...(grouped ? { group: groupView(members) } : {}),
  };
}

/** User-facing: App Check is required where enforcement is on. */
export const requestAccountDeletion = callable("requestAccountDeletion", RequestAccountDeletionInput, requestAccountDeletionHandler, { appCheck: true });
