// What a request across several governed databases reports, derived from its cells, and how each cell request
// follows the request of record (requests/rules/cells.ts). Pure.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { REQUEST_STATES, type RequestState } from "../../../functions/src/kernel/request-states";
import { accountsMayGo, cellsSettled, derivedGoneBy, derivedState, followAction, recordTaken, type CellRequestFacts } from "../../../functions/src/requests/rules/cells";
import { canMoveRequest, purgeMayTake } from "../../../functions/src/requests/rules/requests";

const cell = (name: string, state: RequestState | null, over: Partial<CellRequestFacts> = {}): CellRequestFacts => ({
  cell: name,
  state,
  fullyGoneByMs: null,
  fullyGoneByUnknown: null,
  erasureComplete: false,
  underHold: 0,
  blockedReason: null,
  awaitingRecord: false,
  ...over,
});

describe("the request of record's state, derived from its cells", () => {
  it("before the purge, the record decides", () => {
    expect(derivedState([cell(PRIMARY_CELL, "PENDING"), cell("analytics", "PENDING")])).toBe("PENDING");
    expect(derivedState([cell(PRIMARY_CELL, "AWAITING_APPROVAL"), cell("analytics", null)])).toBe("AWAITING_APPROVAL");
  });

  it("a cancel is CANCELLED only once every cell is; a cell never opened has nothing to restore", () => {
    expect(derivedState([cell(PRIMARY_CELL, "CANCELLED"), cell("analytics", "CANCELLING")])).toBe("CANCELLING");
    expect(derivedState([cell(PRIMARY_CELL, "CANCELLED"), cell("analytics", "PENDING")])).toBe("CANCELLING");
    expect(derivedState([cell(PRIMARY_CELL, "CANCELLING"), cell("analytics", "CANCELLED")])).toBe("CANCELLING");
    expect(derivedState([cell(PRIMARY_CELL, "CANCELLED"), cell("analytics", "CANCELLED"), cell("billing", null)])).toBe("CANCELLED");
  });

  it("once taken: BLOCKED if any cell is, PROCESSING until every cell is done, then RETAINED_UNDER_HOLD if any, else PURGED", () => {
    expect(derivedState([cell(PRIMARY_CELL, "PURGED"), cell("analytics", "PENDING")])).toBe("PROCESSING");
    expect(derivedState([cell(PRIMARY_CELL, "PURGED"), cell("analytics", null)])).toBe("PROCESSING");
    expect(derivedState([cell(PRIMARY_CELL, "PURGED"), cell("analytics", "BLOCKED")])).toBe("BLOCKED");
    expect(derivedState([cell(PRIMARY_CELL, "RETAINED_UNDER_HOLD"), cell("analytics", "PURGED")])).toBe("RETAINED_UNDER_HOLD");
    expect(derivedState([cell(PRIMARY_CELL, "PURGED"), cell("analytics", "RETAINED_UNDER_HOLD")])).toBe("RETAINED_UNDER_HOLD");
    expect(derivedState([cell(PRIMARY_CELL, "PURGED"), cell("analytics", "PURGED")])).toBe("PURGED");
  });

  it("PURGED only when every cell is, whatever the states (a property over every combination)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...REQUEST_STATES), fc.array(fc.option(fc.constantFrom(...REQUEST_STATES), { nil: null }), { minLength: 1, maxLength: 4 }), (record, others) => {
        const cells = [cell(PRIMARY_CELL, record), ...others.map((s, i) => cell(`c${i}`, s))];
        const state = derivedState(cells);
        if (state === "PURGED") expect(cells.every((c) => c.state === "PURGED")).toBe(true);
        if (cells.some((c) => c.state === "RETAINED_UNDER_HOLD") && recordTaken(record) && cells.every((c) => c.state === "PURGED" || c.state === "RETAINED_UNDER_HOLD")) expect(state).toBe("RETAINED_UNDER_HOLD");
        if (state === "CANCELLED") expect(cells.every((c) => c.state === null || c.state === "CANCELLED")).toBe(true);
      }),
    );
  });

  it("the date is the latest cell's once all are PURGED with one; otherwise none, with a reason", () => {
    const day = 86_400_000;
    const all = [cell(PRIMARY_CELL, "PURGED", { fullyGoneByMs: 10 * day }), cell("analytics", "PURGED", { fullyGoneByMs: 12 * day })];
    expect(derivedGoneBy(all, "PURGED")).toEqual({ fullyGoneByMs: 12 * day, unknown: null });
    expect(derivedGoneBy([all[0]!, cell("analytics", "PURGED", { fullyGoneByUnknown: "ARCHIVE_UNDER_HOLD" })], "PURGED")).toEqual({ fullyGoneByMs: null, unknown: "ARCHIVE_UNDER_HOLD" });
    expect(derivedGoneBy(all, "RETAINED_UNDER_HOLD")).toEqual({ fullyGoneByMs: null, unknown: "RETAINED_UNDER_HOLD" });
    expect(derivedGoneBy(all, "PROCESSING")).toEqual({ fullyGoneByMs: null, unknown: "NOT_ERASED_YET" });
    expect(derivedGoneBy(all, "CANCELLING")).toEqual({ fullyGoneByMs: null, unknown: "CANCELLED" });
  });

  it("the Auth account may go once every cell is PURGED or RETAINED_UNDER_HOLD (decision 0003 across databases)", () => {
    expect(accountsMayGo([cell(PRIMARY_CELL, "PURGED"), cell("analytics", "RETAINED_UNDER_HOLD")])).toBe(true);
    expect(accountsMayGo([cell(PRIMARY_CELL, "PURGED"), cell("analytics", "PROCESSING")])).toBe(false);
    expect(accountsMayGo([cell(PRIMARY_CELL, "PURGED"), cell("analytics", null)])).toBe(false);
    expect(accountsMayGo([cell(PRIMARY_CELL, "CANCELLED"), cell("analytics", "CANCELLED")])).toBe(false);
  });
});

