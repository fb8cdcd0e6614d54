import type { z } from "zod";
import { CancelTenantDeletionInput } from "../../contract/requests";
import { notFound } from "../../kernel/errors";
import { cancelDeletionRequest, readRequest } from "../../requests/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { CancelTenantDeletionInput };

/**
 * A retention-admin (any of them: a cancel destroys nothing) cancels a tenant's closure: before its approval
 * (withdrawn at once), or within its grace period, when everything the closure soft-deleted is restored and the
 * closure leaves the tenant's document before it says CANCELLED. After the grace: GRACE_EXPIRED; once the purge
 * has taken it: ALREADY_PROCESSING.
 */
export async function cancelTenantDeletionHandler(input: z.infer<typeof CancelTenantDeletionInput>, caller: Caller) {
  requireRole(caller, "retention-admin");
  const request = await readRequest(input.requestId);
  if (request.subject.type !== "tenant") throw notFound("REQUEST_NOT_FOUND", "No such tenant closure.");
  await cancelDeletionRequest(input.requestId, { uid: caller.uid, retentionAdmin: true }, actorOf(caller), Date.now(), { reason: input.reason });
  return { requestId: input.requestId, state: "CANCELLED" as const };
}

/** The restore pages through the tenant's documents (200 per transaction): it gets the scheduled jobs' timeout. */
export const cancelTenantDeletion = callable("cancelTenantDeletion", CancelTenantDeletionInput, cancelTenantDeletionHandler, { timeoutSeconds: 540, memory: "512MiB" });
