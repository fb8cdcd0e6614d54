import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allChunks, BatchCutter, chunkAt, needsFanOut, orderStages, stageKey, stepCount, stepsOf, type PurgeBatch } from "../../../../functions/src/purge/rules/batches";
import { documentDepth, isSameOrUnder } from "../../../../functions/src/kernel/paths";
import { cutInOrder } from "../../../helpers/batches";

/** Checks every ordering rule of batches in execution order; returns the execution position of each path. */
function checkPlan(batches: PurgeBatch[], input: { delete: string[]; external: string[]; mask: { path: string; fields: string[] }[] }, size: number): Map<string, number> {
  const where = new Map<string, number>();
  const ext = new Set(input.external);
  const stagesSeen: string[] = [];
  let seenExternal = false;
  let seenMask = false;
  batches.forEach((b, i) => {
    expect(b.items.length).toBeGreaterThan(0);
    expect(b.items.length).toBeLessThanOrEqual(size);
    // A stage's batches run together: once execution leaves a stage it never comes back to it.
    if (stagesSeen[stagesSeen.length - 1] !== b.stage) {
      expect(stagesSeen, `stage ${b.stage} is contiguous`).not.toContain(b.stage);
      stagesSeen.push(b.stage);
    }
    const depths = new Set(b.items.map((x) => documentDepth(x.path)));
    if (b.kind === "delete") {
      expect(depths.size, "a delete batch never mixes depths").toBe(1);
      const external = b.items.map((x) => ext.has(x.path));
      expect(new Set(external).size, "a batch never mixes own tree and external copies").toBe(1);
      if (external[0]) seenExternal = true;
      else expect(seenExternal, "own tree before external copies").toBe(false);
      expect(seenMask, "masking comes last").toBe(false);
    } else {
      seenMask = true;
    }
    for (const x of b.items) {
      if (where.has(x.path)) throw new Error(`${x.path} appears twice`);
      where.set(x.path, i);
    }
  });
  // Every path in exactly one batch.
  const expected = new Set([...input.delete, ...input.mask.map((m) => m.path)]);
  expect(new Set(where.keys())).toEqual(expected);
  // Children before parents, in different stages, for every ancestor/descendant pair in the same group.
  const stageOf = new Map(batches.flatMap((b) => b.items.map((x) => [x.path, b.stage] as const)));
  const own = input.delete.filter((p) => !ext.has(p));
  const sorted = [...own].sort();
  const violations: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && isSameOrUnder(sorted[j]!, sorted[i]!); j++) {
      if (!(where.get(sorted[j]!)! < where.get(sorted[i]!)!)) violations.push(`${sorted[j]} not before its ancestor ${sorted[i]}`);
      if (stageOf.get(sorted[j]!) === stageOf.get(sorted[i]!)) violations.push(`${sorted[j]} shares a stage with its ancestor ${sorted[i]}`);
    }
  }
  expect(violations).toEqual([]);
  return where;
}

