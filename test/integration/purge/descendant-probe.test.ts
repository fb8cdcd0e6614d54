import { beforeEach, describe, expect, it } from "vitest";
import { countOperations, resetCounts, rpcsByMethod } from "../../../bench/lib.mjs";
import { ancestorsInRange, descendantsRemainBatch, descendantsRemainOne, documentsInRange, existingAmong, probeBatch } from "../../../functions/src/purge/runner/probe";
import { db } from "../../helpers/emulator";
import { reset } from "./support";

/**
 * The batched descendant probe decides whether a parent may be deleted: a descendant it misses would be
 * orphaned by the purge. These cases aim at the places a name-range query could miss one: ids that sort
 * differently as strings and as path segments, descendants under missing intermediate documents, items
 * from different collections, items that are already gone, and more results than one page.
 */
async function put(...paths: string[]): Promise<void> {
  const w = db().bulkWriter();
  for (const p of paths) void w.set(db().doc(p), { probe: true });
  await w.close();
}

async function expectSameAsOneByOne(items: string[], expected: string[]): Promise<void> {
  const batched = await descendantsRemainBatch(items);
  expect([...batched].sort()).toEqual([...expected].sort());
  const single = await Promise.all(items.map(descendantsRemainOne));
  expect(items.filter((_, i) => single[i]).sort()).toEqual([...expected].sort());
}

describe("batched descendant probe", () => {
  beforeEach(async () => {
    await reset();
  });

  it("finds descendants at any depth, under missing documents, across collections, and only for batch items", async () => {
    await put(
      "pa/1",
      "pa/1/c/x",
      "pa/2",
      "pa/2-b",
      // a descendant two levels down under a document that does not exist (pa/2-b/c/y): listing
      // subcollections and querying each (the probe this replaced) does not see it
      "pa/2-b/c/y/d/z",
      "pa/3",
      "pa/3/other/q",
      // not a batch item, inside the range, with a child: must not mark a neighbour
      "pa/15",
      "pa/15/c/w",
      "pb/1",
      // a batch item that is already gone but still has a child
      "pa/gone/c/k",
    );
    await expectSameAsOneByOne(["pa/1", "pa/2", "pa/2-b", "pa/3", "pb/1", "pa/gone"], ["pa/1", "pa/2-b", "pa/3", "pa/gone"]);
  });

  it("handles ids whose string order differs from Firestore's segment order", async () => {
    // As strings "o-1/..." sorts after "o-1-b"; as path segments "o-1" sorts first.
    await put("tenants/t/orders/o-1", "tenants/t/orders/o-1-b", "tenants/t/orders/o-10", "tenants/t/orders/o-2", "tenants/t/orders/o-2/messages/m-0", "tenants/t/orders/o-1-b/messages/m-0");
    await expectSameAsOneByOne(["tenants/t/orders/o-1", "tenants/t/orders/o-1-b", "tenants/t/orders/o-10", "tenants/t/orders/o-2"], ["tenants/t/orders/o-1-b", "tenants/t/orders/o-2"]);
    await expectSameAsOneByOne(["tenants/t/orders/o-1", "tenants/t/orders/o-10"], []);
  });

  it("pages through more documents than one page holds", async () => {
    // 1,200 descendants of a batch item: none of them is foreign, so the range scan pages through all.
    const under = Array.from({ length: 1_200 }, (_, i) => `px/a/c/m-${String(i).padStart(4, "0")}`);
    await put("px/a", ...under, "px/b", "px/z", "px/z/c/last");
    await expectSameAsOneByOne(["px/a", "px/b", "px/z"], ["px/a", "px/z"]);
  });

  it("falls back to one probe per item when the range is crowded with other documents (a sweep over a live collection)", async () => {
    const between = Array.from({ length: 1_200 }, (_, i) => `py/m-${String(i).padStart(4, "0")}`);
    await put("py/a", "py/a/c/x", ...between, "py/z", "py/z/c/last", "py/zz/c/orphan");
    await expectSameAsOneByOne(["py/a", "py/z", "py/zz"], ["py/a", "py/z", "py/zz"]);
    await expectSameAsOneByOne(["py/m-0001", "py/m-1100"], []);
  });

  it("answers an empty batch with nothing", async () => {
    expect((await descendantsRemainBatch([])).size).toBe(0);
    expect((await existingAmong([])).size).toBe(0);
  });
});

