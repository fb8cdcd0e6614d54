import { BatchCutter, type BatchGroup, type PurgeBatch, type StageLayout } from "../../functions/src/purge/rules/batches";

/** A manifest as a plain list: what to delete (some of it external copies) and what to mask. */
export interface CutInput {
  delete: readonly string[];
  external: readonly string[];
  mask: readonly { path: string; fields: string[] }[];
}

/**
 * Feeds a manifest through the streaming cutter in the given order (deletes, then masks) and returns the
 * batches in execution order (stage by stage as the layout orders them, each stage's batches by position),
 * with the layout.
 */
export function cutInOrder(input: CutInput, size: number): { batches: PurgeBatch[]; layout: StageLayout[] } {
  const cut: PurgeBatch[] = [];
  const cutter = new BatchCutter(size, (b) => cut.push(b));
  const external = new Set(input.external);
  for (const p of input.delete) cutter.add((external.has(p) ? "external" : "own") satisfies BatchGroup, { path: p });
  for (const m of input.mask) cutter.add("mask", { path: m.path, fields: [...m.fields].sort() });
  const layout = cutter.end();
  const order = new Map(layout.map((s, i) => [s.key, i]));
  const batches = cut.sort((a, b) => order.get(a.stage)! - order.get(b.stage)! || a.seq - b.seq);
  return { batches, layout };
}
