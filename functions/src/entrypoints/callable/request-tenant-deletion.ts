import type { z } from "zod";
import { RequestTenantDeletionInput } from "../../contract/requests";
import { openDeletionRequest, resolveTenantSubject } from "../../requests/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { RequestTenantDeletionInput };

/**
 * A retention-admin asks for a tenant's closure (a scope's: `{ tenantId }` or, in the general form,
 * `{ subject: { type: "scope", id } }`). The request waits for a second staff member's approval
 * (approveTenantDeletion) and hides nothing until then. Idempotent: while a closure of the tenant is open, the
 * same request is returned, whoever asks. NO_SCOPE_KIND in an app whose registry declares no scope kind.
 */
export async function requestTenantDeletionHandler(input: z.infer<typeof RequestTenantDeletionInput>, caller: Caller) {
  requireRole(caller, "retention-admin");
  const subject = await resolveTenantSubject("tenantId" in input ? input.tenantId : input.subject.id);
  const { request, created } = await openDeletionRequest({ subject, source: "staff", reason: input.reason, actor: actorOf(caller), nowMs: Date.now() });
  return {
    requestId: request.requestId,
    state: request.state,
    requestedBy: request.requestedBy,
    created,
    graceEndsAt: request.graceEndsAtMs === null ? null : new Date(request.graceEndsAtMs).toISOString(),
  };
}

export const requestTenantDeletion = callable("requestTenantDeletion", RequestTenantDeletionInput, requestTenantDeletionHandler);
