import { beforeEach, describe, expect, it } from "vitest";
import { descendantsRemainBatch, descendantsRemainOne } from "../../../functions/src/infra/purge-probe";
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
    const between = Array.from({ length: 1_200 }, (_, i) => `px/m-${String(i).padStart(4, "0")}`);
    await put("px/a", ...between, "px/z", "px/z/c/last");
    await expectSameAsOneByOne(["px/a", "px/z"], ["px/z"]);
  });

  it("answers an empty batch with nothing", async () => {
    expect((await descendantsRemainBatch([])).size).toBe(0);
  });
});
