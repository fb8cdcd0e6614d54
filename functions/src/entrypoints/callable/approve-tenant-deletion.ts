import type { z } from "zod";
import { ApproveTenantDeletionInput } from "../../contract/requests";
import { permissionDenied } from "../../kernel/errors";
import { approveTenantClosure } from "../../requests/index";
import { actorOf, callable, type Caller } from "./shared";

export { ApproveTenantDeletionInput };

/**
 * A second staff member (retention-admin or compliance, never the one who requested it: TWO_PERSON_RULE)
 * approves a tenant's closure. From that moment the tenant's data is hidden from every product read and client
 * (its closure is recorded on the tenant's document), its data is soft-deleted with the reason TENANT_CLOSURE,
 * and its grace period starts; nothing is deleted. Approving again, as the same approver, resumes an
 * interrupted soft delete.
 */
export async function approveTenantDeletionHandler(input: z.infer<typeof ApproveTenantDeletionInput>, caller: Caller) {
  if (caller.roles.length === 0) throw permissionDenied("NOT_STAFF", "Only a retention-admin or a compliance officer may approve a tenant's closure.");
  const { request } = await approveTenantClosure(input.requestId, actorOf(caller), Date.now());
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return { requestId: request.requestId, state: request.state, approvedBy: request.approvedBy ?? null, graceEndsAt: iso(request.graceEndsAtMs), dueAt: iso(request.dueAtMs) };
}

/**
 * The soft delete walks the tenant's whole data map (every path in memory, as planning does) and moves it in
 * batches of 200: a callable's 60 s and 256 MiB would cut a large tenant short, so it gets the planner's resources.
 */
export const approveTenantDeletion = callable("approveTenantDeletion", ApproveTenantDeletionInput, approveTenantDeletionHandler, { timeoutSeconds: 540, memory: "2GiB" });
