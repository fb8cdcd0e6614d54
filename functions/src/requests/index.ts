// Opening, approving and cancelling go through requests/cells.ts: in the primary (the request of record), then in
// every other governed database the subject's data map reaches (docs/decisions/0036-several-databases.md).
export { approveTenantClosure, cancelDeletionRequest, openDeletionRequest, openUserErasure } from "./cells";
export { accountsReady, cellFacts, cellsOfRecord, followRecordInCells, outstandingRecords, readCellRequest, recordView, requestCells, settleIfDone, spansCells } from "./cells";
export type { RecordView } from "./cells";
export { readRequest, reopenErasedSubject, resumeCancellations } from "./service";
export type { OpenedRequest } from "./service";
export { currentStatusSummary, writeStatusSummary } from "./status";
export { resolveTenantSubject, resolveUserSubject, resolveUserSubjects, scopesOfDeletedUser, scopesOfRequester, scopesOfUsers, usersOfScope } from "./subjects";
export type { ScopeMembership } from "./subjects";
export { findRequest, goneByFacts, listRequests, staffFacts, storedRequestStates } from "./queries";
export type { ListRequestsQuery } from "./queries";
export { factsOfGroup, groupStaffFacts, groupView, memberFacts, readGroup, type ReadMember } from "./group";
export { subjectView } from "./rules/subject-view";
export { planSubjectRef, subjectsOf, type ScopePart, type SubjectPlan, type SubjectRef } from "./plan-view";
export { statusView, type StatusEnv, type StatusView } from "./status-view";
export type { CellView } from "./view";
export { clocksForNewRequests, extendRequestDeadline, legalClockFromFirestore, type ExtendDeadlineInput, type ExtendedDeadline } from "./legal-clock";