describe("the streaming batch cutter", () => {
  it("orders the AtlasMart user manifest: deepest first, then external copies, then masks", () => {
    const input = {
      delete: [
        "tenants/t-acme/users/u-1001",
        "tenants/t-acme/orders/o-1001/messages/m-001",
        "sessions/s-1001",
        "sessions/s-1001/tokens/tk-1001",
        "userDirectory/u-1001",
        "activity/a-001",
      ],
      external: ["userDirectory/u-1001", "activity/a-001"],
      mask: [{ path: "tenants/t-acme/orders/o-1001", fields: ["shippingAddress", "customerName"] }],
    };
    const { batches, layout } = cutInOrder(input, 2);
    expect(batches.map((b) => [b.kind, b.stage, b.items.map((i) => i.path)])).toEqual([
      ["delete", "own-d03", ["tenants/t-acme/orders/o-1001/messages/m-001"]],
      ["delete", "own-d02", ["tenants/t-acme/users/u-1001", "sessions/s-1001/tokens/tk-1001"]],
      ["delete", "own-d01", ["sessions/s-1001"]],
      ["delete", "external-d01", ["userDirectory/u-1001", "activity/a-001"]],
      ["mask", "mask", ["tenants/t-acme/orders/o-1001"]],
    ]);
    expect(layout).toEqual([
      { key: "own-d03", kind: "delete", batches: 1 },
      { key: "own-d02", kind: "delete", batches: 1 },
      { key: "own-d01", kind: "delete", batches: 1 },
      { key: "external-d01", kind: "delete", batches: 1 },
      { key: "mask", kind: "mask", batches: 1 },
    ]);
    expect(batches[4]!.items[0]!.fields).toEqual(["customerName", "shippingAddress"]);
    checkPlan(batches, input, 2);
  });

  it("refuses a batch size that is not a positive integer", () => {
    expect(() => new BatchCutter(0, () => undefined)).toThrow(/batchSize/);
    expect(() => new BatchCutter(1.5, () => undefined)).toThrow(/batchSize/);
  });

  const segment = fc.constantFrom("a", "b", "c");
  const id = fc.integer({ min: 1, max: 6 }).map(String);
  const path = fc.array(fc.tuple(segment, id), { minLength: 1, maxLength: 4 }).map((pairs) => pairs.map(([c, i]) => `${c}/${i}`).join("/"));

  it("keeps every rule for random trees and batch sizes (property)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(path, { maxLength: 120 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 1000 }), (paths, size, seed) => {
        const del = paths.filter((_, i) => (i * 7 + seed) % 5 !== 0);
        const masked = paths.filter((_, i) => (i * 7 + seed) % 5 === 0).map((p) => ({ path: p, fields: ["f"] }));
        const external = del.filter((p) => p.startsWith("c/"));
        checkPlan(cutInOrder({ delete: del, external, mask: masked }, size).batches, { delete: del, external, mask: masked }, size);
      }),
      { numRuns: 300 },
    );
  });

  it("simulates a 100,000-document tenant: ordering holds and every step is covered once by the task chain", { timeout: 60_000 }, () => {
    const del: string[] = ["tenants/t-big"];
    for (let o = 0; o < 10_000; o++) {
      const order = `tenants/t-big/orders/o-${String(o).padStart(5, "0")}`;
      del.push(order);
      for (let m = 0; m < 9; m++) del.push(`${order}/messages/m-${m}`);
    }
    const external = Array.from({ length: 500 }, (_, i) => `userDirectory/u-${i}`);
    const input = { delete: [...del, ...external], external, mask: [] };
    const started = performance.now();
    const { batches, layout } = cutInOrder(input, 500);
    const elapsed = performance.now() - started;
    expect(input.delete.length).toBe(100_501);
    const where = checkPlan(batches, input, 500);
    // Messages (depth 3) all precede orders (depth 2), which precede the tenant, which precedes external copies.
    expect(Math.max(...[...where].filter(([p]) => p.includes("/messages/")).map(([, i]) => i))).toBeLessThan(
      Math.min(...[...where].filter(([p]) => /orders\/o-\d+$/.test(p)).map(([, i]) => i)),
    );
    expect(where.get("tenants/t-big")!).toBeLessThan(where.get("userDirectory/u-0")!);
    expect(elapsed).toBeLessThan(5_000);

    const total = stepCount(layout, 16);
    const chunks = allChunks(total, 8);
    expect(chunks[0]!.start).toBe(0);
    expect(chunks[chunks.length - 1]!.end).toBe(total);
    chunks.forEach((c, i) => {
      expect(c.end - c.start).toBeGreaterThan(0);
      expect(c.end - c.start).toBeLessThanOrEqual(8);
      if (i > 0) expect(c.start).toBe(chunks[i - 1]!.end);
    });
    // The steps cover every batch once, in execution order, and finalize is last.
    const steps = stepsOf(layout, 16);
    const covered = steps.flatMap((s) => (s.kind === "group" ? Array.from({ length: s.count }, (_, k) => `${s.stage}/${s.first + k}`) : []));
    expect(covered).toEqual(batches.map((b) => `${b.stage}/${b.seq}`));
    expect(steps[total - 1]).toEqual({ kind: "finalize" });
    expect(steps.filter((s) => s.kind === "finalize")).toHaveLength(1);
  });
});

