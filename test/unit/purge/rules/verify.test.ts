import { describe, expect, it } from "vitest";
import { emptyTally, MAX_HELD_LISTED, noteUnderHold, requestOutcome, verifyArchivedPath, verifyDeletePath, verifyMaskedPath, verifyObjectPath, verifyRetainedPath } from "../../../../functions/src/purge/rules/verify";

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
      archived: 0,
      retained: 5,
      masked: 1,
      findings: [],
      underHoldCount: 3,
      underHold: [
        { path: "a/2", holdId: "h-1", reasonCode: "LITIGATION" },
        { path: "r/2", holdId: "h-2", reasonCode: "FRAUD_INVESTIGATION" },
        { path: "o/2", holdId: "h-1", reasonCode: "LITIGATION" },
      ],
      keepers: ["h-1", "h-2"],
      keptWithoutHoldId: 0,
      objectsDeleted: 0,
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
    // The holds that keep paths are all known, listed or not: finalize checks each of them still stands.
    noteUnderHold(t, { path: "h/late", holdId: "h-late", reasonCode: "LITIGATION" });
    noteUnderHold(t, { path: "h/marked", holdId: null, reasonCode: "LEGAL_HOLD" });
    expect([t.keepers, t.keptWithoutHoldId, t.underHold.length]).toEqual([["h", "h-late"], 1, MAX_HELD_LISTED]);
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

  it("a record deleted after archiving verifies only while its archive copy is there, verified and intact", () => {
    const t = emptyTally();
    const copy = { exists: true, sourcePath: "o/1", verified: true, recordedSha256: "a".repeat(64), dataSha256: "a".repeat(64) };
    verifyArchivedPath("o/1", true, copy, t);
    // The original still there (held, say): its copy is not the record yet, so it is not judged.
    verifyArchivedPath("o/2", false, { ...copy, exists: false }, t);
    verifyArchivedPath("o/3", true, { ...copy, exists: false }, t);
    verifyArchivedPath("o/4", true, { ...copy, sourcePath: "o/4", dataSha256: "b".repeat(64) }, t);
    verifyArchivedPath("o/5", true, { ...copy, sourcePath: "o/5", verified: false }, t);
    verifyArchivedPath("o/6", true, copy, t);
    expect(t.archived).toBe(1);
    expect(t.findings).toEqual(["o/3", "o/4", "o/5", "o/6"].map((path) => ({ path, problem: "ARCHIVE_NOT_VERIFIED" })));
    expect(requestOutcome(t)).toBe("BLOCKED");
  });
});

describe("an object batch's verification", () => {
  const P = "gs://b/users/u-1/a.jpg";

  it("the decided generation gone (deleted, already gone, or replaced by a newer upload) is done; still there is a finding", () => {
    const t = emptyTally();
    verifyObjectPath(P, "7", { exists: false, generation: null }, "deleted", t);
    verifyObjectPath(P, "7", { exists: true, generation: "9" }, "changed", t);
    verifyObjectPath(P, "7", { exists: false, generation: null }, "gone", t);
    expect(t).toMatchObject({ gone: 3, objectsDeleted: 1, findings: [] });
    verifyObjectPath(P, "7", { exists: true, generation: "7" }, "deleted", t);
    verifyObjectPath(P, "7", { exists: true, generation: "7" }, undefined, t);
    expect(t.findings).toEqual([
      { path: P, problem: "STILL_PRESENT" },
      { path: P, problem: "STILL_PRESENT" },
    ]);
  });

  it("a held object still there is kept under its hold", () => {
    const t = emptyTally();
    verifyObjectPath(P, "7", { exists: true, generation: "7" }, "held", t, { path: P, holdId: "h1", reasonCode: "LITIGATION" });
    expect(t).toMatchObject({ retained: 1, underHoldCount: 1, keepers: ["h1"], findings: [] });
    expect(requestOutcome(t)).toBe("RETAINED_UNDER_HOLD");
  });
});
