export { approveTenantClosure, cancelDeletionRequest, openDeletionRequest, readRequest, resumeCancellations } from "./service";
export { currentStatusSummary, writeStatusSummary } from "./status";
export { resolveTenantSubject, resolveUserSubject, tenantOfDeletedUser } from "./subjects";
