import * as functionsV1 from "firebase-functions/v1";
import { FUNCTION_SECRETS } from "../../config/params";
import { log } from "../../platform/logs";
import { emitMetric } from "../../platform/metrics";
import { openUserErasure, scopesOfDeletedUser } from "../../requests/index";

/**
 * The backstop for an Auth account deleted outside the workflow (console, Admin SDK): a deletion request
 * opens for it, so its data is not left behind. Idempotent without a marker: a uid that already has a
 * request that was not cancelled (including the purge's own PROCESSING/PURGED request, which deletes the
 * Auth account) is recognised as handled, so a redelivered event or the purge's own delete adds nothing.
 * Failures throw, so that the event is retried.
 */
export async function handleAuthUserDeleted(
  user: { uid: string; customClaims?: Record<string, unknown> },
  eventId: string,
  nowMs: number,
): Promise<{ requestId: string | null; created: boolean }> {
  const scopes = await scopesOfDeletedUser(user.uid, user.customClaims);
  const staff = Array.isArray(user.customClaims?.roles) && user.customClaims.roles.length > 0;
  // An app without scopes has "" for every user; staff accounts there have no data of their own to erase.
  if (scopes.length === 0 || (scopes.length === 1 && scopes[0] === "" && staff)) {
    // Staff accounts have no tenant data to erase; the audit's ORPHANED_SUBJECT check covers any leftovers.
    log.info("deletion.backstop.no_tenant", { eventId });
    return { requestId: null, created: false };
  }
  // A user in several scopes: one request group (its lead's id names it).
  const { request, created } = await openUserErasure({ uid: user.uid, scopes, source: "auth-backstop", actor: { type: "system", id: "authBackstop" }, nowMs, eventId });
  return { requestId: request.requestId, created };
}

/**
 * 1st gen by necessity: Cloud Functions 2nd gen has no Auth delete event (docs/ARCHITECTURE.md). A 1st-gen
 * background function drops an event whose handler throws unless it has a failure policy, so it retries
 * (for up to 7 days); the handler is idempotent, so a retry finishes what a failed delivery started.
 */
export const onAuthUserDeleted = functionsV1.runWith({ failurePolicy: true, secrets: FUNCTION_SECRETS }).auth.user().onDelete(async (user, context) => {
  try {
    await handleAuthUserDeleted({ uid: user.uid, customClaims: user.customClaims }, context.eventId, Date.now());
  } catch (err) {
    emitMetric("retention.trigger_failures", 1, { trigger: "onAuthUserDeleted" });
    throw err;
  }
});
