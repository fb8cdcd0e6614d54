/**
 * A request group's pure rules (functions/src/requests/rules/group.ts): who its members are and which one leads,
 * the state and dates the user is told, and when the group's Auth account goes.
 */
import { describe, expect, it } from "vitest";
import { DomainError } from "../../../functions/src/kernel/errors";
import { REQUEST_STATES, type RequestState } from "../../../functions/src/kernel/request-states";
import { GROUP_MAX_SCOPES, groupAccountDue, groupFacts, groupState, groupSubjects, type GroupMember } from "../../../functions/src/requests/rules/group";
import { subjectFromRecord, subjectRecord } from "../../../functions/src/requests/rules/requests";
import { subjectView } from "../../../functions/src/requests/rules/subject-view";

const DAY = 86_400_000;

function member(state: RequestState, over: Partial<GroupMember> = {}): GroupMember {
  return { requestId: `r-${state}`, tenantId: "w", state, graceEndsAtMs: 7 * DAY, dueAtMs: 30 * DAY, fullyGoneByMs: null, goneByUnknown: null, erasureCompleteAtMs: null, ...over };
}

describe("a request group's members", () => {
  it("one per scope, sorted; the first leads and erases the uid-only entries, the others are scopedOnly", () => {
    expect(groupSubjects("u-1", ["w-b", "w-a", "w-c", "w-a"])).toEqual([
      { type: "user", uid: "u-1", tenantId: "w-a" },
      { type: "user", uid: "u-1", tenantId: "w-b", scopedOnly: true },
      { type: "user", uid: "u-1", tenantId: "w-c", scopedOnly: true },
    ]);
  });

  it("one scope, or none (an app without scopes), is a request on its own", () => {
    expect(groupSubjects("u-1", ["w-a"])).toEqual([{ type: "user", uid: "u-1", tenantId: "w-a" }]);
    expect(groupSubjects("u-1", [""])).toEqual([{ type: "user", uid: "u-1", tenantId: "" }]);
    expect(groupSubjects("u-1", [])).toEqual([{ type: "user", uid: "u-1", tenantId: "" }]);
  });

  it("is bounded: past GROUP_MAX_SCOPES the request is refused with TOO_MANY_SCOPES", () => {
    const scopes = (n: number) => Array.from({ length: n }, (_, i) => `w-${String(i).padStart(3, "0")}`);
    expect(groupSubjects("u-1", scopes(GROUP_MAX_SCOPES))).toHaveLength(GROUP_MAX_SCOPES);
    let err: unknown;
    try {
      groupSubjects("u-1", scopes(GROUP_MAX_SCOPES + 1));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ kind: "failed-precondition", reason: "TOO_MANY_SCOPES", details: { limit: GROUP_MAX_SCOPES } });
  });

  it("a member's subject is stored and read back as it was, scopedOnly included (absent, never false, otherwise)", () => {
    for (const s of groupSubjects("u-1", ["w-a", "w-b"])) expect(subjectFromRecord(subjectRecord(s))).toEqual(s);
    expect(subjectRecord({ type: "user", uid: "u-1", tenantId: "w-a" })).toEqual({ subjectType: "user", uid: "u-1", tenantId: "w-a" });
    expect(subjectFromRecord({ subjectType: "user", uid: "u-1", tenantId: "w-a", scopedOnly: false })).toEqual({ type: "user", uid: "u-1", tenantId: "w-a" });
    expect(subjectFromRecord({ subjectType: "tenant", tenantId: "w-a", uid: 7 })).toEqual({ type: "tenant", tenantId: "w-a" });
    expect(subjectView({ type: "user", uid: "u-1", tenantId: "w-a", scopedOnly: true })).toEqual({ type: "user", uid: "u-1", scope: "w-a" });
    expect(subjectView({ type: "user", uid: "u-1", tenantId: "" })).toEqual({ type: "user", uid: "u-1", scope: null });
    expect(subjectView({ type: "tenant", tenantId: "w-a" })).toEqual({ type: "scope", id: "w-a" });
  });
});

describe("a request group's state, derived from its members'", () => {
  it("is the members' state when they agree", () => {
    for (const s of REQUEST_STATES) expect(groupState([s, s, s])).toBe(s);
  });

  it("PURGED only when every member is; RETAINED_UNDER_HOLD when any finished member keeps held data", () => {
    expect(groupState(["PURGED", "PURGED"])).toBe("PURGED");
    expect(groupState(["PURGED", "RETAINED_UNDER_HOLD"])).toBe("RETAINED_UNDER_HOLD");
    expect(groupState(["RETAINED_UNDER_HOLD", "PURGED", "PURGED"])).toBe("RETAINED_UNDER_HOLD");
  });

  it("owed erasure wins over finished: BLOCKED first, then PROCESSING (a member started, or one finished beside one waiting)", () => {
    expect(groupState(["PURGED", "BLOCKED", "PROCESSING"])).toBe("BLOCKED");
    expect(groupState(["PURGED", "PROCESSING"])).toBe("PROCESSING");
    expect(groupState(["PENDING", "PROCESSING"])).toBe("PROCESSING");
    expect(groupState(["PENDING", "PURGED"])).toBe("PROCESSING");
    expect(groupState(["PENDING", "RETAINED_UNDER_HOLD"])).toBe("PROCESSING");
  });

  it("a cancel under way (a member CANCELLING, or CANCELLED beside another state) is CANCELLING", () => {
    expect(groupState(["CANCELLED", "CANCELLING"])).toBe("CANCELLING");
    expect(groupState(["CANCELLED", "PENDING"])).toBe("CANCELLING");
    expect(groupState(["CANCELLED", "CANCELLED"])).toBe("CANCELLED");
  });

  it("every pair of states gives a state of the request state machine", () => {
    for (const a of REQUEST_STATES) for (const b of REQUEST_STATES) expect(REQUEST_STATES).toContain(groupState([a, b]));
    expect(() => groupState([])).toThrow();
  });
});

