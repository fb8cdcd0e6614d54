// Opening, approving and cancelling go through requests/cells.ts: in the primary (the request of record), then in
// every other governed database the subject's data map reaches (docs/decisions/0036-several-databases.md).
export { approveTenantClosure, cancelDeletionRequest, openDeletionRequest } from "./cells";
export { accountsReady, cellFacts, cellsOfRecord, followRecordInCells, outstandingRecords, readCellRequest, recordView, requestCells, settleIfDone, spansCells } from "./cells";
export type { RecordView } from "./cells";
export { readRequest, reopenErasedSubject, resumeCancellations } from "./service";
export { currentStatusSummary, writeStatusSummary } from "./status";
export { resolveTenantSubject, resolveUserSubject, scopeOfRequester, tenantOfDeletedUser } from "./subjects";
export { findRequest, goneByFacts, listRequests, staffFacts } from "./queries";
export type { ListRequestsQuery } from "./queries";
export { statusView, type StatusView, type CellView } from "./view";
