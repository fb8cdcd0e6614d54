import type { z } from "zod";
import { ListDeletionRequestsInput } from "../../contract/requests";
import { staffNames } from "../../platform/people";
import { listRequests } from "../../requests/index";
import { callable, requireRole, type Caller } from "./shared";

export { ListDeletionRequestsInput };

/**
 * Compliance lists deletion requests, most urgent due date first, by state or only the overdue ones, a page at
 * a time. Items carry ids, states, dates and counts: never the subject's own words or the data itself. The staff
 * who opened requests (a tenant's closure) are named; a customer is not.
 */
export async function listDeletionRequestsHandler(input: z.infer<typeof ListDeletionRequestsInput>, caller: Caller, nowMs: number = Date.now()) {
  requireRole(caller, "compliance");
  const page = await listRequests({ ...input, nowMs });
  return { ...page, people: await staffNames(page.items.filter((r) => r.source === "staff").map((r) => r.requestedBy)) };
}

export const listDeletionRequests = callable("listDeletionRequests", ListDeletionRequestsInput, (input, caller) => listDeletionRequestsHandler(input, caller));
