import type { GovernedFields } from "./governed";
import { canTransition } from "./lifecycle";
import type { RetentionClass } from "./policy-schema";
import { DAY_MS } from "./policy";

/**
 * The TTL value (`expireAt`) a document of this class should carry, or null when it carries none.
 * - Only `ttl` classes carry a TTL value; workflow classes are deleted by the purge, never by TTL.
 * - The nested-data rule: an inherited class copies its parent's expiry (TTL never cascades).
 * - A held document carries no TTL value: holds win, and TTL cannot be stopped once it fires.
 */
export function computeExpireAt(
  cls: RetentionClass,
  anchorMs: number,
  opts: { parentExpireAtMs?: number | null; legalHold?: boolean } = {},
): number | null {
  if (opts.legalHold) return null;
  if (cls.mechanism !== "ttl") return null;
  if (cls.inheritsParentExpiry) return opts.parentExpireAtMs ?? null;
  return cls.durationDays === null ? null : anchorMs + cls.durationDays * DAY_MS;
}

/** The business end of retention for classes with a duration (finance, audit); null when open-ended. */
export function computeRetainUntil(cls: RetentionClass, anchorMs: number): number | null {
  return cls.durationDays === null ? null : anchorMs + cls.durationDays * DAY_MS;
}

/**
 * What placing a hold does: flags the document, clears its TTL value (kept aside in `preHold`) and moves it to
 * LEGAL_HOLD where the state machine allows. A PURGE_ELIGIBLE document cannot move to LEGAL_HOLD, yet the hold
 * still wins: the flag and the hold record block the destroy predicate. A second hold on an already-held
 * document only adds its id; the first `preHold` is the one to restore.
 */
export function applyHold(doc: GovernedFields, holdId: string): GovernedFields {
  return holdBy(doc, [...doc.holdIds, holdId]);
}

/** The document held by exactly `holdIds` (at least one): flag set, no TTL value, the pre-hold state kept aside once. */
function holdBy(doc: GovernedFields, ids: readonly string[]): GovernedFields {
  const holdIds = [...new Set(ids)].sort();
  if (doc.legalHold) return { ...doc, holdIds, expireAtMs: null };
  const moves = canTransition(doc.lifecycleState, "LEGAL_HOLD");
  return {
    ...doc,
    legalHold: true,
    holdIds,
    expireAtMs: null,
    preHold: { lifecycleState: doc.lifecycleState, expireAtMs: doc.expireAtMs },
    lifecycleState: moves ? "LEGAL_HOLD" : doc.lifecycleState,
  };
}

/**
 * Retention restored from policy as of now, once no hold is left: the pre-hold state comes back, and the TTL
 * value is recomputed from the class and the document's anchor (so a hold never extends or shortens retention
 * on its own; if the retention ran out during the hold, the document is expired at release).
 */
function restoreRetention(doc: GovernedFields, cls: RetentionClass, opts: { parentExpireAtMs?: number | null }): GovernedFields {
  const restoredState = doc.preHold?.lifecycleState ?? "ACTIVE";
  const lifecycleState = doc.lifecycleState === "LEGAL_HOLD" ? restoredState : doc.lifecycleState;
  return {
    ...doc,
    legalHold: false,
    holdIds: [],
    preHold: null,
    lifecycleState,
    expireAtMs: computeExpireAt(cls, doc.createdAtMs, { parentExpireAtMs: opts.parentExpireAtMs ?? null }),
    retainUntilMs: computeRetainUntil(cls, doc.createdAtMs),
  };
}

/**
 * What releasing one hold does when the document's own ids are all there is to go by. While other ids remain,
 * only this one goes; when the last one goes, retention is restored from policy (`restoreRetention`).
 */
export function releaseHold(
  doc: GovernedFields,
  holdId: string,
  cls: RetentionClass,
  opts: { parentExpireAtMs?: number | null } = {},
): GovernedFields {
  const holdIds = doc.holdIds.filter((id) => id !== holdId);
  if (holdIds.length > 0) return { ...doc, holdIds };
  return restoreRetention(doc, cls, opts);
}

/**
 * A document's hold marks made to agree with the holds that claim it now (`claiming`: the ids of the active
 * hold records that cover it, holds/rules.ts#claimingHoldIds). Any claim: held by exactly those ids, with no TTL
 * value. No claim, on a document that carries hold marks: retention restored from policy. A document with no
 * marks and no claim is left as it is. The flagging of a hold and its release both end here, so a document
 * never keeps an id no active hold answers to, and never gets its TTL value back while any active hold covers it.
 */
export function settleHolds(
  doc: GovernedFields,
  claiming: readonly string[],
  cls: RetentionClass,
  opts: { parentExpireAtMs?: number | null } = {},
): GovernedFields {
  if (claiming.length > 0) return holdBy(doc, claiming);
  if (doc.legalHold || doc.holdIds.length > 0 || doc.lifecycleState === "LEGAL_HOLD") return restoreRetention(doc, cls, opts);
  return doc;
}

/** True when the document's retention has run out at `nowMs` (TTL value or business end). */
export function isExpired(doc: Pick<GovernedFields, "expireAtMs" | "retainUntilMs">, nowMs: number): boolean {
  if (doc.expireAtMs !== null && doc.expireAtMs <= nowMs) return true;
  return doc.retainUntilMs !== null && doc.retainUntilMs <= nowMs;
}
