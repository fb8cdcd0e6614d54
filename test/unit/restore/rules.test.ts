import { describe, expect, it } from "vitest";
import { replayVerdict } from "../../../functions/src/restore/rules";
import { REQUEST_STATES, replayAction, replayedDeletionRequest } from "../../../functions/src/requests/rules/requests";
import { policyV1 } from "../../helpers/policy";

describe("erasure replay rules", () => {
  it("erases a subject with anything left to delete or mask, leaves one with nothing left, and never one the predicate would block", () => {
    expect(replayVerdict({ toDelete: 1, toMask: 0, blocked: 0 })).toBe("erase");
    expect(replayVerdict({ toDelete: 0, toMask: 1, blocked: 0 })).toBe("erase");
    expect(replayVerdict({ toDelete: 0, toMask: 0, blocked: 0 })).toBe("none");
    expect(replayVerdict({ toDelete: 3, toMask: 0, blocked: 1 })).toBe("blocked");
  });

  it("reopens the ledger's request by the state the restore has it in", () => {
    const table = Object.fromEntries(REQUEST_STATES.map((s) => [s, replayAction(s)]));
    expect(table).toEqual({
      // A tenant's closure the backup caught before its approval: the ledger's entry proves it was approved.
      AWAITING_APPROVAL: "end-grace",
      PENDING: "end-grace",
      CANCELLING: "closed",
      CANCELLED: "closed",
      PROCESSING: "take",
      BLOCKED: "take",
      RETAINED_UNDER_HOLD: "take",
      PURGED: "closed",
    });
    expect(replayAction(null)).toBe("create");
  });

  it("a replayed request has served its grace: it is due at once, under the ledger's id", () => {
    const r = replayedDeletionRequest({ requestId: "req-1", subject: { type: "tenant", tenantId: "t-acme" }, requestedBy: "r-3001", nowMs: 5_000 }, policyV1());
    // A tenant's closure opens PENDING, not AWAITING_APPROVAL: its two approvals are what the ledger records.
    expect(r).toMatchObject({ requestId: "req-1", state: "PENDING", source: "erasure-replay", graceEndsAtMs: 5_000, dueAtMs: 5_000, requestedAtMs: 5_000, approvedBy: "erasure-ledger", approvedAtMs: 5_000 });
    expect(r.timeline.map((t) => t.event)).toEqual(["REPLAYED"]);
  });
});
