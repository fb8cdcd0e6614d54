import { DomainError } from "../../kernel/errors";
import type { GoneByUnknown } from "../../kernel/request-states";
import type { Subject } from "../../plan/rules";
import { cellDone } from "./cells";
import { unknownForState } from "./gone-by";
import type { RequestState } from "./requests";

/**
 * A request group, pure: a user the registry finds in several scopes (workspaces, organisations) asks once, and
 * one deletion request opens per scope, together, each carrying the group's id (the lead's request id). Each
 * member is an ordinary request to every wing (plan, purge, holds, brake, evidence, erasure ledger, replay): a
 * hold in one scope keeps that scope's part and never the others'. What the user sees is one request: the group's
 * state, dates and what is retained are derived here from its members.
 */

/**
 * The most scopes one group erases a user in. Opening a group writes every member, and a cancel reads and moves
 * every member, each in one transaction (so that a cancel and the purge cannot split a group): with 25 members a
 * transaction writes about 75 documents (a request and an evidence entry each, the lead's chain head), well inside
 * Firestore's limits, and a status call reads 25 requests. A user found in more is refused (TOO_MANY_SCOPES) and
 * nothing is opened; the lookups read at most one scope more than this, so finding out costs a bounded read.
 */
export const GROUP_MAX_SCOPES = 25;

/**
 * The subjects of a user's erasure, one per scope, sorted by scope id. The first is the group's lead: it erases
 * the data-map entries that name the uid alone (a profile `people/{uid}`), which reach the same documents from every
 * scope; the others are `scopedOnly` (kernel/policy.ts#dataMapOf). The lead is the first scope in sort order: it is
 * known before anything is written, the same for two concurrent calls, and fixed for the group's life (stored on
 * each request), whatever the user's memberships become. One scope (or none: "" in an app without scopes) is an
 * ordinary request with no group. More than GROUP_MAX_SCOPES: TOO_MANY_SCOPES (failed-precondition).
 */
export function groupSubjects(uid: string, scopes: readonly string[]): Subject[] {
  const sorted = [...new Set(scopes)].sort();
  if (sorted.length > GROUP_MAX_SCOPES) {
    throw new DomainError("failed-precondition", "TOO_MANY_SCOPES", `The user belongs to more than ${GROUP_MAX_SCOPES} scopes: one request erases a user in at most ${GROUP_MAX_SCOPES}.`, {
      limit: GROUP_MAX_SCOPES,
    });
  }
  if (sorted.length <= 1) return [{ type: "user", uid, tenantId: sorted[0] ?? "" }];
  return sorted.map((tenantId, i) => (i === 0 ? { type: "user", uid, tenantId } : { type: "user", uid, tenantId, scopedOnly: true }));
}

/** What the group's rules read of one member request. */
export interface GroupMember {
  requestId: string;
  tenantId: string;
  state: RequestState;
  graceEndsAtMs: number | null;
  dueAtMs: number | null;
  /** The member's "fully gone by" as its own status reports it (requests/rules/gone-by.ts#goneByStatus). */
  fullyGoneByMs: number | null;
  goneByUnknown: GoneByUnknown | null;
  erasureCompleteAtMs: number | null;
}

const OWED: readonly RequestState[] = ["PENDING", "PROCESSING", "BLOCKED"];

/**
 * The group's state, from its members', as the user and staff are told it (the members' own states stay theirs):
 * - all in one state: that state;
 * - a cancel under way (any CANCELLING, or CANCELLED beside another state: a cancel moves every member at once,
 *   and each finishes its restore on its own): CANCELLING;
 * - erasure still owed somewhere: BLOCKED when any member is (an operator must look), else PROCESSING when any
 *   member has started (PROCESSING, or PENDING beside a finished one), else PENDING;
 * - every member finished: RETAINED_UNDER_HOLD when any keeps data under a hold, else PURGED (only when all are).
 */
export function groupState(states: readonly RequestState[]): RequestState {
  if (states.length === 0) throw new Error("a request group has members");
  const first = states[0]!;
  if (states.every((s) => s === first)) return first;
  if (states.some((s) => s === "CANCELLING" || s === "CANCELLED")) return "CANCELLING";
  if (states.some((s) => s === "AWAITING_APPROVAL")) return "AWAITING_APPROVAL";
  if (states.some((s) => OWED.includes(s))) {
    if (states.includes("BLOCKED")) return "BLOCKED";
    return states.every((s) => s === "PENDING") ? "PENDING" : "PROCESSING";
  }
  return states.includes("RETAINED_UNDER_HOLD") ? "RETAINED_UNDER_HOLD" : "PURGED";
}

