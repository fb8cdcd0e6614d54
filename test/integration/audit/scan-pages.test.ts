/**
 * The scan's reader: every document exactly once, in document-id order, across chunk and stream-segment
 * boundaries (including a segment that ends exactly at the last document), for collection and
 * collection-group queries alike.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { pages } from "../../../functions/src/platform/streams";
import { clearFirestore, db } from "../../helpers/emulator";

const ids = Array.from({ length: 12 }, (_, i) => `d-${String(i).padStart(2, "0")}`);

async function read(chunk: number, segment: number, group: boolean): Promise<{ paths: string[]; chunks: number[] }> {
  const paths: string[] = [];
  const chunks: number[] = [];
  const q = group ? db().collectionGroup("probe") : db().collection("scan-probe/p/probe");
  for await (const c of pages(q, chunk, segment)) {
    chunks.push(c.length);
    paths.push(...c.map((s) => s.ref.path));
  }
  return { paths, chunks };
}

describe("audit scan reader", () => {
  beforeAll(async () => {
    await clearFirestore();
    const batch = db().batch();
    for (const id of ids) batch.set(db().doc(`scan-probe/p/probe/${id}`), { n: id });
    await batch.commit();
  });

  it("reads every document once, in order, whatever the chunk and segment sizes", async () => {
    const expected = ids.map((id) => `scan-probe/p/probe/${id}`);
    for (const [chunk, segment] of [[3, 5], [5, 3], [4, 12], [12, 4], [100, 20_000], [1, 1]] as const) {
      for (const group of [false, true]) {
        const r = await read(chunk, segment, group);
        expect(r.paths, `chunk ${chunk}, segment ${segment}, group ${group}`).toEqual(expected);
        expect(Math.max(...r.chunks)).toBeLessThanOrEqual(chunk);
      }
    }
  });
});