describe("object batches", () => {
  it("are one flat stage each (planned and late), of kind objects, and run first: objects before the documents they are held with", () => {
    const batches: PurgeBatch[] = [];
    const cutter = new BatchCutter(2, (b) => batches.push(b));
    cutter.add("own", { path: "tenants/t/users/u" });
    cutter.add("objects", { path: "gs://b/tenants/t/users/u/a", version: "1", heldWith: "tenants/t/users/u" });
    cutter.add("objects", { path: "gs://b/tenants/t/users/u/b/c/d", version: "1", heldWith: "tenants/t/users/u" });
    cutter.add("late-objects", { path: "gs://b/tenants/t/users/u/e", version: "2", heldWith: "tenants/t/users/u" });
    const layout = cutter.end();
    expect(layout.map((s) => [s.key, s.kind, s.batches])).toEqual([
      ["objects", "objects", 1],
      ["own-d02", "delete", 1],
      ["late-objects", "objects", 1],
    ]);
    expect(stageKey("objects", 7)).toBe("objects");
    expect(stepsOf(layout, 16)[0]).toMatchObject({ kind: "group", stage: "objects", batchKind: "objects" });
  });
});

describe("steps and chunks", () => {
  it("cuts each stage into groups of batches, one step each, and ends with finalize", () => {
    const layout = [
      { key: "own-d02", kind: "delete" as const, batches: 5 },
      { key: "own-d01", kind: "delete" as const, batches: 1 },
      { key: "mask", kind: "mask" as const, batches: 2 },
    ];
    expect(stepsOf(layout, 2)).toEqual([
      { kind: "group", stage: "own-d02", batchKind: "delete", first: 0, count: 2 },
      { kind: "group", stage: "own-d02", batchKind: "delete", first: 2, count: 2 },
      { kind: "group", stage: "own-d02", batchKind: "delete", first: 4, count: 1 },
      { kind: "group", stage: "own-d01", batchKind: "delete", first: 0, count: 1 },
      { kind: "group", stage: "mask", batchKind: "mask", first: 0, count: 2 },
      { kind: "finalize" },
    ]);
    expect(stepCount([], 4)).toBe(1);
    expect(() => stepsOf(layout, 0)).toThrow(/groupSize/);
  });

  it("orders stages: own data deepest first, then external copies, then late finds, then masks", () => {
    const keys = [stageKey("mask", 0), stageKey("external", 1), stageKey("own", 1), stageKey("late", 3), stageKey("own", 12), stageKey("external", 2), stageKey("own", 3)];
    expect(orderStages(keys.map((key) => ({ key, kind: "delete", batches: 1 }))).map((s) => s.key)).toEqual(["own-d12", "own-d03", "own-d01", "external-d02", "external-d01", "late-d03", "mask"]);
    expect(() => orderStages([{ key: "own-d01", kind: "delete", batches: 1 }, { key: "bogus", kind: "delete", batches: 1 }])).toThrow(/unknown purge stage/);
  });

  it("numbers a later pass's batches on from the stages it is given", () => {
    const cut: PurgeBatch[] = [];
    const cutter = new BatchCutter(2, (b) => cut.push(b), [{ key: "late-d02", kind: "delete", batches: 3 }]);
    for (const p of ["a/1/b/1", "a/1/b/2", "a/1/b/3", "a/2"]) cutter.add("late", { path: p });
    expect(cutter.end()).toEqual([
      { key: "late-d02", kind: "delete", batches: 5 },
      { key: "late-d01", kind: "delete", batches: 1 },
    ]);
    expect(cut.map((b) => [b.stage, b.seq])).toEqual([
      ["late-d02", 3],
      ["late-d02", 4],
      ["late-d01", 0],
    ]);
  });

  it("cuts chunks from any start and decides fan-out on the path count", () => {
    expect(chunkAt(5, 7, 4)).toEqual({ start: 5, end: 7 });
    expect(() => chunkAt(7, 7, 4)).toThrow(/outside/);
    expect(() => chunkAt(0, 7, 0)).toThrow(/stepsPerChunk/);
    expect(needsFanOut(5000, 5000)).toBe(false);
    expect(needsFanOut(5001, 5000)).toBe(true);
  });
});
