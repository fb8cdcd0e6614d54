import { canonicalDigest, hashCanonical } from "../../kernel/canonical";
import { BatchCutter, type PurgeBatch, type PurgeItem, type StageLayout } from "./batches";

/**
 * A purge plan as it streams: every delete, mask and retain decision about a unit's documents goes in
 * here once, in discovery order. Pure. Full batches leave at once through `onBatch` (each with its hash and
 * the decision it records), retained records leave in chunks, and the manifest hash is a running digest,
 * so the plan of a subject of any size is held only as its open batches and counters.
 */

/** What a plan decided about a batch: under which hold fence generation, policy version and time. */
export interface BatchDecision {
  fenceGeneration: number;
  policyVersion: string;
  decidedAtMs: number;
}

export interface PlannedBatch extends PurgeBatch {
  /** SHA-256 of the unit, plan, stage, position and items (paths with the versions decided on). */
  hash: string;
  decision: BatchDecision;
}

/** A retained path as the plan records it (the verification checks it is still there). */
export interface RetainedRecord {
  path: string;
  action: "retain" | "mask" | "removeFromArray";
  reasonCode: string;
  holdId?: string;
  deferredByHold?: boolean;
}

export interface ManifestSummary {
  manifestHash: string;
  layout: StageLayout[];
  /** `delete` counts documents; `objects` the Cloud Storage objects to delete (never in `deleteByClass`: objects have no class). */
  counts: { delete: number; external: number; mask: number; retain: number; objects: number };
  /** Delete, mask and object paths: the measure of work. */
  pathCount: number;
  retainedChunks: number;
  /** Refused paths, the first MAX_BLOCKED_LISTED of them. */
  blocked: { path: string; reason: string }[];
  blockedCount: number;
  /** Delete items whose class needs a verified archive, with the batch that holds each. */
  needsArchive: { path: string; stage: string; seq: number }[];
  deleteByClass: Record<string, number>;
}

/** A batch record's hash: the unit, plan, stage, position and items (paths with the versions decided on). */
export function batchHash(b: { unitKey: string; planId: string; stage: string; seq: number; items: readonly PurgeItem[] }): string {
  return hashCanonical({ unitKey: b.unitKey, planId: b.planId, stage: b.stage, seq: b.seq, items: b.items });
}

/**
 * Whether a batch record is the decision this round may execute: written for this plan, and its items still
 * hash to the hash it carries (the one its evidence will name). Anything else is refused, never executed.
 */
export function recordProblem(b: { planId: string; stage: string; seq: number; items: readonly PurgeItem[]; hash: string }, unitKey: string, planId: string): string | null {
  if (b.planId !== planId) return `the record belongs to plan ${b.planId}, not ${planId}`;
  if (batchHash({ unitKey, planId, stage: b.stage, seq: b.seq, items: b.items }) !== b.hash) return "the record's items do not hash to its hash";
  return null;
}

export const MAX_BLOCKED_LISTED = 100;
export const RETAINED_PER_CHUNK = 200;

export interface ManifestOptions {
  unitKey: string;
  planId: string;
  batchSize: number;
  decision: BatchDecision;
  onBatch: (batch: PlannedBatch) => void;
  onRetained: (index: number, items: RetainedRecord[]) => void;
}

export class ManifestBuilder {
  private readonly digest = canonicalDigest();
  private readonly cutter: BatchCutter;
  private readonly counts = { delete: 0, external: 0, mask: 0, retain: 0, objects: 0 };
  private readonly deleteByClass: Record<string, number> = {};
  private readonly blocked: { path: string; reason: string }[] = [];
  private blockedCount = 0;
  private readonly needsArchive: ManifestSummary["needsArchive"] = [];
  private retained: RetainedRecord[] = [];
  private retainedChunks = 0;

  constructor(private readonly opts: ManifestOptions) {
    this.digest.add({ unitKey: opts.unitKey, policyVersion: opts.decision.policyVersion });
    this.cutter = new BatchCutter(opts.batchSize, (b) => {
      for (const item of b.items) if (item.archive) this.needsArchive.push({ path: item.path, stage: b.stage, seq: b.seq });
      const hash = batchHash({ unitKey: opts.unitKey, planId: opts.planId, stage: b.stage, seq: b.seq, items: b.items });
      opts.onBatch({ ...b, hash, decision: opts.decision });
    });
  }

  /** A document to delete, from the subject's own data or an external copy. */
  delete(item: PurgeItem, retentionClass: string, external: boolean): void {
    this.digest.add({ op: "delete", path: item.path, external });
    this.counts.delete++;
    if (external) this.counts.external++;
    this.deleteByClass[retentionClass] = (this.deleteByClass[retentionClass] ?? 0) + 1;
    this.cutter.add(external ? "external" : "own", item);
  }

  /**
   * A Cloud Storage object to delete (`gs://bucket/name`, `version` the generation decided on, `heldWith` the
   * document a hold must cover to keep it). Its batches run first, each in a delete window (runner/objects.ts).
   */
  object(item: PurgeItem & { version: string; heldWith: string }): void {
    this.digest.add({ op: "object", path: item.path, generation: item.version, heldWith: item.heldWith });
    this.counts.objects++;
    this.cutter.add("objects", item);
  }

  /** A retained record whose personal fields are removed (it is also retained). */
  mask(item: PurgeItem & { fields: string[] }, record: RetainedRecord): void {
    this.digest.add({ op: "mask", path: item.path, fields: item.fields, ...(item.pull ? { pull: item.pull } : {}) });
    this.counts.mask++;
    this.cutter.add("mask", item);
    this.retain(record);
  }

  retain(record: RetainedRecord): void {
    this.digest.add({ op: "retain", ...record });
    this.counts.retain++;
    this.retained.push(record);
    if (this.retained.length >= RETAINED_PER_CHUNK) this.flushRetained();
  }

  /** A path the destroy predicate refuses: a deletion request with any is blocked before anything happens. */
  block(path: string, reason: string): void {
    this.digest.add({ op: "blocked", path, reason });
    this.blockedCount++;
    if (this.blocked.length < MAX_BLOCKED_LISTED) this.blocked.push({ path, reason });
  }

  finish(): ManifestSummary {
    const layout = this.cutter.end();
    this.flushRetained();
    return {
      manifestHash: this.digest.hex(),
      layout,
      counts: { ...this.counts },
      pathCount: this.counts.delete + this.counts.mask + this.counts.objects,
      retainedChunks: this.retainedChunks,
      blocked: [...this.blocked],
      blockedCount: this.blockedCount,
      needsArchive: [...this.needsArchive],
      deleteByClass: { ...this.deleteByClass },
    };
  }

  private flushRetained(): void {
    if (this.retained.length === 0) return;
    this.opts.onRetained(this.retainedChunks++, this.retained);
    this.retained = [];
  }
}
