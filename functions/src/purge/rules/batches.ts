import { documentDepth } from "../../kernel/paths";

/**
 * How a purge's work is cut into batches, stages and steps. Pure, so a simulation can check the ordering
 * rules at sizes no emulator test reaches.
 *
 * Ordering rules (docs/PURGE-ENGINE.md):
 * - children before parents: a stage holds the batches of one depth of one group, and delete stages run
 *   deepest first, so every document of a deeper level is settled before any document above it is touched;
 * - the subject's own tree first, then external copies (directories, feeds), then masking of retained
 *   records;
 * - the batches of one stage are independent: they run several at a time, in any order.
 */

/** `objects`: Cloud Storage objects, deleted in a delete window (runner/objects.ts, docs/HOLD-FENCE.md). */
export type PurgeBatchKind = "delete" | "mask" | "objects";

/**
 * Where an item belongs: the subject's own data, an external copy, a late find (the final sweep), a mask, Cloud
 * Storage objects, or objects the final sweep found.
 */
export type BatchGroup = "own" | "external" | "late" | "mask" | "objects" | "late-objects";

/** One document of a batch: the decision the plan recorded about it. */
export interface PurgeItem {
  path: string;
  /**
   * The version the decision was made on (its update time, `seconds.nanoseconds`). The delete carries it as
   * a precondition: a document that changed since is read and judged again.
   */
  version?: string;
  /** A recursive root: the final sweep looks under it for anything created during the purge. */
  root?: true;
  /** Its collection has a delete trigger: it is marked PURGE_ELIGIBLE first, so the trigger knows the purge did it. */
  mark?: true;
  /** Its class, or the data map, needs a verified archive before the delete. */
  archive?: true;
  /**
   * The data map keeps it as a verified archive copy (its `archive` action: a tenant's finance records): once
   * that archive is verified the workflow may delete it, whatever its class's deletability.
   */
  archivedByDataMap?: true;
  /** Fields to remove, for mask items. */
  fields?: string[];
  /** Array fields to take the subject's uid out of, for mask items of a `removeFromArray` entry. */
  pull?: string[];
  /**
   * For an object item (`gs://bucket/name`, `version` its generation): the document it is held with. A hold whose
   * record covers it (on it or an ancestor) holds the object.
   */
  heldWith?: string;
}

/**
 * What of the subject a mask item still finds in a document (`get` reads one field): its mask fields that are
 * present, and, shown as `field[]`, each `pull` array that still holds the subject's uid. Empty: done.
 */
export function maskResidue(item: Pick<PurgeItem, "fields" | "pull">, get: (field: string) => unknown, uid: string | null): string[] {
  const present = (item.fields ?? []).filter((f) => get(f) !== undefined);
  const pulled = (item.pull ?? []).filter((f) => uid !== null && arrayHolds(get(f), uid)).map((f) => `${f}[]`);
  return [...present, ...pulled];
}

/** The field names a mask item changes, as evidence and the erasure ledger name them (`field[]`: left an array). */
export const maskedFieldNames = (item: Pick<PurgeItem, "fields" | "pull">): string[] => [...(item.fields ?? []), ...(item.pull ?? []).map((f) => `${f}[]`)];

const arrayHolds = (value: unknown, uid: string): boolean => Array.isArray(value) && value.includes(uid);

export interface PurgeBatch {
  stage: string;
  kind: PurgeBatchKind;
  /** Position within the stage, from 0. */
  seq: number;
  items: PurgeItem[];
}

/** One stage: every batch of one group at one depth, run after the stages before it. */
export interface StageLayout {
  key: string;
  kind: PurgeBatchKind;
  batches: number;
}

/**
 * Objects first: their `heldWith` document is still there while they are deleted, so a hold can still be placed on
 * it, and held documents are not needed to keep an object (nothing nests under an object).
 */
const GROUP_ORDER: Record<BatchGroup, number> = { objects: -1, own: 0, external: 1, late: 2, "late-objects": 2, mask: 3 };

/** The groups whose stage has no depth: one stage each. */
const FLAT_GROUPS: ReadonlySet<BatchGroup> = new Set(["mask", "objects", "late-objects"]);

