import type { GoneByUnknown, RequestState } from "../../kernel/request-states";
import { PRIMARY_CELL } from "../../kernel/policy";

/**
 * A request across several governed databases (docs/decisions/0036-several-databases.md). The primary holds the
 * request of record; every other cell whose part of the data map reaches the subject holds a cell request under the
 * same id. Each cell's purge ends its own cell request; what the request of record reports is derived here, from
 * every cell's state, its own included. Pure: the reads are in requests/cells.ts.
 */

/** The other cells a request of record lists (none: a request of one database, or a cell request). */
export function cellsOfRecord(data: { cells?: unknown } | undefined): string[] {
  const cells = data?.cells;
  return Array.isArray(cells) ? cells.filter((c): c is string => typeof c === "string") : [];
}

/** One cell's request as read: its state (null: not there yet) and its "fully gone by" facts. */
export interface CellRequestFacts {
  /** The cell's logical name (kernel/policy.ts#PRIMARY_CELL for the request of record). */
  cell: string;
  state: RequestState | null;
  fullyGoneByMs: number | null;
  fullyGoneByUnknown: GoneByUnknown | null;
  erasureComplete: boolean;
  /** RETAINED_UNDER_HOLD: how many paths a hold keeps there. */
  underHold: number;
  blockedReason: string | null;
  /** A cell request waiting for the request of record to be taken (requests/rules/requests.ts#TakeFacts). */
  awaitingRecord: boolean;
}

/**
 * The states of a request of record from which no cancel can succeed any more: its primary part has been taken by
 * the purge (a cancel is refused from PROCESSING on, and a taken request never goes back to PENDING). A cell request
 * may be taken by its cell's purge only once the request of record is in one of these: read outside any
 * transaction, that is safe, because the set is never left once entered (a stale read says "not yet": it only delays).
 */
export const RECORD_TAKEN_STATES: readonly RequestState[] = ["PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD", "PURGED"];
export const recordTaken = (state: RequestState | null): boolean => state !== null && RECORD_TAKEN_STATES.includes(state);

/** A cell's erasure is done: everything it may erase is erased (decision 0003's two end states). */
export const cellDone = (state: RequestState | null): boolean => state === "PURGED" || state === "RETAINED_UNDER_HOLD";

/**
 * The state the request of record reports, derived from its cells (the primary's own part included):
 * - before the purge (AWAITING_APPROVAL, PENDING) the request of record decides, and the cells follow it;
 * - a cancel: CANCELLED only once every cell is (each cell's restore finished), else CANCELLING;
 * - once taken: BLOCKED if any cell is (it needs an operator), PROCESSING while any cell is not done (a cell not
 *   there yet, or not taken yet, included), then RETAINED_UNDER_HOLD if a hold keeps data in any cell, else PURGED.
 */
export function derivedState(cells: readonly CellRequestFacts[]): RequestState {
  const record = cells.find((c) => c.cell === PRIMARY_CELL);
  if (!record?.state) throw new Error("a request of record's cells must include the primary's");
  const others = cells.filter((c) => c.cell !== PRIMARY_CELL);
  const s = record.state;
  if (s === "AWAITING_APPROVAL" || s === "PENDING") return s;
  if (s === "CANCELLING" || s === "CANCELLED") {
    // A cell never opened is a cell with nothing soft-deleted: nothing to restore there.
    return others.every((c) => c.state === null || c.state === "CANCELLED") && s === "CANCELLED" ? "CANCELLED" : "CANCELLING";
  }
  if (cells.some((c) => c.state === "BLOCKED")) return "BLOCKED";
  if (!cells.every((c) => cellDone(c.state))) return "PROCESSING";
  return cells.some((c) => c.state === "RETAINED_UNDER_HOLD") ? "RETAINED_UNDER_HOLD" : "PURGED";
}

