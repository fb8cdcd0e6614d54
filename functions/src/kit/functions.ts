import type { PolicyIndex } from "../kernel/policy";
import { MAX_FUNCTION_ID_LENGTH } from "../platform/function-ids";
import { ttlTriggerTargets } from "../ttl/rules";

/**
 * The names the kit exports (kit/index.ts), which firebase-tools deploys as `kit-<instance>-<name>`: the project's
 * own functions (functions/src/index.ts) with the Auth backstop in its 2nd-gen form. A unit test holds the entry's
 * exports to this list.
 */
export const KIT_FUNCTIONS = [
  "requestAccountDeletion",
  "cancelAccountDeletion",
  "getDeletionStatus",
  "placeRetentionHold",
  "releaseRetentionHold",
  "planDeletion",
  "transitionLifecycle",
  "runRetentionJob",
  "approvePurgeRun",
  "listDeletionRequests",
  "listRetentionHolds",
  "listBrakeRuns",
  "explainDeletion",
  "getRetentionReport",
  "getRetentionRegistry",
  "requestTenantDeletion",
  "approveTenantDeletion",
  "cancelTenantDeletion",
  "onAuthUserDeleted",
  "expiryBackfill",
  "retentionAudit",
  "nightlyPurge",
  "evidenceAnchor",
  "purgeChunk",
  "purgeRequest",
  "applyRetentionHold",
  "extendRequestDeadline",
  "requestDataExport",
  "getDataExport",
  "exportSubjectData",
  "buildDataExport",
  "confirmProcessorNotice",
  "processorNotices",
  "deliverProcessorNotice",
  "ackProcessorNotice",
] as const;

/** Every function id the kit deploys under a registry: the fixed ones, and one TTL delete trigger per TTL collection. */
export function kitFunctionNames(policy: PolicyIndex): string[] {
  return [...KIT_FUNCTIONS, ...ttlTriggerTargets(policy).map((t) => `ttlDeleted-${t.name}`)];
}

/**
 * The function ids that would not fit Cloud Functions' 63 characters once firebase-tools prefixes them with
 * `kit-<instance>-`, longest first. Empty: every id fits. The longest fixed name has 22 characters, so an instance id
 * of up to 36 fits them all; a TTL trigger's id grows with its collection's name.
 */
export function idsTooLong(instance: string, names: readonly string[]): { id: string; length: number }[] {
  return names
    .map((n) => `kit-${instance}-${n}`)
    .filter((id) => id.length > MAX_FUNCTION_ID_LENGTH)
    .map((id) => ({ id, length: id.length }))
    .sort((a, b) => b.length - a.length);
}
