/**
 * The states of a deletion request, in one list: the request rules (requests/rules/requests.ts) move along them,
 * and the callable contract (contract/, bundled by the console) validates with them.
 */
export const REQUEST_STATES = ["AWAITING_APPROVAL", "PENDING", "CANCELLING", "CANCELLED", "PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD", "PURGED"] as const;
export type RequestState = (typeof REQUEST_STATES)[number];
