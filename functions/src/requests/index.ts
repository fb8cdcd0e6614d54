export { cancelDeletionRequest, openDeletionRequest, readRequest, reopenErasedSubject, resumeCancellations } from "./service";
export { currentStatusSummary, writeStatusSummary } from "./status";
export { resolveTenantSubject, resolveUserSubject, tenantOfDeletedUser } from "./subjects";
