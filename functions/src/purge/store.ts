import type { PurgeUnit, UnitKind } from "./rules/unit";
import type { DocumentData, DocumentReference, DocumentSnapshot, Transaction } from "firebase-admin/firestore";
import type { PurgeItem, PurgeBatchKind } from "./rules/batches";
import type { PurgeClaim, PurgeDocFacts } from "./rules/decide";
import { COLLECTIONS, db } from "../platform/firestore";
import { GOVERNED_FIELDS, readGoverned } from "../platform/governed-doc";

/**
 * The purge's control-plane records, all under `retentionJobs` (no client access):
 *   retentionJobs/purge-{unitKey}                         the checkpoint (and, for sweeps, the lease)
 *   retentionJobs/purge-{unitKey}/batches/r{round}-{i}    a batch: its items and what happened to each
 *   retentionJobs/purge-{unitKey}/retained/r{round}-{i}   the manifest's retained items, for verification
 * A unit is one deletion request (unitKey = requestId) or one collection's policy sweep
 * (unitKey = sweep-{collection}).
 */

export type { UnitKind };
export type UnitPhase = "RUNNING" | "DONE" | "BLOCKED";

/** A unit's checkpoint: the unit and the state of its current round. */
export interface UnitCheckpoint extends PurgeUnit {
  round: number;
  phase: UnitPhase;
  manifestHash: string;
  policyVersion: string;
  /** The business time the decisions were made at. */
  decidedAtMs: number;
  batchCount: number;
  /** Manifest paths (deletes and masks): the measure for fanning out. */
  pathCount: number;
  /** Documents under `retained/` holding this round's retained items (ids r{round}-0 .. n-1). */
  retainedChunks: number;
  /** Batches [0, deleteBatches) delete; the rest mask (masking comes last). */
  deleteBatches: number;
  nextStep: number;
  fanOut: { generation: number; stepsPerChunk: number } | null;
  blockedReason: string | null;
}

export interface RetainedRecord {
  path: string;
  action: "retain" | "mask";
  reasonCode: string;
  holdId?: string;
  /** Kept only because of a hold: without it the erasure would delete or mask the path (it is deferred). */
  deferredByHold?: boolean;
}

export interface BatchOutcome {
  deleted: string[];
  gone: string[];
  held: { path: string; holdId: string | null; reasonCode: string }[];
  claimed: string[];
  deferred: string[];
  blocked: { path: string; reason: string }[];
  masked: string[];
}

export interface BatchDoc {
  round: number;
  index: number;
  kind: PurgeBatchKind;
  stage: number;
  items: PurgeItem[];
  /** Verified archives of this batch's items (source path -> archive id), for archive classes. */
  archives: Record<string, string>;
  outcome: BatchOutcome;
  complete: boolean;
}

export const emptyOutcome = (): BatchOutcome => ({ deleted: [], gone: [], held: [], claimed: [], deferred: [], blocked: [], masked: [] });

export const checkpointRef = (unitKey: string): DocumentReference => db().collection(COLLECTIONS.retentionJobs).doc(`purge-${unitKey}`);
export const batchId = (round: number, index: number): string => `r${round}-${String(index).padStart(6, "0")}`;
export const batchRef = (unitKey: string, round: number, index: number): DocumentReference =>
  checkpointRef(unitKey).collection("batches").doc(batchId(round, index));
export const retainedRef = (unitKey: string, round: number, index: number): DocumentReference =>
  checkpointRef(unitKey).collection("retained").doc(batchId(round, index));
export const requestRef = (requestId: string): DocumentReference => db().collection(COLLECTIONS.deletionRequests).doc(requestId);

/** The document that carries a unit's lease: the request itself, or the sweep's checkpoint. */
export const leaseRefOf = (cp: Pick<UnitCheckpoint, "kind" | "requestId" | "unitKey">): DocumentReference =>
  cp.kind === "request" && cp.requestId ? requestRef(cp.requestId) : checkpointRef(cp.unitKey);

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
    manifestHash: String(data.manifestHash ?? ""),
    policyVersion: String(data.policyVersion ?? ""),
    decidedAtMs: typeof data.decidedAtMs === "number" ? data.decidedAtMs : 0,
    batchCount: typeof data.batchCount === "number" ? data.batchCount : 0,
    pathCount: typeof data.pathCount === "number" ? data.pathCount : 0,
    retainedChunks: typeof data.retainedChunks === "number" ? data.retainedChunks : 0,
    deleteBatches: typeof data.deleteBatches === "number" ? data.deleteBatches : 0,
    nextStep: typeof data.nextStep === "number" ? data.nextStep : 0,
    fanOut: (data.fanOut as UnitCheckpoint["fanOut"]) ?? null,
    blockedReason: typeof data.blockedReason === "string" ? data.blockedReason : null,
  };
}

export function batchFrom(snap: DocumentSnapshot): BatchDoc {
  const d = snap.data();
  if (!d) throw new Error(`purge batch ${snap.ref.path} is missing: the checkpoint names a batch that was never written`);
  return {
    round: Number(d.round),
    index: Number(d.index),
    kind: d.kind === "mask" ? "mask" : "delete",
    stage: Number(d.stage),
    items: (d.items as PurgeItem[]) ?? [],
    archives: (d.archives as Record<string, string>) ?? {},
    outcome: { ...emptyOutcome(), ...((d.outcome as Partial<BatchOutcome>) ?? {}) },
    complete: d.complete === true,
  };
}

/** Every path a batch has already settled (recorded an outcome for). */
export function settledPaths(o: BatchOutcome): Set<string> {
  return new Set([...o.deleted, ...o.gone, ...o.held.map((h) => h.path), ...o.claimed, ...o.deferred, ...o.blocked.map((b) => b.path), ...o.masked]);
}

export function claimFrom(data: DocumentData | undefined): PurgeClaim | null {
  const d = data?.purgeDecision as { unitKey?: unknown; round?: unknown; policyVersion?: unknown } | undefined;
  if (!d || typeof d.unitKey !== "string" || typeof d.round !== "number") return null;
  return { unitKey: d.unitKey, round: d.round, policyVersion: typeof d.policyVersion === "string" ? d.policyVersion : "" };
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

/**
 * Whether another unit's claim is still live: its checkpoint is RUNNING the same round. Claims of finished,
 * blocked or superseded rounds are stale, and the document may be claimed again.
 */
export async function claimsActiveInTx(tx: Transaction, facts: readonly PurgeDocFacts[], myUnitKey: string): Promise<(c: PurgeClaim) => boolean> {
  const others = [...new Set(facts.map((f) => f.claim?.unitKey).filter((k): k is string => k !== undefined && k !== myUnitKey))].sort();
  const live = new Map<string, number>();
  if (others.length > 0) {
    const snaps = await tx.getAll(...others.map((k) => checkpointRef(k)));
    for (const s of snaps) {
      const cp = checkpointFrom(s.data());
      if (cp && cp.phase === "RUNNING") live.set(cp.unitKey, cp.round);
    }
  }
  return (c) => live.get(c.unitKey) === c.round;
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
