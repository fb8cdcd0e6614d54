import { describe, expect, it } from "vitest";
import { brakeRunKey, evaluateBrake } from "../../functions/src/domain/purge-brake";

const limits = { brakeMaxDocuments: 100, brakeMaxShareOfClass: 0.5, brakeMinClassSize: 50 };

describe("evaluateBrake", () => {
  it("passes a run within both limits", () => {
    expect(evaluateBrake({ "event-90d": 20, "user-delete": 5 }, { "event-90d": 60, "user-delete": 1000 }, limits)).toEqual({ tripped: false, total: 25, violations: [] });
  });

  it("trips on the total count, whatever the shares", () => {
    const r = evaluateBrake({ "user-delete": 101 }, { "user-delete": 100_000 }, limits);
    expect(r.tripped).toBe(true);
    expect(r.violations).toEqual([{ kind: "TOTAL", retentionClass: null, count: 101, classSize: null, limit: 100 }]);
  });

  it("trips on the share of a class large enough to count, and only above the share", () => {
    expect(evaluateBrake({ "event-90d": 31 }, { "event-90d": 60 }, limits).violations).toEqual([
      { kind: "CLASS_SHARE", retentionClass: "event-90d", count: 31, classSize: 60, limit: 0.5 },
    ]);
    expect(evaluateBrake({ "event-90d": 30 }, { "event-90d": 60 }, limits).tripped).toBe(false);
  });

  it("exempts small classes from the share rule", () => {
    expect(evaluateBrake({ "session-30d": 49 }, { "session-30d": 49 }, limits).tripped).toBe(false);
    // An unknown size counts as at least what is deleted: 60 of "0" is 60 of 60.
    expect(evaluateBrake({ "session-30d": 60 }, {}, limits).tripped).toBe(true);
  });
});

describe("brakeRunKey", () => {
  it("names exactly one deletion set, independent of unit order", () => {
    const a = { unitKey: "req-1", manifestHash: "h1" };
    const b = { unitKey: "sweep-events", manifestHash: "h2" };
    expect(brakeRunKey([a, b])).toBe(brakeRunKey([b, a]));
    expect(brakeRunKey([a, b])).not.toBe(brakeRunKey([a, { ...b, manifestHash: "h3" }]));
    expect(brakeRunKey([a, b])).toMatch(/^[0-9a-f]{32}$/);
  });
});
