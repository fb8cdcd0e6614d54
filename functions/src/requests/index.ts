export { approveTenantClosure, cancelDeletionRequest, openDeletionRequest, readRequest, reopenErasedSubject, resumeCancellations } from "./service";
export { currentStatusSummary, writeStatusSummary } from "./status";
export { resolveTenantSubject, resolveUserSubject, scopeOfRequester, tenantOfDeletedUser } from "./subjects";
export { findRequest, goneByFacts, listRequests, staffFacts } from "./queries";
export type { ListRequestsQuery } from "./queries";
