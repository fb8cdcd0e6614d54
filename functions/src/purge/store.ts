import type { PurgeUnit, UnitKind } from "./rules/unit";
import type { DocumentData, DocumentReference, DocumentSnapshot, Transaction } from "firebase-admin/firestore";
import type { PurgeItem, PurgeBatchKind, StageLayout } from "./rules/batches";
import type { PurgeClaim, PurgeDocFacts } from "./rules/decide";
import type { BatchDecision, RetainedRecord } from "./rules/manifest";

export type { BatchDecision, RetainedRecord };
import { COLLECTIONS, db } from "../platform/firestore";
import { GOVERNED_FIELDS, readGoverned } from "../platform/governed-doc";

/**
 * The purge's control-plane records, all under `retentionJobs` (no client access):
 *   retentionJobs/purge-{unitKey}                                   the checkpoint (and, for sweeps, the lease)
 *   retentionJobs/purge-{unitKey}/batches/{planId}-{stage}-{seq}    a batch: its decided items and their outcome
 *   retentionJobs/purge-{unitKey}/retained/{planId}-{i}             the plan's retained items, for verification
 * A unit is one deletion request (unitKey = requestId) or one collection's policy sweep
 * (unitKey = sweep-{collection}). Planning writes a plan's records under a fresh plan id as it streams;
 * they authorise nothing until a round's checkpoint names that plan id.
 */

export type { UnitKind };
export type UnitPhase = "RUNNING" | "DONE" | "BLOCKED";

/** A unit's checkpoint: the unit and the state of its current round. */
export interface UnitCheckpoint extends PurgeUnit {
  round: number;
  phase: UnitPhase;
  /** The plan whose records this round executes. */
  planId: string;
  manifestHash: string;
  policyVersion: string;
  /** The business time the decisions were made at. */
  decidedAtMs: number;
  /** The hold fence generation the plan's decisions were made under. */
  fenceGeneration: number;
  /** The plan's stages in execution order. */
  layout: StageLayout[];
  /** Batches per step (a step's batches run several at a time). */
  groupSize: number;
  /** Manifest paths (deletes and masks): the measure for fanning out. */
  pathCount: number;
  /** Documents under `retained/` holding this plan's retained items (ids {planId}-0 .. n-1). */
  retainedChunks: number;
  /** Late stages the final sweep added (their batches are verified with the rest). */
  late: StageLayout[];
  nextStep: number;
  fanOut: { generation: number; stepsPerChunk: number } | null;
  blockedReason: string | null;
}

export interface BatchOutcome {
  deleted: string[];
  /** Those of `deleted` deleted on a new decision: the document had changed since the plan and was judged again. */
  redecided: string[];
  gone: string[];
  held: { path: string; holdId: string | null; reasonCode: string }[];
  deferred: string[];
  blocked: { path: string; reason: string }[];
  masked: string[];
  /** Objects whose name another generation holds now: the decision was about the old one, which is not deleted. */
  changed: string[];
}

export interface BatchDoc {
  planId: string;
  stage: string;
  seq: number;
  kind: PurgeBatchKind;
  items: PurgeItem[];
  /** SHA-256 of the unit, plan, stage and items (paths with the versions decided on): what the evidence names. */
  hash: string;
  decision: BatchDecision;
  /** Verified archives of this batch's items (source path -> archive id), for archive classes. */
  archives: Record<string, string>;
  /** The trigger-collection items are marked PURGE_ELIGIBLE. */
  marked: boolean;
  outcome: BatchOutcome;
  complete: boolean;
}

export const emptyOutcome = (): BatchOutcome => ({ deleted: [], redecided: [], gone: [], held: [], deferred: [], blocked: [], masked: [], changed: [] });

export const checkpointRef = (unitKey: string): DocumentReference => db().collection(COLLECTIONS.retentionJobs).doc(`purge-${unitKey}`);
export const batchId = (planId: string, stage: string, seq: number): string => `${planId}-${stage}-${String(seq).padStart(6, "0")}`;
export const batchRef = (unitKey: string, planId: string, stage: string, seq: number): DocumentReference =>
  checkpointRef(unitKey).collection("batches").doc(batchId(planId, stage, seq));
export const retainedRef = (unitKey: string, planId: string, index: number): DocumentReference =>
  checkpointRef(unitKey).collection("retained").doc(`${planId}-${String(index).padStart(6, "0")}`);
export const requestRef = (requestId: string): DocumentReference => db().collection(COLLECTIONS.deletionRequests).doc(requestId);

/** The document that carries a unit's lease: the request itself, or the sweep's checkpoint. */
export const leaseRefOf = (cp: Pick<UnitCheckpoint, "kind" | "requestId" | "unitKey">): DocumentReference =>
  cp.kind === "request" && cp.requestId ? requestRef(cp.requestId) : checkpointRef(cp.unitKey);

/** Every batch of a round's stages, in execution order. */
export function* batchRefsOf(cp: Pick<UnitCheckpoint, "unitKey" | "planId">, stages: readonly StageLayout[]): Generator<DocumentReference> {
  for (const s of stages) for (let i = 0; i < s.batches; i++) yield batchRef(cp.unitKey, cp.planId, s.key, i);
}

const kindFrom = (v: unknown): PurgeBatchKind => (v === "mask" || v === "objects" ? v : "delete");

const layoutFrom = (v: unknown): StageLayout[] =>
  Array.isArray(v) ? (v as StageLayout[]).map((s) => ({ key: String(s.key), kind: kindFrom(s.kind), batches: Number(s.batches) })) : [];

