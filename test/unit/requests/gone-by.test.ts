import { describe, expect, it } from "vitest";
import {
  completionDecision,
  goneByStatus,
  purgedGoneBy,
  recoveryWindowMs,
  unknownForState,
  withExportsExpiry,
  type ArchiveCopies,
  type CompletionFacts,
} from "../../../functions/src/requests/rules/gone-by";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { REQUEST_STATES } from "../../../functions/src/kernel/request-states";

const PURGED_AT = Date.parse("2026-07-01T00:00:00Z");
const DEFAULTS = { pitrDays: 7, backupRetentionDays: 35 };
const NONE: ArchiveCopies = { any: false, latestRetainUntilMs: null, held: false };

describe("the recovery window", () => {
  it("is the longer of point-in-time recovery and backup retention", () => {
    expect(recoveryWindowMs(DEFAULTS)).toBe(35 * DAY_MS);
    expect(recoveryWindowMs({ pitrDays: 7, backupRetentionDays: 0 })).toBe(7 * DAY_MS);
    expect(recoveryWindowMs({ pitrDays: 0, backupRetentionDays: 3 })).toBe(3 * DAY_MS);
    expect(recoveryWindowMs({ pitrDays: 0, backupRetentionDays: 0 })).toBe(0);
  });

  it("refuses a window that is not a whole number of days of at least 0", () => {
    expect(() => recoveryWindowMs({ pitrDays: -1, backupRetentionDays: 35 })).toThrow(/pitrDays must be a whole number/);
    expect(() => recoveryWindowMs({ pitrDays: 7, backupRetentionDays: 1.5 })).toThrow(/backupRetentionDays must be a whole number/);
  });
});

describe("a PURGED request's 'fully gone by' date", () => {
  it("is when the erasure finished plus the longer window, when it made no archive copy", () => {
    expect(purgedGoneBy(PURGED_AT, NONE, DEFAULTS)).toEqual({
      atMs: PURGED_AT + 35 * DAY_MS,
      basis: { purgedAtMs: PURGED_AT, pitrDays: 7, backupRetentionDays: 35, archivesRetainUntilMs: null },
    });
    // PITR only (no backups): 7 days. Neither: the erasure itself is the last copy.
    expect(purgedGoneBy(PURGED_AT, NONE, { pitrDays: 7, backupRetentionDays: 0 }).atMs).toBe(PURGED_AT + 7 * DAY_MS);
    expect(purgedGoneBy(PURGED_AT, NONE, { pitrDays: 0, backupRetentionDays: 0 }).atMs).toBe(PURGED_AT);
  });

  it("is no earlier than the end of the erasure's archive copies, plus the window their own backups live", () => {
    const sevenYears = PURGED_AT + 2557 * DAY_MS;
    expect(purgedGoneBy(PURGED_AT, { any: true, latestRetainUntilMs: sevenYears, held: false }, DEFAULTS)).toEqual({
      atMs: sevenYears + 35 * DAY_MS,
      basis: { purgedAtMs: PURGED_AT, pitrDays: 7, backupRetentionDays: 35, archivesRetainUntilMs: sevenYears },
    });
  });

  it("an archive copy that ended before the erasure finished does not move the date earlier", () => {
    const ended = PURGED_AT - 10 * DAY_MS;
    expect(purgedGoneBy(PURGED_AT, { any: true, latestRetainUntilMs: ended, held: false }, DEFAULTS)).toEqual({
      atMs: PURGED_AT + 35 * DAY_MS,
      basis: { purgedAtMs: PURGED_AT, pitrDays: 7, backupRetentionDays: 35, archivesRetainUntilMs: ended },
    });
  });

  it("has none while an archive copy is held, or when a copy is kept without an end", () => {
    expect(purgedGoneBy(PURGED_AT, { any: true, latestRetainUntilMs: PURGED_AT + DAY_MS, held: true }, DEFAULTS)).toEqual({ atMs: null, unknown: "ARCHIVE_UNDER_HOLD" });
    expect(purgedGoneBy(PURGED_AT, { any: true, latestRetainUntilMs: null, held: false }, DEFAULTS)).toEqual({ atMs: null, unknown: "ARCHIVE_KEPT_WITHOUT_END" });
  });

  it("checks the windows even when there is no date", () => {
    expect(() => purgedGoneBy(PURGED_AT, { ...NONE, held: true }, { pitrDays: -7, backupRetentionDays: 0 })).toThrow(/pitrDays/);
  });
});

describe("an erasure that deleted Cloud Storage objects", () => {
  it("is fully gone no earlier than the buckets' soft delete after it, and says so in its basis", () => {
    // A soft delete longer than the recovery windows decides the date; a shorter one does not move it.
    const long = purgedGoneBy(PURGED_AT, NONE, { pitrDays: 0, backupRetentionDays: 0 }, { softDeleteDays: 7 });
    expect(long).toEqual({ atMs: PURGED_AT + 7 * DAY_MS, basis: { purgedAtMs: PURGED_AT, pitrDays: 0, backupRetentionDays: 0, archivesRetainUntilMs: null, storageSoftDeleteDays: 7 } });
    expect(purgedGoneBy(PURGED_AT, NONE, DEFAULTS, { softDeleteDays: 7 }).atMs).toBe(PURGED_AT + 35 * DAY_MS);
    expect(purgedGoneBy(PURGED_AT, NONE, DEFAULTS, { softDeleteDays: 90 }).atMs).toBe(PURGED_AT + 90 * DAY_MS);
    // Without objects the basis names no soft delete: the date and basis are what they were before objects existed.
    expect(purgedGoneBy(PURGED_AT, NONE, DEFAULTS)).toEqual({ atMs: PURGED_AT + 35 * DAY_MS, basis: { purgedAtMs: PURGED_AT, pitrDays: 7, backupRetentionDays: 35, archivesRetainUntilMs: null } });
    expect(() => purgedGoneBy(PURGED_AT, NONE, DEFAULTS, { softDeleteDays: -1 })).toThrow(/softDeleteDays/);
  });
});

