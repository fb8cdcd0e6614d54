import { onUserDeleted } from "firebase-functions/v2/identity";
import { FUNCTION_SECRETS } from "../../config/params";
import { emitMetric } from "../../platform/metrics";
import { handleAuthUserDeleted } from "./on-auth-user-deleted";

/**
 * The Auth-delete backstop as a 2nd-gen function, for the function kit: firebase-tools refuses a kit with a 1st-gen
 * function, and firebase-functions' `onUserDeleted` (beta since 7.3) is the 2nd-gen Auth delete event. The body is
 * the project's 1st-gen backstop's (`handleAuthUserDeleted`): idempotent, and a failure throws so the event is
 * delivered again (retry on).
 */
export const onUserDeletedBackstop = onUserDeleted({ retry: true, secrets: FUNCTION_SECRETS }, async (event) => {
  try {
    await handleAuthUserDeleted({ uid: event.data.uid, customClaims: event.data.customClaims }, event.id, Date.now());
  } catch (err) {
    emitMetric("retention.trigger_failures", 1, { trigger: "onAuthUserDeleted" });
    throw err;
  }
});