export function checkpointFrom(data: DocumentData | undefined): UnitCheckpoint | null {
  if (!data || typeof data.unitKey !== "string" || typeof data.round !== "number") return null;
  return {
    unitKey: data.unitKey,
    kind: data.kind === "request" ? "request" : "sweep",
    requestId: typeof data.requestId === "string" ? data.requestId : null,
    collection: typeof data.collection === "string" ? data.collection : null,
    subject: (data.subject as PurgeUnit["subject"] | undefined) ?? null,
    round: data.round,
    phase: data.phase === "DONE" ? "DONE" : data.phase === "BLOCKED" ? "BLOCKED" : "RUNNING",
    planId: String(data.planId ?? ""),
    manifestHash: String(data.manifestHash ?? ""),
    policyVersion: String(data.policyVersion ?? ""),
    decidedAtMs: typeof data.decidedAtMs === "number" ? data.decidedAtMs : 0,
    fenceGeneration: typeof data.fenceGeneration === "number" ? data.fenceGeneration : -1,
    layout: layoutFrom(data.layout),
    groupSize: typeof data.groupSize === "number" && data.groupSize > 0 ? data.groupSize : 1,
    pathCount: typeof data.pathCount === "number" ? data.pathCount : 0,
    retainedChunks: typeof data.retainedChunks === "number" ? data.retainedChunks : 0,
    late: layoutFrom(data.late),
    nextStep: typeof data.nextStep === "number" ? data.nextStep : 0,
    fanOut: (data.fanOut as UnitCheckpoint["fanOut"]) ?? null,
    blockedReason: typeof data.blockedReason === "string" ? data.blockedReason : null,
  };
}

export function batchFrom(snap: DocumentSnapshot): BatchDoc {
  const d = snap.data();
  if (!d) throw new Error(`purge batch ${snap.ref.path} is missing: the checkpoint names a batch that was never written`);
  const decision = (d.decision as Partial<BatchDecision> | undefined) ?? {};
  return {
    planId: String(d.planId ?? ""),
    stage: String(d.stage ?? ""),
    seq: Number(d.seq ?? 0),
    kind: kindFrom(d.kind),
    items: (d.items as PurgeItem[]) ?? [],
    hash: String(d.hash ?? ""),
    decision: {
      fenceGeneration: typeof decision.fenceGeneration === "number" ? decision.fenceGeneration : -1,
      policyVersion: String(decision.policyVersion ?? ""),
      decidedAtMs: typeof decision.decidedAtMs === "number" ? decision.decidedAtMs : 0,
    },
    archives: (d.archives as Record<string, string>) ?? {},
    marked: d.marked === true,
    outcome: { ...emptyOutcome(), ...((d.outcome as Partial<BatchOutcome>) ?? {}) },
    complete: d.complete === true,
  };
}

/** Every path a batch has already settled (recorded an outcome for). */
export function settledPaths(o: BatchOutcome): Set<string> {
  return new Set([...o.deleted, ...o.redecided, ...o.gone, ...o.held.map((h) => h.path), ...o.deferred, ...o.blocked.map((b) => b.path), ...o.masked, ...o.changed]);
}

export function claimFrom(data: DocumentData | undefined): PurgeClaim | null {
  const d = data?.purgeDecision as { unitKey?: unknown; round?: unknown; policyVersion?: unknown; batch?: unknown } | undefined;
  if (!d || typeof d.unitKey !== "string" || typeof d.round !== "number") return null;
  return { unitKey: d.unitKey, round: d.round, policyVersion: typeof d.policyVersion === "string" ? d.policyVersion : "", ...(typeof d.batch === "string" ? { batch: d.batch } : {}) };
}


/** Reads documents in a transaction with the governed field mask (snapshots in the order of `paths`). */
export function readFactsInTx(tx: Transaction, paths: readonly string[]): Promise<DocumentSnapshot[]> {
  return paths.length > 0 ? tx.getAll(...paths.map((p) => db().doc(p)), { fieldMask: [...GOVERNED_FIELDS] }) : Promise.resolve([]);
}

/** What the purge decides on, read from a snapshot (a missing document gives `exists: false`). */
export function factsOf(snap: DocumentSnapshot): PurgeDocFacts {
  return factsOfData(snap.ref.path, snap.exists ? snap.data() : undefined);
}

/** The same facts from a document's data (undefined: the document does not exist). */
export function factsOfData(path: string, data: DocumentData | undefined): PurgeDocFacts {
  const g = readGoverned(data);
  return {
    path,
    exists: data !== undefined,
    retentionClass: g?.retentionClass ?? null,
    lifecycleState: g?.lifecycleState ?? null,
    legalHold: g?.legalHold ?? false,
    holdIds: g?.holdIds ?? [],
    expireAtMs: g?.expireAtMs ?? null,
    retainUntilMs: g?.retainUntilMs ?? null,
    claim: claimFrom(data),
  };
}

/** Reads documents in slices (getAll takes many refs, but one huge call holds everything in memory at once). */
export async function readAll(paths: readonly string[], slice = 300): Promise<DocumentSnapshot[]> {
  const out: DocumentSnapshot[] = [];
  for (let i = 0; i < paths.length; i += slice) {
    const part = paths.slice(i, i + slice);
    if (part.length > 0) out.push(...(await db().getAll(...part.map((p) => db().doc(p)))));
  }
  return out;
}
