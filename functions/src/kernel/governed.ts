import type { LifecycleState } from "./lifecycle";

/**
 * The retention fields every governed document carries, in domain form (times as epoch ms).
 * Infrastructure converts to and from Firestore Timestamps.
 */
export interface GovernedFields {
  retentionClass: string;
  lifecycleState: LifecycleState;
  tenantId: string;
  policyVersion: string;
  /** The anchor retention is computed from. Set once, never reset by a rewrite. */
  createdAtMs: number;
  /** The TTL field (`expireAt`). null: the document carries no TTL value. */
  expireAtMs: number | null;
  /** Business end of retention for workflow classes (finance, audit). null: no fixed end. */
  retainUntilMs: number | null;
  legalHold: boolean;
  holdIds: string[];
  /** What a hold put aside, restored on release. */
  preHold: { lifecycleState: LifecycleState; expireAtMs: number | null } | null;
}

/**
 * Fields only trusted server code may set or change. The security rules deny client writes that touch
 * them, and the write helper refuses payloads that try to smuggle them in.
 */
export const PROTECTED_FIELDS = [
  "retentionClass",
  "lifecycleState",
  "tenantId",
  "policyVersion",
  "createdAt",
  "expireAt",
  "retainUntil",
  "legalHold",
  "holdIds",
  "preHold",
  "softDeletedAt",
  "preDeleteState",
  "deletionRequestId",
  "purgeDecision",
  "maskedAt",
] as const;
