/**
 * The kit's "./lib" export: what its functions do, without deploying them, for a team that wires its own triggers (its
 * own callable with its own checks, its own schedule, its own Auth trigger). Nothing here is a function firebase-tools
 * would deploy: a codebase deploys what its entry exports, and this module exports handlers only. The registry they
 * enforce is the one `enforceCodebaseRegistry(dir)` (or RETENTION_REGISTRY_FILE) names, as in the kit's entry.
 *
 * - The callables' bodies, `(input, caller)`: `input` parsed with the contract's schema (`CALLABLES[name].input`),
 *   `caller` as `callerFrom(request)` reads it from an authenticated callable request. They throw DomainError for a
 *   refusal (`toHttpsError` maps it as the kit's callables do).
 * - The schedules' bodies, `(event)`, with the event's `scheduleTime`.
 * - The Auth backstop's body, and the TTL delete's effect (`processTtlDelete`, per event id).
 */
export { approvePurgeRunHandler } from "../entrypoints/callable/approve-purge-run";
export { approveTenantDeletionHandler } from "../entrypoints/callable/approve-tenant-deletion";
export { cancelAccountDeletionHandler } from "../entrypoints/callable/cancel-account-deletion";
export { cancelTenantDeletionHandler } from "../entrypoints/callable/cancel-tenant-deletion";
export { extendRequestDeadlineHandler } from "../entrypoints/callable/extend-request-deadline";
export { requestDataExportHandler } from "../entrypoints/callable/request-data-export";
export { getDataExportHandler } from "../entrypoints/callable/get-data-export";
export { exportSubjectDataHandler } from "../entrypoints/callable/export-subject-data";
export { buildAccessExport } from "../access/index";
export { explainDeletionHandler } from "../entrypoints/callable/explain-deletion";
export { getDeletionStatusHandler } from "../entrypoints/callable/get-deletion-status";
export { getRetentionRegistryHandler } from "../entrypoints/callable/get-retention-registry";
export { getRetentionReportHandler } from "../entrypoints/callable/get-retention-report";
export { listBrakeRunsHandler } from "../entrypoints/callable/list-brake-runs";
export { listDeletionRequestsHandler } from "../entrypoints/callable/list-deletion-requests";
export { listRetentionHoldsHandler } from "../entrypoints/callable/list-retention-holds";
export { placeRetentionHoldHandler } from "../entrypoints/callable/place-retention-hold";
export { planDeletionHandler } from "../entrypoints/callable/plan-deletion";
export { releaseRetentionHoldHandler } from "../entrypoints/callable/release-retention-hold";
export { requestAccountDeletionHandler } from "../entrypoints/callable/request-account-deletion";
export { requestTenantDeletionHandler } from "../entrypoints/callable/request-tenant-deletion";
export { runRetentionJobHandler } from "../entrypoints/callable/run-retention-job";
export { transitionLifecycleHandler } from "../entrypoints/callable/transition-lifecycle";
export { anchorOnSchedule } from "../entrypoints/scheduled/evidence-anchor";
export { purgeOnSchedule } from "../entrypoints/scheduled/nightly-purge";
export { auditOnSchedule } from "../entrypoints/scheduled/retention-audit";
export { handleAuthUserDeleted } from "../entrypoints/auth/on-auth-user-deleted";
export { actorOf, callerFrom, toHttpsError, type Caller, type Role } from "../entrypoints/callable/shared";
export { processTtlDelete, type TtlDeleteOptions, type TtlDeleteResult } from "../ttl/index";
export { ttlTriggerTargets, type TtlTriggerTarget } from "../ttl/rules";
export { CALLABLES, CALLABLE_NAMES, type CallableInput, type CallableName, type CallableOutput } from "../contract/index";
export { DomainError } from "../kernel/errors";
export { enforceCodebaseRegistry, policy, registrySource } from "../platform/registry";