/** A stage's key: its group and depth (`own-d03`), or `mask`, `objects`, `late-objects`. Batch ids sort with it. */
export function stageKey(group: BatchGroup, depth: number): string {
  return FLAT_GROUPS.has(group) ? group : `${group}-d${String(depth).padStart(2, "0")}`;
}

/** The kind of batch a stage holds. */
export function stageKind(key: string): PurgeBatchKind {
  if (key === "mask") return "mask";
  return key === "objects" || key === "late-objects" ? "objects" : "delete";
}

function parseStage(key: string): { group: BatchGroup; depth: number } {
  if (FLAT_GROUPS.has(key as BatchGroup)) return { group: key as BatchGroup, depth: 0 };
  const m = /^(own|external|late)-d(\d+)$/.exec(key);
  if (!m) throw new Error(`unknown purge stage ${key}`);
  return { group: m[1] as BatchGroup, depth: Number(m[2]) };
}

/** The stages in execution order: own data deepest first, then external copies, then late finds, then masks. */
export function orderStages(stages: Iterable<StageLayout>): StageLayout[] {
  return [...stages].sort((a, b) => {
    const x = parseStage(a.key);
    const y = parseStage(b.key);
    return GROUP_ORDER[x.group] - GROUP_ORDER[y.group] || y.depth - x.depth;
  });
}

/**
 * Cuts a stream of items into batches of at most `batchSize`, one open batch per stage, and hands each full
 * batch to `onBatch` at once, so a manifest of any size passes with only its open batches in memory.
 * `end` flushes the rest and returns the stage layout in execution order.
 */
export class BatchCutter {
  private readonly open = new Map<string, PurgeItem[]>();
  private readonly counts = new Map<string, StageLayout>();

  /** `after`: stages that already have batches (a later pass adds to them, numbering on). */
  constructor(
    private readonly batchSize: number,
    private readonly onBatch: (batch: PurgeBatch) => void,
    after: readonly StageLayout[] = [],
  ) {
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`batchSize must be a positive integer, got ${batchSize}`);
    for (const s of after) this.counts.set(s.key, { ...s });
  }

  add(group: BatchGroup, item: PurgeItem): void {
    const key = stageKey(group, FLAT_GROUPS.has(group) ? 0 : documentDepth(item.path));
    const items = this.open.get(key) ?? [];
    items.push(item);
    this.open.set(key, items);
    if (items.length >= this.batchSize) this.flush(key, stageKind(key));
  }

  end(): StageLayout[] {
    for (const key of [...this.open.keys()]) this.flush(key, stageKind(key));
    return orderStages(this.counts.values());
  }

  private flush(key: string, kind: PurgeBatchKind): void {
    const items = this.open.get(key);
    if (!items || items.length === 0) return;
    this.open.delete(key);
    const stage = this.counts.get(key) ?? { key, kind, batches: 0 };
    this.onBatch({ stage: key, kind, seq: stage.batches, items });
    this.counts.set(key, { ...stage, batches: stage.batches + 1 });
  }
}

/**
 * A unit's work as a list of steps, so one cursor (`nextStep`) checkpoints all of it: each stage is cut
 * into groups of up to `groupSize` batches (one step each; the batches of a group run several at a time),
 * and the last step finalizes (the final sweep, the Auth account, verification, the end state).
 */
export type PurgeStep = { kind: "group"; stage: string; batchKind: PurgeBatchKind; first: number; count: number } | { kind: "finalize" };

export function stepsOf(layout: readonly StageLayout[], groupSize: number): PurgeStep[] {
  if (!Number.isInteger(groupSize) || groupSize < 1) throw new Error(`groupSize must be a positive integer, got ${groupSize}`);
  const steps: PurgeStep[] = [];
  for (const s of layout) {
    for (let first = 0; first < s.batches; first += groupSize) {
      steps.push({ kind: "group", stage: s.key, batchKind: s.kind, first, count: Math.min(groupSize, s.batches - first) });
    }
  }
  steps.push({ kind: "finalize" });
  return steps;
}

export function stepCount(layout: readonly StageLayout[], groupSize: number): number {
  return stepsOf(layout, groupSize).length;
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