describe("a cell request following its request of record", () => {
  const facts = (state: RequestState | null, over: { awaitingRecord?: boolean; softDeleteDone?: boolean } = {}) => ({ state, awaitingRecord: over.awaitingRecord ?? true, softDeleteDone: over.softDeleteDone ?? true });

  it("opens, approves, soft-deletes, cancels and releases as the record says", () => {
    expect(followAction("PENDING", facts(null))).toBe("open");
    expect(followAction("AWAITING_APPROVAL", facts(null))).toBe("open");
    expect(followAction("PROCESSING", facts(null))).toBe("open");
    expect(followAction("CANCELLED", facts(null))).toBe("tombstone");
    expect(followAction("PENDING", facts("AWAITING_APPROVAL"))).toBe("approve");
    expect(followAction("AWAITING_APPROVAL", facts("AWAITING_APPROVAL"))).toBe("none");
    expect(followAction("PENDING", facts("PENDING", { softDeleteDone: false }))).toBe("soft-delete");
    expect(followAction("PENDING", facts("PENDING"))).toBe("none");
    expect(followAction("CANCELLING", facts("PENDING"))).toBe("cancel");
    expect(followAction("CANCELLED", facts("CANCELLING"))).toBe("cancel");
    expect(followAction("CANCELLED", facts("CANCELLED"))).toBe("none");
    expect(followAction("PROCESSING", facts("PENDING"))).toBe("release");
    expect(followAction("PURGED", facts("PENDING", { awaitingRecord: false }))).toBe("none");
  });

  it("never releases a cell while the record can still be cancelled, and never cancels one the record let go", () => {
    fc.assert(
      fc.property(fc.constantFrom(...REQUEST_STATES), fc.option(fc.constantFrom(...REQUEST_STATES), { nil: null }), fc.boolean(), fc.boolean(), (record, state, awaitingRecord, softDeleteDone) => {
        const action = followAction(record, { state, awaitingRecord, softDeleteDone });
        if (action === "release") expect(recordTaken(record)).toBe(true);
        if (action === "cancel") expect(["CANCELLING", "CANCELLED"]).toContain(record);
        // Following never asks a cell request for a move its state machine refuses.
        if (action === "approve" && state) expect(canMoveRequest(state, "PENDING")).toBe(true);
      }),
    );
  });

  it("a cell request awaiting its record is never taken by a purge, whatever else it says", () => {
    for (const state of REQUEST_STATES) expect(purgeMayTake({ state, graceEndsAtMs: 0, heldAtGeneration: 3, awaitingRecord: true }, 1, 7)).toBe(false);
    expect(purgeMayTake({ state: "PENDING", graceEndsAtMs: 0, heldAtGeneration: undefined, awaitingRecord: false }, 1, 7)).toBe(true);
  });

  it("a taken record never goes back: no state it can reach from a taken one is cancellable", () => {
    const reachable = (from: RequestState): RequestState[] => REQUEST_STATES.filter((to) => canMoveRequest(from, to));
    for (const s of REQUEST_STATES.filter((x) => recordTaken(x))) for (const to of reachable(s)) expect(recordTaken(to), `${s} -> ${to}`).toBe(true);
  });

  it("is settled when every cell is opened and released and the accounts are done, or every cell is cancelled", () => {
    const open = [cell(PRIMARY_CELL, "PURGED"), cell("analytics", "PURGED")];
    expect(cellsSettled({ state: "PURGED", accountsDone: true }, open)).toBe(true);
    expect(cellsSettled({ state: "PURGED", accountsDone: false }, open)).toBe(false);
    expect(cellsSettled({ state: "PURGED", accountsDone: true }, [open[0]!, cell("analytics", "PENDING", { awaitingRecord: true })])).toBe(false);
    expect(cellsSettled({ state: "CANCELLED", accountsDone: false }, [cell(PRIMARY_CELL, "CANCELLED"), cell("analytics", "CANCELLED")])).toBe(true);
    expect(cellsSettled({ state: "CANCELLED", accountsDone: false }, [cell(PRIMARY_CELL, "CANCELLED"), cell("analytics", "CANCELLING")])).toBe(false);
  });
});
