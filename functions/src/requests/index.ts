export { cancelDeletionRequest, openDeletionRequest, readRequest, resumeCancellations } from "./service";
export { currentStatusSummary, writeStatusSummary } from "./status";
export { resolveTenantSubject, resolveUserSubject, tenantOfDeletedUser } from "./subjects";
export { findRequest, listRequests, staffFacts } from "./queries";
export type { ListRequestsQuery } from "./queries";
