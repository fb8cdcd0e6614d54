import { describe, expect, it } from "vitest";
import { batchHash, ManifestBuilder, recordProblem, type PlannedBatch } from "../../../../functions/src/purge/rules/manifest";

const decision = { fenceGeneration: 3, policyVersion: "v1", decidedAtMs: 1_000 };

function builder(batchSize: number) {
  const batches: PlannedBatch[] = [];
  const retained: number[] = [];
  const b = new ManifestBuilder({ unitKey: "req-1", planId: "p1xabc", batchSize, decision, onBatch: (x) => batches.push(x), onRetained: (i) => retained.push(i) });
  return { b, batches, retained };
}

describe("the streaming manifest", () => {
  it("hands each batch out as soon as it is full, so only the open batches stay in memory", () => {
    const { b, batches } = builder(450);
    // Every full batch has already left: at most one open batch of this stage is held. Counted rather than asserted
    // per item: 100,000 expect() calls took over the 5 s timeout on a loaded machine.
    const late: number[] = [];
    for (let i = 0; i < 100_000; i++) {
      b.delete({ path: `tenants/t/orders/o-${String(i).padStart(6, "0")}`, version: "1.000000001" }, "finance-7y", false);
      if (batches.length !== Math.floor((i + 1) / 450)) late.push(i);
    }
    expect(late.slice(0, 5)).toEqual([]);
    const summary = b.finish();
    expect(batches.length).toBe(Math.ceil(100_000 / 450));
    expect(summary.layout).toEqual([{ key: "own-d02", kind: "delete", batches: batches.length }]);
    expect(summary.counts.delete).toBe(100_000);
  });

  it("records the decision with each batch, and its hash covers the items with their versions", () => {
    const { b, batches } = builder(2);
    b.delete({ path: "activity/a-1", version: "5.000000000" }, "user-delete", true);
    b.delete({ path: "activity/a-2", version: "6.000000000" }, "user-delete", true);
    b.finish();
    const [batch] = batches;
    expect(batch!.decision).toEqual(decision);
    expect(batch!.hash).toBe(batchHash({ unitKey: "req-1", planId: "p1xabc", stage: batch!.stage, seq: 0, items: batch!.items }));
    expect(recordProblem({ ...batch!, planId: "p1xabc" }, "req-1", "p1xabc")).toBeNull();
  });

  it("refuses a record of another plan, or one whose items no longer hash to its hash", () => {
    const { b, batches } = builder(2);
    b.delete({ path: "activity/a-1", version: "5.000000000" }, "user-delete", true);
    b.finish();
    const record = { ...batches[0]!, planId: "p1xabc" };
    expect(recordProblem(record, "req-1", "p2xdef")).toMatch(/plan p1xabc, not p2xdef/);
    expect(recordProblem(record, "req-2", "p1xabc")).toMatch(/do not hash/);
    const edited = { ...record, items: [{ path: "activity/a-1", version: "7.000000000" }] };
    expect(recordProblem(edited, "req-1", "p1xabc")).toMatch(/do not hash/);
    const added = { ...record, items: [...record.items, { path: "activity/a-9" }] };
    expect(recordProblem(added, "req-1", "p1xabc")).toMatch(/do not hash/);
  });
});
