import type { z } from "zod";
import * as access from "./access";
import * as admin from "./admin";
import * as evidence from "./evidence";
import * as holds from "./holds";
import * as processors from "./processors";
import * as registry from "./registry";
import * as report from "./report";
import * as requests from "./requests";

/** Who may call a callable (roles come from custom claims). */
export type CallerKind = "app user" | "owner or compliance" | "compliance" | "retention-admin" | "compliance or retention-admin";

export interface CallableSpec<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  input: I;
  output: O;
  caller: CallerKind;
  /** Requires App Check while RETENTION_ENFORCE_APP_CHECK is on. */
  appCheck: boolean;
  summary: string;
  /** The documented refusals, as `status/REASON` (besides UNAUTHENTICATED and INVALID_ARGUMENT, which every callable has). */
  refusals: readonly string[];
}

const spec = <I extends z.ZodType, O extends z.ZodType>(s: CallableSpec<I, O>) => s;

/**
 * Every callable: its input and output schemas, who may call it and how it refuses. The one source the
 * functions validate with, the typed client calls through, and docs/CALLABLES.md is generated from.
 */
export const CALLABLES = {
  requestAccountDeletion: spec({
    input: requests.RequestAccountDeletionInput,
    output: requests.RequestAccountDeletionOutput,
    caller: "app user",
    appCheck: true,
    summary:
      "The signed-in user asks for their own account to be erased. Returns the open request if there is one. A user the registry finds in several scopes gets one request per scope, opened together as a request group named by its lead's id.",
    refusals: ["unauthenticated/APP_CHECK_REQUIRED", "permission-denied/NO_TENANT_CLAIM", "resource-exhausted/REQUEST_COOLDOWN", "failed-precondition/TOO_MANY_SCOPES"],
  }),
  cancelAccountDeletion: spec({
    input: requests.CancelAccountDeletionInput,
    output: requests.CancelAccountDeletionOutput,
    caller: "app user",
    appCheck: true,
    summary: "The request's owner cancels inside the grace period; everything the request soft-deleted comes back. A request group's members are cancelled together, or none is.",
    refusals: ["unauthenticated/APP_CHECK_REQUIRED", "not-found/REQUEST_NOT_FOUND", "permission-denied/NOT_OWNER", "failed-precondition/GRACE_EXPIRED", "failed-precondition/ALREADY_PROCESSING"],
  }),
  getDeletionStatus: spec({
    input: requests.GetDeletionStatusInput,
    output: requests.GetDeletionStatusOutput,
    caller: "owner or compliance",
    appCheck: true,
    summary: "A request's state, timeline and what is retained and why. Without requestId: the caller's latest request. A request group's member answers for the whole group.",
    refusals: ["unauthenticated/APP_CHECK_REQUIRED", "not-found/REQUEST_NOT_FOUND", "permission-denied/NOT_OWNER"],
  }),
  listDeletionRequests: spec({
    input: requests.ListDeletionRequestsInput,
    output: requests.ListDeletionRequestsOutput,
    caller: "compliance",
    appCheck: false,
    summary: "Deletion requests, most urgent due date first, by state or only the overdue ones, or one subject's newest first; each names its request group; names the staff who opened them; paged.",
    refusals: ["permission-denied/NOT_COMPLIANCE", "invalid-argument/INVALID_CURSOR", "failed-precondition/NO_SCOPE_KIND"],
  }),
  requestTenantDeletion: spec({
    input: requests.RequestTenantDeletionInput,
    output: requests.RequestTenantDeletionOutput,
    caller: "retention-admin",
    appCheck: false,
    summary: "Opens a tenant's closure, AWAITING_APPROVAL by a second staff member; an open closure of the tenant is returned as it is.",
    refusals: ["permission-denied/NOT_RETENTION_ADMIN", "not-found/SUBJECT_NOT_FOUND", "failed-precondition/NO_SCOPE_KIND"],
  }),
  approveTenantDeletion: spec({
    input: requests.ApproveTenantDeletionInput,
    output: requests.ApproveTenantDeletionOutput,
    caller: "compliance or retention-admin",
    appCheck: false,
    summary: "A second staff member (never the requester) approves a tenant's closure: the tenant is hidden at once, soft-deleted, and its grace starts.",
    refusals: ["permission-denied/NOT_STAFF", "not-found/REQUEST_NOT_FOUND", "permission-denied/TWO_PERSON_RULE", "failed-precondition/NOT_AWAITING_APPROVAL"],
  }),
  cancelTenantDeletion: spec({
    input: requests.CancelTenantDeletionInput,
    output: requests.CancelTenantDeletionOutput,
    caller: "retention-admin",
    appCheck: false,
    summary: "Cancels a tenant's closure before its approval or within its grace; the tenant's data comes back.",
    refusals: ["permission-denied/NOT_RETENTION_ADMIN", "not-found/REQUEST_NOT_FOUND", "failed-precondition/GRACE_EXPIRED", "failed-precondition/ALREADY_PROCESSING"],
  }),
  placeRetentionHold: spec({
    input: holds.PlaceRetentionHoldInput,
    output: holds.PlaceRetentionHoldOutput,
    caller: "compliance",
    appCheck: false,
    summary: "Places a hold on a document, or on a subtree root the registry names (the scope's record, such as a tenant; its subtreeHoldRoots), in the governed database `database` names (the primary by default); a scope's record is held in every database with scope data.",
    refusals: [
      "permission-denied/NOT_COMPLIANCE",
      "invalid-argument/UNKNOWN_DATABASE",
      "invalid-argument/UNKNOWN_REASON_CODE",
      "invalid-argument/NOT_GOVERNED_PATH",
      "invalid-argument/INVALID_TARGET_PATH",
      "not-found/TARGET_NOT_FOUND",
      "failed-precondition/HOLD_NOT_ALLOWED_FOR_CLASS",
    ],
  }),
  releaseRetentionHold: spec({
    input: holds.ReleaseRetentionHoldInput,
    output: holds.ReleaseRetentionHoldOutput,
    caller: "compliance",
    appCheck: false,
    summary: "Releases a hold (a second officer where its reason asks for two), in every governed database that holds it.",
    refusals: [
      "permission-denied/NOT_COMPLIANCE",
      "invalid-argument/UNKNOWN_DATABASE",
      "not-found/HOLD_NOT_FOUND",
      "permission-denied/TWO_PERSON_RULE",
      "failed-precondition/HOLD_NOT_ACTIVE",
      "failed-precondition/RELEASE_BEFORE_RELEASE_AFTER",
    ],
  }),
  listRetentionHolds: spec({
    input: holds.ListRetentionHoldsInput,
    output: holds.ListRetentionHoldsOutput,
    caller: "compliance",
    appCheck: false,
    summary: "Active holds (or past ones) of every governed database, newest first, by reason, placer (uid or staff email), target and database; flags holds past releaseAfter; names the staff who placed and released them; paged.",
    refusals: ["permission-denied/NOT_COMPLIANCE", "invalid-argument/INVALID_CURSOR", "invalid-argument/UNKNOWN_DATABASE", "not-found/STAFF_NOT_FOUND"],
  }),
  planDeletion: spec({
    input: admin.PlanDeletionInput,
    output: admin.PlanDeletionOutput,
    caller: "compliance",
    appCheck: false,
    summary: "The deletion manifest for a user or a tenant (a scope): what would be deleted, masked and kept, and why; a user in several scopes, in each. Read-only.",
    refusals: ["permission-denied/NOT_COMPLIANCE", "not-found/SUBJECT_NOT_FOUND", "failed-precondition/NO_SCOPE_KIND", "failed-precondition/TOO_MANY_SCOPES"],
  }),
  explainDeletion: spec({
    input: evidence.ExplainDeletionInput,
    output: evidence.ExplainDeletionOutput,
    caller: "compliance",
    appCheck: false,
    summary: "Why was this deleted, and who allowed it: the evidence for a path, a request or a subject, and whether the chain verifies; a hold release's typed reason, checked against its hash; the staff named; paged.",
    refusals: ["permission-denied/NOT_COMPLIANCE", "invalid-argument/INVALID_CURSOR", "failed-precondition/NO_SCOPE_KIND"],
  }),
  getRetentionReport: spec({
    input: report.GetRetentionReportInput,
    output: report.GetRetentionReportOutput,
    caller: "compliance",
    appCheck: false,
    summary: "The dashboard's data, live: the read-only audit and the evidence-chain walk `retention report` draws.",
    refusals: ["permission-denied/NOT_COMPLIANCE"],
  }),
  getRetentionRegistry: spec({
    input: registry.GetRetentionRegistryInput,
    output: registry.GetRetentionRegistryOutput,
    caller: "compliance or retention-admin",
    appCheck: false,
    summary: "The registry version the functions enforce (classes, data map, subjects, hold roots and reasons): what the console reads the app's words, paths and hold reasons from.",
    refusals: ["permission-denied/NOT_STAFF"],
  }),
  transitionLifecycle: spec({
    input: admin.TransitionLifecycleInput,
    output: admin.TransitionLifecycleOutput,
    caller: "retention-admin",
    appCheck: false,
    summary: "Moves one document through the lifecycle state machine, holds and the destroy predicate permitting.",
    refusals: [
      "permission-denied/NOT_RETENTION_ADMIN",
      "not-found/DOCUMENT_NOT_FOUND",
      "invalid-argument/NOT_GOVERNED_PATH",
      "failed-precondition/INVALID_LIFECYCLE_<FROM>_TO_<TO>",
      "failed-precondition/HOLD_VIA_PLACE_RETENTION_HOLD",
      "failed-precondition/PURGE_ONLY_BY_ENGINE",
      "failed-precondition/LEGAL_HOLD",
      "failed-precondition/OPEN_DELETION_REQUEST",
    ],
  }),
  runRetentionJob: spec({
    input: admin.RunRetentionJobInput,
    output: admin.RunRetentionJobOutput,
    caller: "retention-admin",
    appCheck: false,
    summary: "Runs a scheduled job now (asOf only on the emulators); recorded in evidence first.",
    refusals: ["permission-denied/NOT_RETENTION_ADMIN", "failed-precondition/AS_OF_NOT_ALLOWED", "failed-precondition/JOB_NOT_AVAILABLE"],
  }),
  listBrakeRuns: spec({
    input: admin.ListBrakeRunsInput,
    output: admin.ListBrakeRunsOutput,
    caller: "compliance or retention-admin",
    appCheck: false,
    summary: "The deletion sets the mass-deletion brake holds back, with their units, manifest hashes and counts, and who decided, named; paged.",
    refusals: ["permission-denied/NOT_RETENTION_ADMIN", "invalid-argument/INVALID_CURSOR"],
  }),
  confirmProcessorNotice: spec({
    input: processors.ConfirmProcessorNoticeInput,
    output: processors.ConfirmProcessorNoticeOutput,
    caller: "compliance",
    appCheck: false,
    summary:
      "A compliance officer confirms that a manual processor (a vendor with no API) erased the subject, with the vendor's receipt or ticket id: recorded once as the processor's acknowledgement (PROCESSOR_ACKNOWLEDGED, the officer its actor); a second confirmation changes nothing.",
    refusals: ["permission-denied/NOT_COMPLIANCE", "not-found/PROCESSOR_NOTICE_NOT_FOUND", "failed-precondition/NOT_A_MANUAL_PROCESSOR"],
  }),
  approvePurgeRun: spec({
    input: admin.ApprovePurgeRunInput,
    output: admin.ApprovePurgeRunOutput,
    caller: "retention-admin",
    appCheck: false,
    summary: "Approves or denies a deletion set the brake holds back; an approval lets exactly that set run once.",
    refusals: ["permission-denied/NOT_RETENTION_ADMIN", "not-found/BRAKE_RUN_NOT_FOUND", "failed-precondition/BRAKE_RUN_USED", "failed-precondition/ALREADY_APPROVED"],
  }),
  // Legal clocks and access requests (docs/decisions/0040-legal-clocks-and-access.md).
  extendRequestDeadline: spec({
    input: requests.ExtendRequestDeadlineInput,
    output: requests.ExtendRequestDeadlineOutput,
    caller: "compliance or retention-admin",
    appCheck: false,
    summary:
      "Extends a request's legal deadline once, within its law's limit (GDPR: two more months; CCPA: 45 more days), with a written reason recorded as evidence; `until` absent: to the limit. A request group's member extends the whole group.",
    refusals: [
      "permission-denied/NOT_STAFF",
      "not-found/REQUEST_NOT_FOUND",
      "invalid-argument/EXTENSION_REASON_REQUIRED",
      "failed-precondition/NO_LEGAL_CLOCK",
      "failed-precondition/NOT_EXTENDABLE",
      "failed-precondition/ALREADY_EXTENDED",
      "failed-precondition/BEYOND_LEGAL_LIMIT",
      "failed-precondition/EXTENSION_NOT_LATER",
    ],
  }),
  requestDataExport: spec({
    input: access.RequestDataExportInput,
    output: access.RequestDataExportOutput,
    caller: "app user",
    appCheck: true,
    summary:
      "The signed-in user asks for a copy of their own data: a task exports everything the data map finds for them (Cloud Storage objects included), in the subject export's format, whatever holds there are. Returns the export being built or still downloadable if there is one.",
    refusals: ["unauthenticated/APP_CHECK_REQUIRED", "permission-denied/NO_TENANT_CLAIM", "resource-exhausted/EXPORT_COOLDOWN", "failed-precondition/TOO_MANY_SCOPES"],
  }),
  getDataExport: spec({
    input: access.GetDataExportInput,
    output: access.GetDataExportOutput,
    caller: "app user",
    appCheck: true,
    summary: "Pages a ready export to its subject, and only to them, until it expires; each download (page 0) is recorded as evidence.",
    refusals: ["unauthenticated/APP_CHECK_REQUIRED", "not-found/EXPORT_NOT_FOUND", "permission-denied/NOT_OWNER", "failed-precondition/EXPORT_NOT_READY", "failed-precondition/EXPORT_EXPIRED"],
  }),
  exportSubjectData: spec({
    input: access.ExportSubjectDataInput,
    output: access.ExportSubjectDataOutput,
    caller: "compliance",
    appCheck: false,
    summary: "Compliance runs the same export for a user whose access request came another way (an email, a letter), with its reference; the user downloads it in the app with getDataExport. No cooldown.",
    refusals: ["permission-denied/NOT_COMPLIANCE", "not-found/SUBJECT_NOT_FOUND", "failed-precondition/TOO_MANY_SCOPES"],
  }),
} as const;

export type CallableName = keyof typeof CALLABLES;
export type CallableInput<N extends CallableName> = z.input<(typeof CALLABLES)[N]["input"]>;
export type CallableOutput<N extends CallableName> = z.output<(typeof CALLABLES)[N]["output"]>;
export const CALLABLE_NAMES = Object.keys(CALLABLES) as CallableName[];
