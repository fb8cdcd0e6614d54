import type { z } from "zod";
import { RequestAccountDeletionInput } from "../../contract/requests";
import { permissionDenied } from "../../kernel/errors";
import { openDeletionRequest, scopeOfRequester, writeStatusSummary } from "../../requests/index";
import { actorOf, callable, type Caller } from "./shared";

export { RequestAccountDeletionInput };

/** The signed-in user asks for their own account to be erased. Idempotent while a request is open. */
export async function requestAccountDeletionHandler(input: z.infer<typeof RequestAccountDeletionInput>, caller: Caller) {
  const tenantId = await scopeOfRequester(caller.uid, caller.tenantId);
  if (tenantId === null) throw permissionDenied("NO_TENANT_CLAIM", "Only an app user with a tenant can request account deletion.");
  const nowMs = Date.now();
  const { request, created } = await openDeletionRequest({
    subject: { type: "user", uid: caller.uid, tenantId },
    source: "user",
    reason: input.reason,
    actor: { ...actorOf(caller), type: "user" },
    nowMs,
  });
  // The request's status summary starts with it, so the subject's status calls plan nothing for a while.
  if (created) await writeStatusSummary(request, nowMs);
  // Only a tenant's closure waits for an approval before its grace starts; a user's erasure has one from the start.
  if (request.graceEndsAtMs === null) throw new Error(`request ${request.requestId} of a user has no grace period`);
  return { requestId: request.requestId, state: request.state, graceEndsAt: new Date(request.graceEndsAtMs).toISOString() };
}

/** User-facing: App Check is required where enforcement is on. */
export const requestAccountDeletion = callable("requestAccountDeletion", RequestAccountDeletionInput, requestAccountDeletionHandler, { appCheck: true });