describe("what a request that is not PURGED says", () => {
  it("names why there is no date, for every state", () => {
    expect(Object.fromEntries(REQUEST_STATES.map((s) => [s, unknownForState(s)]))).toEqual({
      AWAITING_APPROVAL: "NOT_ERASED_YET",
      PENDING: "NOT_ERASED_YET",
      CANCELLING: "CANCELLED",
      CANCELLED: "CANCELLED",
      PROCESSING: "NOT_ERASED_YET",
      BLOCKED: "NOT_ERASED_YET",
      // Data is still live under a hold: no date can be promised.
      RETAINED_UNDER_HOLD: "RETAINED_UNDER_HOLD",
      PURGED: null,
    });
  });
});

describe("the status's view", () => {
  const stored = { fullyGoneByMs: PURGED_AT + 35 * DAY_MS, unknown: null, erasureCompleteAtMs: PURGED_AT + 36 * DAY_MS };

  it("a PURGED request reports its stored date and when ERASURE_COMPLETE was recorded", () => {
    expect(goneByStatus("PURGED", stored)).toEqual(stored);
    expect(goneByStatus("PURGED", { ...stored, erasureCompleteAtMs: null })).toEqual({ ...stored, erasureCompleteAtMs: null });
  });

  it("a PURGED request without a date reports the reason stored with it, or NOT_RECORDED when it predates dates", () => {
    expect(goneByStatus("PURGED", { fullyGoneByMs: null, unknown: "ARCHIVE_UNDER_HOLD", erasureCompleteAtMs: null })).toEqual({ fullyGoneByMs: null, unknown: "ARCHIVE_UNDER_HOLD", erasureCompleteAtMs: null });
    expect(goneByStatus("PURGED", { fullyGoneByMs: null, unknown: null, erasureCompleteAtMs: null })).toEqual({ fullyGoneByMs: null, unknown: "NOT_RECORDED", erasureCompleteAtMs: null });
  });

  it("any other state reports no date, whatever is stored", () => {
    expect(goneByStatus("RETAINED_UNDER_HOLD", stored)).toEqual({ fullyGoneByMs: null, unknown: "RETAINED_UNDER_HOLD", erasureCompleteAtMs: null });
    expect(goneByStatus("PENDING", stored)).toEqual({ fullyGoneByMs: null, unknown: "NOT_ERASED_YET", erasureCompleteAtMs: null });
  });
});

describe("when ERASURE_COMPLETE is recorded", () => {
  const due: CompletionFacts = { state: "PURGED", erasureComplete: false, fullyGoneByMs: PURGED_AT + 35 * DAY_MS, archiveCopiesLeft: false };
  const now = PURGED_AT + 35 * DAY_MS;

  it("once the date has passed (at the date itself too)", () => {
    expect(completionDecision(due, now)).toBe("RECORD");
    expect(completionDecision(due, now + DAY_MS)).toBe("RECORD");
  });

  it("never twice", () => {
    expect(completionDecision({ ...due, erasureComplete: true }, now)).toBe("ALREADY_RECORDED");
  });

  it("never before the date", () => {
    expect(completionDecision(due, now - 1)).toBe("NOT_DUE");
  });

  it("never for a request that is not PURGED, such as one retained under a hold", () => {
    expect(completionDecision({ ...due, state: "RETAINED_UNDER_HOLD" }, now)).toBe("NOT_PURGED");
    expect(completionDecision({ ...due, state: "PROCESSING" }, now)).toBe("NOT_PURGED");
  });

  it("never without a date", () => {
    expect(completionDecision({ ...due, fullyGoneByMs: null }, now)).toBe("NO_DATE");
  });

  it("not while an archive copy of the erasure is still in the database", () => {
    expect(completionDecision({ ...due, archiveCopiesLeft: true }, now)).toBe("ARCHIVE_COPY_LEFT");
  });
});

describe("access-export parts a build was still writing", () => {
  it("hold the date back to their expiry plus the recovery window, when later; no date stays no date", () => {
    const base = purgedGoneBy(PURGED_AT, NONE, DEFAULTS);
    expect(withExportsExpiry(base, null, DEFAULTS)).toEqual(base);
    const expiry = PURGED_AT + 7 * DAY_MS;
    expect(withExportsExpiry(base, expiry, DEFAULTS)).toEqual({ atMs: expiry + 35 * DAY_MS, basis: { ...(base as { basis: object }).basis, exportsExpireAtMs: expiry } });
    // An expiry long gone by the purge's own date moves nothing but is recorded.
    const early = withExportsExpiry(base, PURGED_AT - 40 * DAY_MS, DEFAULTS);
    expect(early.atMs).toBe(base.atMs);
    const unknown = purgedGoneBy(PURGED_AT, { any: true, latestRetainUntilMs: null, held: true }, DEFAULTS);
    expect(withExportsExpiry(unknown, expiry, DEFAULTS)).toEqual(unknown);
  });
});
