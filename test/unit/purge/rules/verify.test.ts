import { describe, expect, it } from "vitest";
import { emptyTally, MAX_HELD_LISTED, noteUnderHold, requestOutcome, verifyDeletePath, verifyMaskedPath, verifyRetainedPath } from "../../../../functions/src/purge/rules/verify";

const gone = { exists: false, presentFields: [], masked: false };
const there = { exists: true, presentFields: [], masked: false };

describe("manifest verification", () => {
  it("accepts gone paths and documented survivors", () => {
    const t = emptyTally();
    verifyDeletePath("a/1", gone, "deleted", new Set(), true, t);
    verifyDeletePath("a/2", there, "held", new Set(), true, t, { path: "a/2", holdId: "h-1", reasonCode: "LITIGATION" });
    verifyDeletePath("a/3", there, "deferred", new Set(["a/3/b/1"]), true, t);
    verifyRetainedPath("r/1", there, t);
    verifyRetainedPath("r/2", there, t, { path: "r/2", holdId: "h-2", reasonCode: "FRAUD_INVESTIGATION" });
    verifyMaskedPath("o/1", { exists: true, presentFields: [], masked: true }, null, t);
    verifyMaskedPath("o/2", { exists: true, presentFields: ["customerName"], masked: false }, { path: "o/2", holdId: "h-1", reasonCode: "LITIGATION" }, t);
    expect(t).toEqual({
      gone: 1,
      retained: 5,
      masked: 1,
      findings: [],
      underHoldCount: 3,
      underHold: [
        { path: "a/2", holdId: "h-1", reasonCode: "LITIGATION" },
        { path: "r/2", holdId: "h-2", reasonCode: "FRAUD_INVESTIGATION" },
        { path: "o/2", holdId: "h-1", reasonCode: "LITIGATION" },
      ],
    });
    expect(requestOutcome(t)).toBe("RETAINED_UNDER_HOLD");
  });

  it("ends a request PURGED, RETAINED_UNDER_HOLD or BLOCKED, and bounds the held list", () => {
    const t = emptyTally();
    verifyDeletePath("a/1", gone, "deleted", new Set(), true, t);
    verifyRetainedPath("r/1", there, t);
    expect(requestOutcome(t)).toBe("PURGED");
    for (let i = 0; i < MAX_HELD_LISTED + 5; i++) noteUnderHold(t, { path: `h/${i}`, holdId: "h", reasonCode: "LITIGATION" });
    expect([t.underHoldCount, t.underHold.length, requestOutcome(t)]).toEqual([MAX_HELD_LISTED + 5, MAX_HELD_LISTED, "RETAINED_UNDER_HOLD"]);
    verifyDeletePath("a/2", there, undefined, new Set(), true, t);
    expect(requestOutcome(t)).toBe("BLOCKED");
  });

  it("reports undocumented survivors, missing retained records and incomplete masks", () => {
    const t = emptyTally();
    verifyDeletePath("a/1", there, undefined, new Set(), true, t);
    verifyDeletePath("a/2", there, "deleted", new Set(), true, t);
    verifyDeletePath("a/3", there, "blocked", new Set(), true, t);
    verifyDeletePath("a/4", there, "deferred", new Set(["b/1"]), true, t);
    verifyRetainedPath("r/1", gone, t);
    verifyMaskedPath("o/1", { exists: true, presentFields: ["customerName"], masked: true }, null, t);
    verifyMaskedPath("o/2", gone, null, t);
    expect(t.findings).toEqual([
      { path: "a/1", problem: "STILL_PRESENT" },
      { path: "a/2", problem: "STILL_PRESENT" },
      { path: "a/3", problem: "BLOCKED" },
      { path: "a/4", problem: "STILL_PRESENT" },
      { path: "r/1", problem: "RETAINED_MISSING" },
      { path: "o/1", problem: "MASK_INCOMPLETE" },
      { path: "o/2", problem: "RETAINED_MISSING" },
    ]);
  });

  it("lets a sweep leave refused paths for its next run, but never an unexplained one", () => {
    const t = emptyTally();
    verifyDeletePath("a/1", there, "deferred", new Set(), false, t);
    verifyDeletePath("a/2", there, "blocked", new Set(), false, t);
    verifyDeletePath("a/3", there, undefined, new Set(), false, t);
    expect(t.findings).toEqual([{ path: "a/3", problem: "STILL_PRESENT" }]);
  });
});