/** Why a PURGED group has no "fully gone by" date when a member has none: the reason furthest from a date first. */
const UNKNOWN_ORDER: readonly GoneByUnknown[] = ["ARCHIVE_UNDER_HOLD", "ARCHIVE_KEPT_WITHOUT_END", "NOT_RECORDED"];

export interface GroupFacts {
  state: RequestState;
  /** The latest grace end (members open together, so they share it) and the earliest due date (the most urgent). */
  graceEndsAtMs: number | null;
  dueAtMs: number | null;
  /** The latest member's date, once the group is PURGED and every member has one; else null with the reason. */
  fullyGoneByMs: number | null;
  goneByUnknown: GoneByUnknown | null;
  /** When the last member recorded ERASURE_COMPLETE; null until all have. */
  erasureCompleteAtMs: number | null;
}

/**
 * What the group reports: its state (`groupState`), its dates, and its "fully gone by": the group's state decides
 * as a request's does (requests/rules/gone-by.ts#unknownForState); a PURGED group is gone by its latest member's
 * date, and has none while any member has none (an archive copy under a hold, ...).
 */
export function groupFacts(members: readonly GroupMember[]): GroupFacts {
  const state = groupState(members.map((m) => m.state));
  const dated = (xs: readonly (number | null)[]) => xs.filter((x): x is number => x !== null);
  const graces = dated(members.map((m) => m.graceEndsAtMs));
  const dues = dated(members.map((m) => m.dueAtMs));
  const goneBy = dated(members.map((m) => m.fullyGoneByMs));
  const complete = dated(members.map((m) => m.erasureCompleteAtMs));
  const byState = unknownForState(state);
  const memberUnknown = UNKNOWN_ORDER.find((u) => members.some((m) => m.goneByUnknown === u)) ?? (goneBy.length < members.length ? "NOT_RECORDED" : null);
  const unknown = byState ?? memberUnknown;
  return {
    state,
    graceEndsAtMs: graces.length > 0 ? Math.max(...graces) : null,
    dueAtMs: dues.length > 0 ? Math.min(...dues) : null,
    fullyGoneByMs: unknown === null ? Math.max(...goneBy) : null,
    goneByUnknown: unknown,
    erasureCompleteAtMs: unknown === null && complete.length === members.length ? Math.max(...complete) : null,
  };
}

/** A member's part in the group's Auth-account decision, as the finalize transaction (or the cells' finisher) reads it. */
export interface AccountFacts {
  requestId: string;
  /** The member's state in the primary database (its request of record's own state). */
  state: RequestState;
  /** The member's `authDeletion.state`: a member already took the account (INTENT, DONE), or none did. */
  authDeletion: "INTENT" | "DONE" | null;
  /**
   * The member's cell requests in its other governed databases (docs/decisions/0036-several-databases.md), each
   * state as read (null: not opened there yet); none for a member of one database.
   */
  cells: readonly (RequestState | null)[];
}

/**
 * Whether the group's user's Auth account goes now (the member whose round ends now has its state already the
 * round's end in `members`). For one request decision 0003 stands (purge/runner/finalize.ts, cells/accounts.ts): the
 * account goes at PURGED and at RETAINED_UNDER_HOLD. For a group it goes once, when the last member finishes and no
 * member keeps data under a hold in the primary: every member PURGED there, every member's every other database
 * done (`cellDone`: PURGED or RETAINED_UNDER_HOLD, decision 0003 across cells, as a request on its own), and none
 * has taken the account yet. A member kept under a hold resumes after the release, ends PURGED, and is then the
 * last; a cell finishing after every member is PURGED in the primary is then the last. Decided in a transaction of
 * the primary that reads every member's request, so that of two deciders at once exactly one sees no member taking
 * it; the cells are read outside it (a cell read as not done only delays, one read as done is done for good).
 */
export function groupAccountDue(members: readonly AccountFacts[]): boolean {
  return (
    members.length > 0 &&
    members.every((m) => m.state === "PURGED") &&
    members.every((m) => m.authDeletion === null) &&
    members.every((m) => m.cells.every((c) => cellDone(c)))
  );
}
