import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluateBrake, type BrakeLimits } from "../../../../functions/src/purge/rules/brake";
import {
  addDebit,
  allocate,
  budgetShards,
  classAllowance,
  homeShard,
  runAllowance,
  runKeyOf,
  shardPart,
  stillNeeded,
  type ShardUse,
} from "../../../../functions/src/purge/rules/run-budget";
import { requestTaskId } from "../../../../functions/src/purge/runner/tasks";

const limits: BrakeLimits = { brakeMaxDocuments: 100_000, brakeMaxShareOfClass: 0.5, brakeMinClassSize: 50 };
const empty = (): ShardUse => ({ total: 0, byClass: {} });

describe("classAllowance is evaluateBrake's class-share rule as a count", () => {
  it("allows the share of a class at least the minimum size, rounded down, and not one more", () => {
    expect(classAllowance(1000, limits)).toBe(500);
    expect(classAllowance(51, limits)).toBe(25);
    expect(evaluateBrake({ c: 25 }, { c: 51 }, limits).tripped).toBe(false);
    expect(evaluateBrake({ c: 26 }, { c: 51 }, limits).tripped).toBe(true);
  });

  it("lets a class below the minimum size (or not counted) lose fewer than the minimum", () => {
    expect(classAllowance(10, limits)).toBe(49);
    expect(classAllowance(0, limits)).toBe(49);
    expect(evaluateBrake({ c: 49 }, { c: 10 }, limits).tripped).toBe(false);
    expect(evaluateBrake({ c: 50 }, { c: 10 }, limits).tripped).toBe(true);
  });

  it("has no limit when the share is 1 or more", () => {
    expect(classAllowance(1000, { ...limits, brakeMaxShareOfClass: 1 })).toBeNull();
  });

  it("agrees with evaluateBrake at every size, share and minimum (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 0, max: 6000 }),
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        fc.integer({ min: 1, max: 200 }),
        (size, count, share, min) => {
          const l = { brakeMaxDocuments: Number.MAX_SAFE_INTEGER, brakeMaxShareOfClass: share, brakeMinClassSize: min };
          const allowed = classAllowance(size, l)!;
          expect(evaluateBrake({ c: count }, { c: size }, l).tripped).toBe(count > allowed);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("the run's budget, split into shards", () => {
  it("gives each shard a part, and the parts add up to the allowance exactly", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 1, max: 64 }), (allowance, shards) => {
        const parts = Array.from({ length: shards }, (_, k) => shardPart(allowance, shards, k)!);
        expect(parts.reduce((a, b) => a + b, 0)).toBe(allowance);
        expect(Math.max(...parts) - Math.min(...parts)).toBeLessThanOrEqual(1);
      }),
    );
    expect(shardPart(null, 4, 0)).toBeNull();
  });

  it("has one shard per concurrent task, at least 1 and at most 64", () => {
    expect([budgetShards(0), budgetShards(1), budgetShards(25), budgetShards(500)]).toEqual([1, 1, 25, 64]);
  });

  it("puts a unit in a stable home shard", () => {
    expect(homeShard("req-1", 25)).toBe(homeShard("req-1", 25));
    const homes = new Set(Array.from({ length: 500 }, (_, i) => homeShard(`req-${i}`, 25)));
    expect(homes.size).toBe(25);
  });

  it("takes a unit from its home shard when it fits, and spills over to the others when it does not", () => {
    const allowance = runAllowance({ "user-delete": 1_000_000 }, limits);
    const shards = 4;
    expect(allocate({ "user-delete": 30 }, [{ shard: 2, use: empty() }], allowance, shards)).toEqual([{ shard: 2, total: 30, byClass: { "user-delete": 30 } }]);
    // 25,000 per shard: 40,000 does not fit one, and does fit two.
    expect(allocate({ "user-delete": 40_000 }, [{ shard: 2, use: empty() }], allowance, shards)).toBeNull();
    expect(allocate({ "user-delete": 40_000 }, [0, 1, 2, 3].map((k) => ({ shard: k, use: empty() })), allowance, shards)).toEqual([
      { shard: 0, total: 25_000, byClass: { "user-delete": 25_000 } },
      { shard: 1, total: 15_000, byClass: { "user-delete": 15_000 } },
    ]);
    // Past the whole budget: nothing.
    expect(allocate({ "user-delete": 100_001 }, [0, 1, 2, 3].map((k) => ({ shard: k, use: empty() })), allowance, shards)).toBeNull();
    expect(allocate({}, [], allowance, shards)).toEqual([]);
  });

  it("fills the class with the least room first, so a loose class does not crowd it out of a shard", () => {
    // Total 10 (5 a shard), class a unlimited by share, class b at most 4 (2 a shard): a needs 6 and b 4.
    const allowance = { total: 10, byClass: { a: null, b: 4 }, unknownClass: 49 };
    const debits = allocate({ a: 6, b: 4 }, [0, 1].map((k) => ({ shard: k, use: empty() })), allowance, 2);
    expect(debits).toEqual([
      { shard: 0, total: 5, byClass: { b: 2, a: 3 } },
      { shard: 1, total: 5, byClass: { b: 2, a: 3 } },
    ]);
  });

  it("never admits a set of units that would trip the brake together, however they arrive (property)", () => {
    const sizes = { "user-delete": 20_000, sessions: 3_000, tiny: 30 };
    const l: BrakeLimits = { brakeMaxDocuments: 12_000, brakeMaxShareOfClass: 0.5, brakeMinClassSize: 50 };
    const allowance = runAllowance(sizes, l);
    const unitArb = fc.record({ "user-delete": fc.integer({ min: 0, max: 3000 }), sessions: fc.integer({ min: 0, max: 400 }), tiny: fc.integer({ min: 0, max: 5 }), other: fc.integer({ min: 0, max: 3 }) });
    fc.assert(
      fc.property(fc.array(unitArb, { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 8 }), (units, shardCount) => {
        const uses: ShardUse[] = Array.from({ length: shardCount }, empty);
        const admitted: Record<string, number> = {};
        const admittedUnits: boolean[] = [];
        units.forEach((need, i) => {
          const home = homeShard(`u-${i}`, shardCount);
          const order = [home, ...uses.map((_, k) => k).filter((k) => k !== home)];
          const debits = allocate(need, order.map((k) => ({ shard: k, use: uses[k]! })), allowance, shardCount);
          admittedUnits.push(debits !== null);
          if (!debits) return;
          for (const d of debits) uses[d.shard] = addDebit(uses[d.shard]!, d);
          for (const [c, n] of Object.entries(need)) admitted[c] = (admitted[c] ?? 0) + n;
          // The debits are the unit's need exactly.
          const taken: Record<string, number> = {};
          for (const d of debits) for (const [c, n] of Object.entries(d.byClass)) taken[c] = (taken[c] ?? 0) + n;
          expect(taken).toEqual(Object.fromEntries(Object.entries(need).filter(([, n]) => n > 0)));
        });
        // The one check that matters: what the run admitted does not trip the brake it is measured by.
        expect(evaluateBrake(admitted, sizes, l).tripped).toBe(false);
        for (let k = 0; k < shardCount; k++) expect(uses[k]!.total).toBeLessThanOrEqual(shardPart(l.brakeMaxDocuments, shardCount, k)!);
        // And it does admit: the first unit, when its home shard alone can hold it, always gets in.
        const first = units[0]!;
        const fitsHome = Object.values(first).reduce((a, b) => a + b, 0) <= shardPart(l.brakeMaxDocuments, shardCount, homeShard("u-0", shardCount))! &&
          Object.entries(first).every(([c, n]) => n <= shardPart(c in allowance.byClass ? allowance.byClass[c]! : allowance.unknownClass, shardCount, homeShard("u-0", shardCount))!);
        if (fitsHome) expect(admittedUnits[0]).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("debits a retried unit only for what its new plan adds", () => {
    expect(stillNeeded({ a: 10, b: 3 }, { a: 10, b: 5 })).toEqual({});
    expect(stillNeeded({ a: 12, b: 3 }, { a: 10 })).toEqual({ a: 2, b: 3 });
  });
});

describe("keys of a fanned-out run", () => {
  it("a run key per correlation id, the same on every attempt of one scheduled run", () => {
    expect(runKeyOf("schedule:2026-12-01T02:00:00Z")).toBe(runKeyOf("schedule:2026-12-01T02:00:00Z"));
    expect(runKeyOf("schedule:2026-12-01T02:00:00Z")).not.toBe(runKeyOf("schedule:2026-12-02T02:00:00Z"));
    expect(runKeyOf("x")).toMatch(/^[0-9a-f]{24}$/);
  });

  it("a task id per request and run: a retried run queues nothing twice, the next run queues again", () => {
    const a = requestTaskId({ requestId: "r1", runKey: "k1" });
    expect(requestTaskId({ requestId: "r1", runKey: "k1" })).toBe(a);
    expect(requestTaskId({ requestId: "r1", runKey: "k2" })).not.toBe(a);
    expect(requestTaskId({ requestId: "r2", runKey: "k1" })).not.toBe(a);
    // Cloud Tasks ids: letters, digits, hyphens and underscores, at most 500 characters.
    expect(a).toMatch(/^pr-[0-9a-f]{40}$/);
  });
});
