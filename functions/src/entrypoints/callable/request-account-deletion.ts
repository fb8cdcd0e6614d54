import { z } from "zod";
import { permissionDenied } from "../../domain/errors";
import { openDeletionRequest } from "../../infra/requests";
import { actorOf, callable, inputs, type Caller } from "./shared";

export const RequestAccountDeletionInput = z.object({ reason: inputs.text.optional() }).strict();

/** The signed-in user asks for their own account to be erased. Idempotent while a request is open. */
export async function requestAccountDeletionHandler(input: z.infer<typeof RequestAccountDeletionInput>, caller: Caller) {
  if (!caller.tenantId) throw permissionDenied("NO_TENANT_CLAIM", "Only an app user with a tenant can request account deletion.");
  const { request } = await openDeletionRequest({
    uid: caller.uid,
    tenantId: caller.tenantId,
    source: "user",
    reason: input.reason,
    actor: { ...actorOf(caller), type: "user" },
    nowMs: Date.now(),
  });
  return { requestId: request.requestId, state: request.state, graceEndsAt: new Date(request.graceEndsAtMs).toISOString() };
}

export const requestAccountDeletion = callable("requestAccountDeletion", RequestAccountDeletionInput, requestAccountDeletionHandler);
