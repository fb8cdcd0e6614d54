/**
 * The states of a deletion request, in one list: the request rules (requests/rules/requests.ts) move along them,
 * and the callable contract (contract/, bundled by the console) validates with them.
 */
export const REQUEST_STATES = ["AWAITING_APPROVAL", "PENDING", "CANCELLING", "CANCELLED", "PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD", "PURGED"] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

/**
 * Why a request has no "fully gone by" date (requests/rules/gone-by.ts), shared with the contract:
 * - `NOT_ERASED_YET`: the erasure is not finished (awaiting approval, in grace, under way, blocked);
 * - `RETAINED_UNDER_HOLD`: data is still live under a retention hold, so no date can be promised;
 * - `CANCELLED`: nothing was erased;
 * - `ARCHIVE_UNDER_HOLD`: an archive copy the erasure made is held (no expiry while a hold stands);
 * - `ARCHIVE_KEPT_WITHOUT_END`: an archive copy's class keeps it without an end date;
 * - `NOT_RECORDED`: purged before the service recorded the date.
 */
export const GONE_BY_UNKNOWN = ["NOT_ERASED_YET", "RETAINED_UNDER_HOLD", "CANCELLED", "ARCHIVE_UNDER_HOLD", "ARCHIVE_KEPT_WITHOUT_END", "NOT_RECORDED"] as const;
export type GoneByUnknown = (typeof GONE_BY_UNKNOWN)[number];