describe("existence by range scan (manifest verification)", () => {
  beforeEach(async () => {
    await reset();
  });

  async function expectExisting(items: string[]): Promise<void> {
    const byName = (await db().getAll(...items.map((p) => db().doc(p)))).filter((s) => s.exists).map((s) => s.ref.path);
    expect([...(await existingAmong(items))].sort()).toEqual(byName.sort());
  }

  it("names exactly the items that exist, not their neighbours or descendants", async () => {
    await put("pv/1", "pv/1/c/x", "pv/15", "pv/3", "pw/1", "pv/2/c/child-of-missing");
    await expectExisting(["pv/1", "pv/2", "pv/3", "pw/1", "pw/9"]);
    await expectExisting(["pv/1/c/x", "pv/1/c/y"]);
  });

  it("lists a whole range's documents in one scan, or gives up past its limit", async () => {
    await put("pr/1", "pr/1/c/x", "pr/2", "pr/3", "pr/4");
    expect([...((await documentsInRange("pr/1", "pr/3", 10)) ?? [])].sort()).toEqual(["pr/1", "pr/1/c/x", "pr/2", "pr/3"]);
    expect([...((await documentsInRange("pr/1/c/x", "pr/1/c/x", 10)) ?? [])]).toEqual(["pr/1/c/x"]);
    expect(await documentsInRange("pr/1", "pr/4", 4)).toBeNull();
  });

  it("reads by name when the range is crowded with other documents", async () => {
    const between = Array.from({ length: 600 }, (_, i) => `pz/m-${String(i).padStart(4, "0")}`);
    await put("pz/a", ...between, "pz/z");
    await expectExisting(["pz/a", "pz/gone", "pz/z"]);
  });
});

describe("the batch probe: a count first, the scan only when the count differs", () => {
  beforeEach(async () => {
    await reset();
    countOperations();
  });

  /** The batch probe's answer, with the queries it sent: counts (runAggregationQuery) and scans (runQuery). */
  /** As the batch transaction calls it: `inRangePresent` defaults to what ancestorsInRange allows (0 parents, or null: scan). */
  async function probed(items: string[], readGone = 0, inRangePresent: number | null = ancestorsInRange(items) === null ? null : 0): Promise<{ remain: string[]; counts: number; scans: number }> {
    resetCounts();
    const remain = [...(await probeBatch(items, readGone, inRangePresent))].sort();
    return { remain, counts: rpcsByMethod.get("runAggregationQuery") ?? 0, scans: rpcsByMethod.get("runQuery") ?? 0 };
  }

  it("leaves with nothing under them: one count, no scan", async () => {
    await put("qa/1", "qa/2", "qa/3", "qb/1");
    expect(await probed(["qa/1", "qa/2", "qa/3"])).toEqual({ remain: [], counts: 1, scans: 0 });
  });

  it("a child under one item: the count differs and the scan names the item", async () => {
    await put("qa/1", "qa/2", "qa/2/c/new", "qa/3");
    expect(await probed(["qa/1", "qa/2", "qa/3"])).toMatchObject({ remain: ["qa/2"], counts: 1 });
  });

  it("a document in the range that is no item makes the count differ: the scan decides, and nothing is said of the neighbour", async () => {
    await put("qa/1", "qa/15", "qa/2");
    expect(await probed(["qa/1", "qa/2"])).toMatchObject({ remain: [], counts: 1 });
    expect((await probed(["qa/1", "qa/2"])).scans).toBeGreaterThan(0);
  });

  it("an item the transaction found gone cannot hide a descendant of another: the count is held to the items that exist", async () => {
    // qa/2 is gone, and qa/1 has a child: the range holds two documents, as many as the batch has items.
    await put("qa/1", "qa/1/c/new", "qa/3");
    expect(await probed(["qa/1", "qa/2", "qa/3"], 1)).toMatchObject({ remain: ["qa/1"], counts: 1 });
    // Told of no gone item (an unread item on the fast path, whose delete precondition will fail), the count agrees
    // and says nothing remains; the commit then fails on qa/2 and the read path asks again (streaming.test.ts).
    expect(await probed(["qa/1", "qa/2", "qa/3"], 0)).toEqual({ remain: [], counts: 1, scans: 0 });
  });

  it("items nested in one another are always scanned: the child item would stand for its parent's descendant", async () => {
    await put("qa/1", "qa/1/c/x", "qa/2");
    const items = ["qa/1", "qa/1/c/x", "qa/2"];
    const r = await probed(items);
    expect(r).toMatchObject({ remain: [...(await descendantsRemainBatch(items))].sort(), counts: 0 });
    expect(r.scans).toBeGreaterThan(0);
  });

  it("children spanning several parents: the parents inside the range are named, and counted only as the transaction found them", async () => {
    const items = ["qc/p2/m/1", "qc/p2/m/2", "qc/p3/m/1", "qc/p4/m/1"];
    // qc/p2 sorts before the first item; qc/p3 and qc/p4 lie inside the range.
    expect(ancestorsInRange(items)).toEqual(["qc/p3", "qc/p4"]);
    expect(ancestorsInRange(["qc/p2", "qc/p2/m/1"])).toBeNull();
    await put("qc/p2", "qc/p3", "qc/p4", ...items);
    expect(await probed(items, 0, 2)).toEqual({ remain: [], counts: 1, scans: 0 });
    // One parent gone (the transaction found one of two) and a new child under an item: the count differs, the scan names it.
    await db().doc("qc/p4").delete();
    await put("qc/p2/m/2/r/new");
    expect(await probed(items, 0, 1)).toMatchObject({ remain: ["qc/p2/m/2"], counts: 1 });
  });
});
