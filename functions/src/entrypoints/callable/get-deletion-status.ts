import type { z } from "zod";
import { GetDeletionStatusInput, GetDeletionStatusOutput } from "../../contract/requests";
import { permissionDenied } from "../../kernel/errors";
import { findRequest, statusView, type StatusEnv } from "../../requests/index";
import { requestOwner } from "../../requests/rules/requests";
import { staffNames } from "../../platform/people";
import { settings } from "../../platform/settings";
import { callable, type Caller } from "./shared";

export { GetDeletionStatusInput };
export type { StatusEnv };

/**
 * The owner (or compliance) sees the request's timeline and what will be kept, and why
 * (requests/status-view.ts): what is kept comes from the request's status summary (planned at most every
 * RETENTION_STATUS_REFRESH_MINUTES, or when holds change), never from a plan per call. The subject is told
 * "retained for a legal obligation" for anything a hold keeps; compliance sees the hold's reason and the staff who
 * acted by name. Both see the date by which the last copy is gone (or why there is none yet) and when
 * ERASURE_COMPLETE was recorded. Without a requestId it answers for the caller's latest request. A member of a
 * request group (a user erased in several scopes) answers for the whole group, under the group's id.
 */
export async function getDeletionStatusHandler(
  input: z.infer<typeof GetDeletionStatusInput>,
  caller: Caller,
  env: StatusEnv = { nowMs: Date.now(), refreshMs: settings.statusRefreshMs() },
): Promise<z.infer<typeof GetDeletionStatusOutput>> {
  const { request, snap } = await findRequest(input.requestId !== undefined ? { requestId: input.requestId } : { latestOf: caller.uid });
  const staff = caller.roles.includes("compliance");
  if (requestOwner(request) !== caller.uid && !staff) {
    throw permissionDenied("NOT_OWNER", "Only the subject or compliance staff may read this request.");
  }
  const { staff: facts, ...status } = await statusView(request, snap, staff ? "staff" : "subject", env);
  // Staff also see whose request it is and why it is blocked or what holds retain, and the staff who opened or
  // approved it by name; a subject never does.
  return { ...status, ...(facts ? { staff: { ...facts, people: await staffNames([facts.requestedBy, request.approvedBy]) } } : {}) };
}

/** User-facing: App Check is required where enforcement is on. */
export const getDeletionStatus = callable("getDeletionStatus", GetDeletionStatusInput, (input, caller) => getDeletionStatusHandler(input, caller), { appCheck: true });
