/**
 * The deployed functions, at a glance. Re-exports only; each entry point is a thin adapter in
 * `entrypoints/`.
 */
export { requestAccountDeletion } from "./entrypoints/callable/request-account-deletion";
export { cancelAccountDeletion } from "./entrypoints/callable/cancel-account-deletion";
export { getDeletionStatus } from "./entrypoints/callable/get-deletion-status";
export { placeRetentionHold } from "./entrypoints/callable/place-retention-hold";
export { releaseRetentionHold } from "./entrypoints/callable/release-retention-hold";
export { planDeletion } from "./entrypoints/callable/plan-deletion";
export { transitionLifecycle } from "./entrypoints/callable/transition-lifecycle";
export { runRetentionJob } from "./entrypoints/callable/run-retention-job";
export { approvePurgeRun } from "./entrypoints/callable/approve-purge-run";
export { confirmProcessorNotice } from "./entrypoints/callable/confirm-processor-notice";
export { listDeletionRequests } from "./entrypoints/callable/list-deletion-requests";
export { listRetentionHolds } from "./entrypoints/callable/list-retention-holds";
export { listBrakeRunsCallable as listBrakeRuns } from "./entrypoints/callable/list-brake-runs";
export { explainDeletion } from "./entrypoints/callable/explain-deletion";
export { getRetentionReport } from "./entrypoints/callable/get-retention-report";
export { getRetentionRegistry } from "./entrypoints/callable/get-retention-registry";
export { requestTenantDeletion } from "./entrypoints/callable/request-tenant-deletion";
export { approveTenantDeletion } from "./entrypoints/callable/approve-tenant-deletion";
export { cancelTenantDeletion } from "./entrypoints/callable/cancel-tenant-deletion";
export { extendRequestDeadlineCallable as extendRequestDeadline } from "./entrypoints/callable/extend-request-deadline";
export { requestDataExport } from "./entrypoints/callable/request-data-export";
export { getDataExport } from "./entrypoints/callable/get-data-export";
export { exportSubjectData } from "./entrypoints/callable/export-subject-data";
export { onAuthUserDeleted } from "./entrypoints/auth/on-auth-user-deleted";
// One delete trigger per TTL collection in the registry, as a function group: ttlDeleted-sessions, ttlDeleted-events.
export { ttlDeleted } from "./entrypoints/firestore/ttl-deleted";
export { expiryBackfill } from "./entrypoints/scheduled/expiry-backfill";
export { retentionAudit } from "./entrypoints/scheduled/retention-audit";
export { nightlyPurge } from "./entrypoints/scheduled/nightly-purge";
export { evidenceAnchor } from "./entrypoints/scheduled/evidence-anchor";
export { purgeChunk } from "./entrypoints/tasks/purge-chunk";
export { purgeRequest } from "./entrypoints/tasks/purge-request";
export { applyRetentionHold } from "./entrypoints/tasks/apply-retention-hold";
export { buildDataExport } from "./entrypoints/tasks/build-data-export";
// The processors' outbox (docs/decisions/0039-processors.md): its relay, its delivery task and the acknowledgement endpoint.
export { processorNotices } from "./entrypoints/scheduled/processor-notices";
export { deliverProcessorNotice } from "./entrypoints/tasks/deliver-processor-notice";
export { ackProcessorNotice } from "./entrypoints/http/ack-processor-notice";
