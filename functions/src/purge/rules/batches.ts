import { childrenFirst, documentDepth } from "../../kernel/paths";

/**
 * How a purge manifest is cut into batches and steps. Pure, so a simulation can check the ordering rules
 * at sizes no emulator test reaches.
 *
 * Ordering rules (docs/OVERVIEW.md):
 * - children before parents: delete batches run deepest first, and a batch never mixes depths, so every
 *   document of a deeper level is settled before any document above it is touched;
 * - the subject's own tree first, then external copies (directories, feeds), then masking of retained
 *   records;
 * - a batch never mixes stages, so the descendant probe before a parent's delete sees the final state of
 *   every level below it.
 */

export type PurgeBatchKind = "delete" | "mask";

export interface PurgeItem {
  path: string;
  /** Fields to remove, for mask items. */
  fields?: string[];
}

export interface PurgeBatch {
  index: number;
  kind: PurgeBatchKind;
  /** Batches of one stage may run in any order; stages run strictly in sequence. */
  stage: number;
  items: PurgeItem[];
}

export interface BatchPlanInput {
  /** Paths to delete. */
  delete: readonly string[];
  /** The subset of `delete` that are external copies (outside the subject's own tree). */
  external: readonly string[];
  /** Retained records to mask, with their fields. */
  mask: readonly { path: string; fields: readonly string[] }[];
}

/** Cuts a manifest into batches of at most `batchSize` items, in execution order. */
export function planPurgeBatches(input: BatchPlanInput, batchSize: number): PurgeBatch[] {
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`batchSize must be a positive integer, got ${batchSize}`);
  const external = new Set(input.external);
  const own = childrenFirst(new Set(input.delete.filter((p) => !external.has(p))));
  const ext = childrenFirst(new Set(input.delete.filter((p) => external.has(p))));
  const batches: PurgeBatch[] = [];
  let stage = 0;
  const emit = (kind: PurgeBatchKind, items: PurgeItem[]) => {
    for (let i = 0; i < items.length; i += batchSize) {
      batches.push({ index: batches.length, kind, stage, items: items.slice(i, i + batchSize) });
    }
    if (items.length > 0) stage++;
  };
  for (const level of byDepth(own)) emit("delete", level.map((path) => ({ path })));
  for (const level of byDepth(ext)) emit("delete", level.map((path) => ({ path })));
  const masks = [...new Map(input.mask.map((m) => [m.path, m])).values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  emit(
    "mask",
    masks.map((m) => ({ path: m.path, fields: [...m.fields].sort() })),
  );
  return batches;
}

/** Splits a childrenFirst-ordered list into runs of equal depth (deepest first). */
function byDepth(sorted: readonly string[]): string[][] {
  const levels: string[][] = [];
  let current: string[] = [];
  let depth = -1;
  for (const p of sorted) {
    const d = documentDepth(p);
    if (d !== depth && current.length > 0) {
      levels.push(current);
      current = [];
    }
    depth = d;
    current.push(p);
  }
  if (current.length > 0) levels.push(current);
  return levels;
}

/**
 * A unit's work as a flat list of steps, so one cursor (`nextStep`) checkpoints all of it:
 *   steps [0, B)     mark delete batch i PURGE_ELIGIBLE (a no-op for mask batches)
 *   steps [B, 2B)    execute batch i (delete or mask)
 *   step  2B         finalize (Auth account, manifest verification, PURGED)
 * Every decision is written down (mark steps) before the first destructive step runs.
 */
export type PurgeStep = { kind: "mark"; batch: number } | { kind: "execute"; batch: number } | { kind: "finalize" };

export function stepCount(batchCount: number): number {
  return 2 * batchCount + 1;
}

export function stepAt(step: number, batchCount: number): PurgeStep {
  if (!Number.isInteger(step) || step < 0 || step >= stepCount(batchCount)) throw new Error(`step ${step} is outside 0..${stepCount(batchCount) - 1}`);
  if (step < batchCount) return { kind: "mark", batch: step };
  if (step < 2 * batchCount) return { kind: "execute", batch: step - batchCount };
  return { kind: "finalize" };
}

/**
 * Whether a unit is too large for one invocation and goes to the task queue. The threshold counts
 * manifest paths (deletes and masks), the measure of work and of time.
 */
export function needsFanOut(pathCount: number, threshold: number): boolean {
  return pathCount > threshold;
}

export interface ChunkRange {
  /** First step of the chunk (inclusive). */
  start: number;
  /** One past the last step (exclusive). */
  end: number;
}

/**
 * The chunk a task processes, starting at `start`. Chunks run one after another (each task enqueues the
 * next): parallel chunks would break the children-first order across stages and multiply the delete rate
 * past the configured ceiling, which is a limit for the whole database.
 */
export function chunkAt(start: number, totalSteps: number, stepsPerChunk: number): ChunkRange {
  if (!Number.isInteger(stepsPerChunk) || stepsPerChunk < 1) throw new Error(`stepsPerChunk must be a positive integer, got ${stepsPerChunk}`);
  if (start < 0 || start >= totalSteps) throw new Error(`chunk start ${start} is outside 0..${totalSteps - 1}`);
  return { start, end: Math.min(totalSteps, start + stepsPerChunk) };
}

/** Every chunk of a unit, in order: what a chain of tasks will cover. */
export function allChunks(totalSteps: number, stepsPerChunk: number): ChunkRange[] {
  const out: ChunkRange[] = [];
  for (let s = 0; s < totalSteps; s = chunkAt(s, totalSteps, stepsPerChunk).end) out.push(chunkAt(s, totalSteps, stepsPerChunk));
  return out;
}