describe("a request group's dates and 'fully gone by'", () => {
  it("shares the members' grace end (the latest) and the most urgent due date", () => {
    const f = groupFacts([member("PENDING", { graceEndsAtMs: 7 * DAY, dueAtMs: 31 * DAY }), member("PENDING", { graceEndsAtMs: 8 * DAY, dueAtMs: 30 * DAY })]);
    expect(f).toMatchObject({ state: "PENDING", graceEndsAtMs: 8 * DAY, dueAtMs: 30 * DAY, fullyGoneByMs: null, goneByUnknown: "NOT_ERASED_YET" });
  });

  it("is fully gone by the latest member's date, once all are PURGED with one; ERASURE_COMPLETE when the last recorded it", () => {
    const purged = (goneBy: number, complete: number | null) => member("PURGED", { fullyGoneByMs: goneBy, erasureCompleteAtMs: complete });
    expect(groupFacts([purged(40 * DAY, null), purged(42 * DAY, null)])).toMatchObject({ state: "PURGED", fullyGoneByMs: 42 * DAY, goneByUnknown: null, erasureCompleteAtMs: null });
    expect(groupFacts([purged(40 * DAY, 41 * DAY), purged(42 * DAY, 43 * DAY)])).toMatchObject({ fullyGoneByMs: 42 * DAY, erasureCompleteAtMs: 43 * DAY });
  });

  it("has no date while any member keeps data under a hold, or has none of its own", () => {
    expect(groupFacts([member("PURGED", { fullyGoneByMs: 40 * DAY }), member("RETAINED_UNDER_HOLD", { goneByUnknown: "RETAINED_UNDER_HOLD" })])).toMatchObject({
      state: "RETAINED_UNDER_HOLD",
      fullyGoneByMs: null,
      goneByUnknown: "RETAINED_UNDER_HOLD",
    });
    expect(groupFacts([member("PURGED", { fullyGoneByMs: 40 * DAY }), member("PURGED", { goneByUnknown: "ARCHIVE_UNDER_HOLD" })])).toMatchObject({
      state: "PURGED",
      fullyGoneByMs: null,
      goneByUnknown: "ARCHIVE_UNDER_HOLD",
    });
    expect(groupFacts([member("PURGED", { fullyGoneByMs: 40 * DAY }), member("PURGED")])).toMatchObject({ fullyGoneByMs: null, goneByUnknown: "NOT_RECORDED" });
    expect(groupFacts([member("CANCELLED"), member("CANCELLED")])).toMatchObject({ goneByUnknown: "CANCELLED" });
  });
});

describe("the Auth account of a user erased by a request group", () => {
  const m = (state: RequestState, authDeletion: "INTENT" | "DONE" | null = null, cells: (RequestState | null)[] = []) => ({ requestId: `r-${state}`, state, authDeletion, cells });

  it("goes when the last member ends PURGED and no member keeps data under a hold, once", () => {
    expect(groupAccountDue([m("PURGED"), m("PURGED")])).toBe(true);
    expect(groupAccountDue([m("PURGED"), m("RETAINED_UNDER_HOLD")])).toBe(false);
    expect(groupAccountDue([m("PURGED"), m("PROCESSING")])).toBe(false);
    expect(groupAccountDue([m("PURGED"), m("BLOCKED")])).toBe(false);
    expect(groupAccountDue([m("PURGED"), m("PENDING")])).toBe(false);
    // Taken already (a member recorded the intent, or the outcome): never a second time.
    expect(groupAccountDue([m("PURGED", "INTENT"), m("PURGED")])).toBe(false);
    expect(groupAccountDue([m("PURGED", "DONE"), m("PURGED")])).toBe(false);
    expect(groupAccountDue([])).toBe(false);
  });

  it("waits for every member's other databases: each cell PURGED or RETAINED_UNDER_HOLD (decision 0003 across cells)", () => {
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("PURGED", null, ["PURGED"])])).toBe(true);
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("PURGED", null, ["RETAINED_UNDER_HOLD"])])).toBe(true);
    // One member's second database still to erase, blocked, or not opened there yet: the account stays.
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("PURGED", null, ["PENDING"])])).toBe(false);
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("PURGED", null, ["PROCESSING"])])).toBe(false);
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("PURGED", null, ["BLOCKED"])])).toBe(false);
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("PURGED", null, [null])])).toBe(false);
    expect(groupAccountDue([m("PURGED", null, ["PURGED", "PURGED"]), m("PURGED", null, ["PURGED", "PENDING"])])).toBe(false);
    // A member of one database beside one of two: only the second's cells wait.
    expect(groupAccountDue([m("PURGED"), m("PURGED", null, ["PURGED"])])).toBe(true);
    // Every cell done but a member not PURGED in the primary, or the account taken: no.
    expect(groupAccountDue([m("PURGED", null, ["PURGED"]), m("RETAINED_UNDER_HOLD", null, ["PURGED"])])).toBe(false);
    expect(groupAccountDue([m("PURGED", "INTENT", ["PURGED"]), m("PURGED", null, ["PURGED"])])).toBe(false);
  });
});
