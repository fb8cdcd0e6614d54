import type { z } from "zod";
import { ListDeletionRequestsInput } from "../../contract/requests";
import { listRequests } from "../../requests/index";
import { callable, requireRole, type Caller } from "./shared";

export { ListDeletionRequestsInput };

/**
 * Compliance lists deletion requests, most urgent due date first, by state or only the overdue ones, a page at
 * a time. Items carry ids, states, dates and counts: never the subject's own words or the data itself.
 */
export async function listDeletionRequestsHandler(input: z.infer<typeof ListDeletionRequestsInput>, caller: Caller, nowMs: number = Date.now()) {
  requireRole(caller, "compliance");
  return listRequests({ ...input, nowMs });
}

export const listDeletionRequests = callable("listDeletionRequests", ListDeletionRequestsInput, (input, caller) => listDeletionRequestsHandler(input, caller));
