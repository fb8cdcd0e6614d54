import { FieldValue, Timestamp, type DocumentData } from "firebase-admin/firestore";
import type { GovernedFields } from "../domain/governed";
import { isLifecycleState } from "../domain/lifecycle";

/** Firestore <-> domain conversion of the retention fields. Times are Timestamps in Firestore, ms in the domain. */

export function toMs(value: unknown): number | null {
  if (value instanceof Timestamp) return value.toMillis();
  if (value instanceof Date) return value.getTime();
  if (value && typeof value === "object" && typeof (value as { toMillis?: unknown }).toMillis === "function") {
    return (value as { toMillis: () => number }).toMillis();
  }
  return null;
}

export const toTimestamp = (ms: number): Timestamp => Timestamp.fromMillis(ms);

/**
 * Reads the retention fields of a stored document. Fields may be missing or wrong on a corrupted or
 * unclassified document: the result says so (retentionClass null, lifecycleState as stored) instead of
 * guessing, so the destroy predicate and the audit see the truth.
 */
export function readGoverned(data: DocumentData | undefined): (Omit<GovernedFields, "retentionClass" | "lifecycleState"> & {
  retentionClass: string | null;
  /** As stored: may be outside the state machine on a corrupted document. */
  lifecycleState: string | null;
}) | null {
  if (!data) return null;
  const preHold = data.preHold as { lifecycleState?: unknown; expireAt?: unknown } | null | undefined;
  return {
    retentionClass: typeof data.retentionClass === "string" ? data.retentionClass : null,
    lifecycleState: typeof data.lifecycleState === "string" ? data.lifecycleState : null,
    tenantId: typeof data.tenantId === "string" ? data.tenantId : "",
    policyVersion: typeof data.policyVersion === "string" ? data.policyVersion : "",
    createdAtMs: toMs(data.createdAt) ?? 0,
    expireAtMs: toMs(data.expireAt),
    retainUntilMs: toMs(data.retainUntil),
    legalHold: data.legalHold === true,
    holdIds: Array.isArray(data.holdIds) ? data.holdIds.filter((x): x is string => typeof x === "string") : [],
    preHold:
      preHold && isLifecycleState(preHold.lifecycleState)
        ? { lifecycleState: preHold.lifecycleState, expireAtMs: toMs(preHold.expireAt) }
        : null,
  };
}

/** Strict form: for code paths that must only act on well-formed governed documents. */
export function readGovernedStrict(data: DocumentData | undefined): GovernedFields | null {
  const g = readGoverned(data);
  if (!g || !g.retentionClass || !isLifecycleState(g.lifecycleState)) return null;
  return { ...g, retentionClass: g.retentionClass, lifecycleState: g.lifecycleState };
}

/**
 * The retention fields as Firestore data. A null TTL value removes the field: TTL ignores documents
 * without it, which is how a held document is kept out of the sweeper's reach.
 * mode "merge" (update / set-merge) deletes absent fields; mode "set" (whole-document set) omits them.
 */
export function governedToFirestore(g: GovernedFields, mode: "merge" | "set" = "merge"): Record<string, unknown> {
  const absent = mode === "merge" ? FieldValue.delete() : undefined;
  const out: Record<string, unknown> = {
    retentionClass: g.retentionClass,
    lifecycleState: g.lifecycleState,
    tenantId: g.tenantId,
    policyVersion: g.policyVersion,
    createdAt: toTimestamp(g.createdAtMs),
    expireAt: g.expireAtMs === null ? absent : toTimestamp(g.expireAtMs),
    retainUntil: g.retainUntilMs === null ? absent : toTimestamp(g.retainUntilMs),
    legalHold: g.legalHold,
    holdIds: g.holdIds,
    preHold:
      g.preHold === null
        ? absent
        : { lifecycleState: g.preHold.lifecycleState, expireAt: g.preHold.expireAtMs === null ? null : toTimestamp(g.preHold.expireAtMs) },
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}
