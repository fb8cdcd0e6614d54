import { DomainError } from "./errors";
import { PROTECTED_FIELDS, type GovernedFields } from "./governed";
import type { PolicyIndex } from "./policy";
import type { RetentionClass } from "./policy-schema";
import { computeExpireAt, computeRetainUntil } from "./retention";

export interface GovernedWriteInput {
  path: string;
  /** The business payload. Retention fields in it are refused: only this helper sets them. */
  data: Readonly<Record<string, unknown>>;
  tenantId: string;
  /** The document as it is now, if it exists (its retention fields win over recomputation). */
  existing: GovernedFields | null;
  /** For inherited classes: the parent's current expireAt. */
  parentExpireAtMs?: number | null;
  nowMs: number;
}

/**
 * The one write helper for governed documents. It applies the class's retention on every write, so a
 * rewrite can neither drop nor reset a TTL by accident:
 * - the class comes from the registry (by collection), never from the payload;
 * - the anchor (`createdAt`) is set once and kept, so rewriting does not extend life;
 * - an existing TTL value is kept; a missing one is computed; a held document keeps none;
 * - children of a TTL parent copy the parent's expiry (the nested-data rule).
 */
export function prepareGovernedWrite(input: GovernedWriteInput, policy: PolicyIndex): GovernedFields {
  const smuggled = PROTECTED_FIELDS.filter((f) => f in input.data && f !== "tenantId");
  if (smuggled.length > 0) {
    throw new DomainError("invalid-argument", "PROTECTED_FIELD", `Retention fields are set by policy, not by callers: ${smuggled.join(", ")}`);
  }
  if ("tenantId" in input.data && input.data.tenantId !== input.tenantId) {
    throw new DomainError("invalid-argument", "TENANT_MISMATCH", "Payload tenantId differs from the document's tenant.");
  }
  const rule = policy.ruleForPath(input.path);
  const cls = rule ? policy.classById(rule.retentionClass) : undefined;
  if (!rule || !cls) throw new DomainError("failed-precondition", "UNKNOWN_POLICY", `No retention class governs ${input.path}.`);

  const prev = input.existing;
  const createdAtMs = prev?.createdAtMs ?? input.nowMs;
  const legalHold = prev?.legalHold ?? false;
  const inherited = cls.inheritsParentExpiry ? (input.parentExpireAtMs ?? null) : undefined;
  let expireAtMs: number | null;
  if (legalHold) expireAtMs = null;
  else if (inherited !== undefined) expireAtMs = inherited;
  else expireAtMs = prev?.expireAtMs ?? computeExpireAt(cls, createdAtMs);

  return {
    retentionClass: cls.id,
    lifecycleState: prev?.lifecycleState ?? "ACTIVE",
    tenantId: input.tenantId,
    // A rewrite keeps the version that set its retention; the audit reports STALE_POLICY_VERSION.
    policyVersion: prev?.policyVersion ?? policy.version,
    createdAtMs,
    expireAtMs,
    retainUntilMs: prev?.retainUntilMs ?? computeRetainUntil(cls, createdAtMs),
    legalHold,
    holdIds: prev?.holdIds ?? [],
    preHold: prev?.preHold ?? null,
  };
}

/**
 * The retention fields of a document written for the first time and under no hold: ACTIVE, its class's dates
 * counted from `createdAtMs`, and the TTL its class gives (or `expireAtMs` when the caller knows better: a child
 * that inherits its parent's, or none). What seeds, fixtures and benchmarks write directly.
 */
export function freshGovernedFields(cls: RetentionClass, at: { tenantId: string; policyVersion: string; createdAtMs: number; expireAtMs?: number | null }): GovernedFields {
  return {
    retentionClass: cls.id,
    lifecycleState: "ACTIVE",
    tenantId: at.tenantId,
    policyVersion: at.policyVersion,
    createdAtMs: at.createdAtMs,
    expireAtMs: at.expireAtMs !== undefined ? at.expireAtMs : computeExpireAt(cls, at.createdAtMs),
    retainUntilMs: computeRetainUntil(cls, at.createdAtMs),
    legalHold: false,
    holdIds: [],
    preHold: null,
  };
}