/** What the request of record reports of its "fully gone by" date, derived from its cells. */
export interface DerivedGoneBy {
  fullyGoneByMs: number | null;
  unknown: GoneByUnknown | null;
}

/**
 * The request of record's "fully gone by" date: the latest of its cells' dates, once every cell is PURGED with a
 * date (the last copy anywhere is gone only when the last cell's is); otherwise none, with the reason of the first
 * cell (the primary first) that has none, or the derived state's.
 */
export function derivedGoneBy(cells: readonly CellRequestFacts[], state: RequestState): DerivedGoneBy {
  if (state !== "PURGED") {
    if (state === "RETAINED_UNDER_HOLD") return { fullyGoneByMs: null, unknown: "RETAINED_UNDER_HOLD" };
    if (state === "CANCELLED" || state === "CANCELLING") return { fullyGoneByMs: null, unknown: "CANCELLED" };
    return { fullyGoneByMs: null, unknown: "NOT_ERASED_YET" };
  }
  const undated = cells.find((c) => c.fullyGoneByMs === null);
  if (undated) return { fullyGoneByMs: null, unknown: undated.fullyGoneByUnknown ?? "NOT_RECORDED" };
  return { fullyGoneByMs: Math.max(...cells.map((c) => c.fullyGoneByMs!)), unknown: null };
}

/**
 * Whether the subject's Auth account may go now: decision 0003 across cells. The account goes once, when in every
 * cell everything that may be erased is erased (each cell PURGED or RETAINED_UNDER_HOLD), never while any cell is
 * still to erase or blocked, and never for a cancelled request.
 */
export const accountsMayGo = (cells: readonly CellRequestFacts[]): boolean => cells.length > 0 && cells.every((c) => cellDone(c.state));

/**
 * What following the request of record does to one cell's request (requests/service.ts#followRecord):
 * - `open`: it is not there: open it (in the record's state before the purge: AWAITING_APPROVAL or PENDING; a
 *   record already taken opens it PENDING and released at once), then soft-delete;
 * - `tombstone`: it is not there and the record is cancelled: create it CANCELLED, so that an opening that arrives
 *   late finds it closed and hides nothing;
 * - `approve`: the record's closure was approved: the cell's becomes PENDING with the record's periods;
 * - `soft-delete`: PENDING with its soft delete not finished (an interrupted opening);
 * - `cancel`: the record is being cancelled or is cancelled: cancel it (restore what it soft-deleted), or finish its
 *   restore (CANCELLING);
 * - `release`: the record has been taken: the cell's purge may take it now;
 * - `none`: nothing to do.
 */
export type FollowAction = "open" | "tombstone" | "approve" | "soft-delete" | "cancel" | "release" | "none";

export function followAction(record: RequestState, cell: Pick<CellRequestFacts, "state" | "awaitingRecord"> & { softDeleteDone: boolean }): FollowAction {
  const cancelled = record === "CANCELLING" || record === "CANCELLED";
  if (cell.state === null) return cancelled ? "tombstone" : "open";
  if (cancelled) return cell.state === "AWAITING_APPROVAL" || cell.state === "PENDING" || cell.state === "CANCELLING" ? "cancel" : "none";
  if (cell.state === "AWAITING_APPROVAL") return record === "AWAITING_APPROVAL" ? "none" : "approve";
  if (cell.state === "PENDING" && !cell.softDeleteDone) return "soft-delete";
  if (cell.state === "PENDING" && cell.awaitingRecord && recordTaken(record)) return "release";
  return "none";
}

/** Whether the request of record still needs the nightly reconciliation of its cells. */
export function cellsSettled(record: { state: RequestState; accountsDone: boolean }, cells: readonly CellRequestFacts[]): boolean {
  const others = cells.filter((c) => c.cell !== PRIMARY_CELL);
  if (record.state === "CANCELLED") return others.every((c) => c.state === "CANCELLED");
  return record.accountsDone && others.every((c) => c.state !== null && !c.awaitingRecord);
}
