import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allChunks, chunkAt, needsFanOut, planPurgeBatches, stepAt, stepCount, type PurgeBatch } from "../../../../functions/src/purge/rules/batches";
import { documentDepth, isSameOrUnder } from "../../../../functions/src/kernel/paths";

/** Checks every ordering rule of a batch plan; returns the batch index of each path. */
function checkPlan(batches: PurgeBatch[], input: { delete: string[]; external: string[]; mask: { path: string; fields: string[] }[] }, size: number): Map<string, number> {
  const where = new Map<string, number>();
  const ext = new Set(input.external);
  let lastStage = -1;
  let seenExternal = false;
  let seenMask = false;
  batches.forEach((b, i) => {
    expect(b.index).toBe(i);
    expect(b.items.length).toBeGreaterThan(0);
    expect(b.items.length).toBeLessThanOrEqual(size);
    expect(b.stage).toBeGreaterThanOrEqual(lastStage);
    lastStage = b.stage;
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
      expect(where.has(x.path), `${x.path} appears once`).toBe(false);
      where.set(x.path, i);
    }
  });
  // Every path in exactly one batch.
  const expected = new Set([...input.delete, ...input.mask.map((m) => m.path)]);
  expect(new Set(where.keys())).toEqual(expected);
  // Children before parents, for every ancestor/descendant pair in the same group.
  const own = input.delete.filter((p) => !ext.has(p));
  const sorted = [...own].sort();
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && isSameOrUnder(sorted[j]!, sorted[i]!); j++) {
      expect(where.get(sorted[j]!)!, `${sorted[j]} before its ancestor ${sorted[i]}`).toBeLessThan(where.get(sorted[i]!)!);
    }
  }
  return where;
}

describe("planPurgeBatches", () => {
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
    const batches = planPurgeBatches(input, 2);
    expect(batches.map((b) => [b.kind, b.stage, b.items.map((i) => i.path)])).toEqual([
      ["delete", 0, ["tenants/t-acme/orders/o-1001/messages/m-001"]],
      ["delete", 1, ["sessions/s-1001/tokens/tk-1001", "tenants/t-acme/users/u-1001"]],
      ["delete", 2, ["sessions/s-1001"]],
      ["delete", 3, ["activity/a-001", "userDirectory/u-1001"]],
      ["mask", 4, ["tenants/t-acme/orders/o-1001"]],
    ]);
    expect(batches[4]!.items[0]!.fields).toEqual(["customerName", "shippingAddress"]);
    checkPlan(batches, input, 2);
  });

  it("refuses a batch size that is not a positive integer", () => {
    expect(() => planPurgeBatches({ delete: ["a/1"], external: [], mask: [] }, 0)).toThrow(/batchSize/);
    expect(() => planPurgeBatches({ delete: ["a/1"], external: [], mask: [] }, 1.5)).toThrow(/batchSize/);
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
        checkPlan(planPurgeBatches({ delete: del, external, mask: masked }, size), { delete: del, external, mask: masked }, size);
      }),
      { numRuns: 300 },
    );
  });

  it("simulates a 100,000-document tenant: ordering holds and every step is covered once by the task chain", { timeout: 30_000 }, () => {
    const del: string[] = ["tenants/t-big"];
    for (let o = 0; o < 10_000; o++) {
      const order = `tenants/t-big/orders/o-${String(o).padStart(5, "0")}`;
      del.push(order);
      for (let m = 0; m < 9; m++) del.push(`${order}/messages/m-${m}`);
    }
    const external = Array.from({ length: 500 }, (_, i) => `userDirectory/u-${i}`);
    const input = { delete: [...del, ...external], external, mask: [] };
    const started = performance.now();
    const batches = planPurgeBatches(input, 500);
    const elapsed = performance.now() - started;
    expect(input.delete.length).toBe(100_501);
    const where = checkPlan(batches, input, 500);
    // Messages (depth 3) all precede orders (depth 2), which precede the tenant, which precedes external copies.
    expect(Math.max(...[...where].filter(([p]) => p.includes("/messages/")).map(([, i]) => i))).toBeLessThan(
      Math.min(...[...where].filter(([p]) => /orders\/o-\d+$/.test(p)).map(([, i]) => i)),
    );
    expect(where.get("tenants/t-big")!).toBeLessThan(where.get("userDirectory/u-0")!);
    expect(elapsed).toBeLessThan(5_000);

    const total = stepCount(batches.length);
    const chunks = allChunks(total, 40);
    expect(chunks[0]!.start).toBe(0);
    expect(chunks[chunks.length - 1]!.end).toBe(total);
    chunks.forEach((c, i) => {
      expect(c.end - c.start).toBeGreaterThan(0);
      expect(c.end - c.start).toBeLessThanOrEqual(40);
      if (i > 0) expect(c.start).toBe(chunks[i - 1]!.end);
    });
    // Every decision is written (mark steps) before the first destructive step, and finalize is last.
    const kinds = Array.from({ length: total }, (_, s) => stepAt(s, batches.length).kind);
    expect(kinds.lastIndexOf("mark")).toBeLessThan(kinds.indexOf("execute"));
    expect(kinds[total - 1]).toBe("finalize");
    expect(kinds.filter((k) => k === "finalize")).toHaveLength(1);
  });
});

describe("steps and chunks", () => {
  it("maps steps to mark, execute and finalize", () => {
    expect(stepCount(3)).toBe(7);
    expect([0, 1, 2, 3, 4, 5, 6].map((s) => stepAt(s, 3))).toEqual([
      { kind: "mark", batch: 0 },
      { kind: "mark", batch: 1 },
      { kind: "mark", batch: 2 },
      { kind: "execute", batch: 0 },
      { kind: "execute", batch: 1 },
      { kind: "execute", batch: 2 },
      { kind: "finalize" },
    ]);
    expect(stepAt(0, 0)).toEqual({ kind: "finalize" });
    expect(() => stepAt(7, 3)).toThrow(/outside/);
  });

  it("cuts chunks from any start and decides fan-out on the path count", () => {
    expect(chunkAt(5, 7, 4)).toEqual({ start: 5, end: 7 });
    expect(() => chunkAt(7, 7, 4)).toThrow(/outside/);
    expect(() => chunkAt(0, 7, 0)).toThrow(/stepsPerChunk/);
    expect(needsFanOut(5000, 5000)).toBe(false);
    expect(needsFanOut(5001, 5000)).toBe(true);
  });
});
