import type { z } from "zod";
import { CancelAccountDeletionInput } from "../../contract/requests";
import { cancelDeletionRequest } from "../../requests/index";
import { callable, type Caller } from "./shared";

export { CancelAccountDeletionInput };

/** The request's owner cancels before the grace period ends; everything the request soft-deleted comes back. */
export async function cancelAccountDeletionHandler(input: z.infer<typeof CancelAccountDeletionInput>, caller: Caller) {
  await cancelDeletionRequest(input.requestId, { uid: caller.uid, retentionAdmin: false }, { type: "user", id: caller.uid }, Date.now());
  return { requestId: input.requestId, state: "CANCELLED" as const };
}

/** User-facing: App Check is required where enforcement is on. */
export const cancelAccountDeletion = callable("cancelAccountDeletion", CancelAccountDeletionInput, cancelAccountDeletionHandler, { appCheck: true });
