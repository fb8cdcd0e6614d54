import { requestUnit, sweepUnit, type PurgeUnit } from "../rules/unit";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { FieldPath, FieldValue, type DocumentData, type DocumentReference, type QueryDocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import { assertRequestMove, parseRequestState, purgeMayTake, subjectFromRecord, type RequestState, type TakeFacts } from "../../requests/rules/requests";
import { DomainError } from "../../kernel/errors";
import type { Subject } from "../../plan/rules";
import { COLLECTIONS, db } from "../../platform/firestore";
import { toMs, toTimestamp } from "../../platform/governed-doc";
import { fenceLease, LEASE_TX, leaseOwner, leaseState, leaseValue, releaseLeaseInTx, renewLeaseInTx, tryAcquireLease, type LeaseHolder } from "../../platform/lease";
import { log } from "../../platform/logs";
import { fire, purgeEvidence, type StepEnv } from "./env";
import type { UnitPlan } from "./plan";
import { policy } from "../../platform/registry";
import { batchRef, checkpointFrom, checkpointRef, requestRef, type UnitCheckpoint } from "../store";
import { pruneRecords } from "./records";
import { fenceStep } from "./step";

/** A unit this runner holds the lease on, as it was when leased. */
export interface LeasedUnit extends PurgeUnit {
  leaseRef: DocumentReference;
  /** The checkpoint of the unit's last round, if any. */
  previous: UnitCheckpoint | null;
  /** A round is RUNNING: resume it instead of planning anew. */
  resume: boolean;
}

/** The subject of a deletion request document (a user, or a whole tenant; a request group's member in its scope). */
export const subjectOf = (data: DocumentData): Subject => subjectFromRecord(data);

/**
 * The request a purge unit works for has moved on without it (the owner cancelled it in the meantime): the
 * unit stops before it writes anything.
 */
export class RequestMovedOnError extends Error {
  constructor(
    readonly requestId: string,
    readonly state: string,
  ) {
    super(`deletion request ${requestId} is ${state}: the purge leaves it`);
    this.name = "RequestMovedOnError";
  }
}

/**
 * Reads the request in the caller's transaction (after the lease fence) and checks it may move to `to`
 * from the state it is in now; RequestMovedOnError when it may not (a cancel won).
 */
async function requestMoveInTx(tx: Transaction, requestId: string, to: RequestState): Promise<void> {
  const state = parseRequestState((await tx.get(requestRef(requestId))).get("state"));
  try {
    assertRequestMove(state, to);
  } catch (err) {
    if (err instanceof DomainError) throw new RequestMovedOnError(requestId, state);
    throw err;
  }
}

/** A request's take facts (requests/rules/requests.ts#purgeMayTake) from its stored fields. */
export const takeFactsOf = (d: DocumentData): TakeFacts => ({ state: d.state, graceEndsAtMs: toMs(d.graceEndsAt), heldAtGeneration: d.heldAtGeneration, awaitingRecord: d.awaitingRecord });

/**
 * Leases a deletion request the run may take (`purgeMayTake`). A request leased by a live runner is skipped;
 * the transaction makes sure only one runner wins.
 */
export async function leaseRequest(requestId: string, holder: LeaseHolder, nowMs: number, fenceGeneration: number): Promise<LeasedUnit | null> {
  const ref = requestRef(requestId);
  const data = await tryAcquireLease(ref, holder, (d) => d !== undefined && purgeMayTake(takeFactsOf(d), nowMs, fenceGeneration));
  if (!data) return null;
  const previous = checkpointFrom((await checkpointRef(requestId).get()).data());
  log.info("purge.request.leased", { requestId, owner: holder.owner });
  return {
    ...requestUnit(requestId, subjectOf(data)),
    leaseRef: ref,
    previous,
    resume: data.state === "PROCESSING" && previous?.phase === "RUNNING",
  };
}

/** Leases one collection's sweep (the lease lives on its checkpoint). */
export async function leaseSweep(collection: string, holder: LeaseHolder): Promise<LeasedUnit | null> {
  const unit = sweepUnit(collection);
  const ref = checkpointRef(unit.unitKey);
  const data = await tryAcquireLease(ref, holder, () => true);
  if (!data) return null;
  const previous = checkpointFrom(data);
  return { ...unit, leaseRef: ref, previous, resume: previous?.phase === "RUNNING" };
}

function baseCheckpoint(unit: LeasedUnit, plan: UnitPlan, env: StepEnv): Omit<UnitCheckpoint, "phase" | "nextStep" | "blockedReason"> {
  return {
    unitKey: unit.unitKey,
    kind: unit.kind,
    requestId: unit.requestId,
    collection: unit.collection,
    subject: unit.subject,
    round: plan.round,
    planId: plan.planId,
    manifestHash: plan.manifestHash,
    policyVersion: policy().version,
    decidedAtMs: env.nowMs,
    fenceGeneration: plan.fenceGeneration,
    layout: plan.layout,
    groupSize: 1,
    pathCount: plan.pathCount,
    retainedChunks: plan.retainedChunks,
    late: [],
    fanOut: null,
  };
}

/** Batch records updated per fenced transaction while the archive ids are written into them. */
const ARCHIVE_RECORDS_PER_TX = 100;

/**
 * Writes the verified archive ids into the batch records that hold their sources (one write per batch), in
 * transactions that read the lease first: a runner that lost it writes nothing.
 */
async function recordArchives(unit: LeasedUnit, plan: UnitPlan, archives: ReadonlyMap<string, string>, env: StepEnv): Promise<void> {
  const byBatch = new Map<string, { stage: string; seq: number; ids: Record<string, string> }>();
  for (const a of plan.needsArchive) {
    const id = archives.get(a.path);
    if (id === undefined) continue;
    const key = `${a.stage}/${a.seq}`;
    const entry = byBatch.get(key) ?? { stage: a.stage, seq: a.seq, ids: {} };
    entry.ids[a.path] = id;
    byBatch.set(key, entry);
  }
  const all = [...byBatch.values()];
  for (let i = 0; i < all.length; i += ARCHIVE_RECORDS_PER_TX) {
    await db().runTransaction(async (tx) => {
      await fenceLease(tx, unit.leaseRef, env.holder);
      for (const b of all.slice(i, i + ARCHIVE_RECORDS_PER_TX)) tx.update(batchRef(unit.unitKey, plan.planId, b.stage, b.seq), { archives: b.ids });
      renewLeaseInTx(tx, unit.leaseRef, env.holder);
    }, LEASE_TX);
  }
}

/**
 * Starts a fresh round on a plan whose records are written: the verified archive ids go into their batch
 * records, then one fenced transaction makes the round RUNNING on that plan, moves the request to
 * PROCESSING and records PURGE_DECIDED. Records of every other plan are then removed, under the same fence
 * as every step of the round (the lease, and the checkpoint at this round and plan). Nothing is deleted yet.
 */
export async function startRound(unit: LeasedUnit, plan: UnitPlan, archives: ReadonlyMap<string, string>, groupSize: number, env: StepEnv): Promise<UnitCheckpoint> {
  await recordArchives(unit, plan, archives, env);
  const batches = plan.layout.reduce((n, s) => n + s.batches, 0);
  const cp: UnitCheckpoint = { ...baseCheckpoint(unit, plan, env), groupSize, phase: "RUNNING", nextStep: 0, blockedReason: null };
  await db().runTransaction(async (tx) => {
    await fenceLease(tx, unit.leaseRef, env.holder);
    if (unit.kind === "request" && unit.requestId) await requestMoveInTx(tx, unit.requestId, "PROCESSING");
    const evidence = await openEvidence(tx, unit.unitKey);
    const cpData = { ...cp, startedAt: toTimestamp(env.nowMs), counts: {} };
    const lease = { lease: leaseValue(env.holder) };
    if (unit.kind === "request" && unit.requestId) {
      tx.set(checkpointRef(unit.unitKey), cpData);
      tx.update(requestRef(unit.requestId), {
        ...lease,
        state: "PROCESSING",
        manifestHash: plan.manifestHash,
        blockedReason: FieldValue.delete(),
        timeline: FieldValue.arrayUnion({ at: toTimestamp(env.nowMs), event: "PURGE_STARTED", detail: `round ${plan.round}` }),
      });
    } else {
      tx.set(checkpointRef(unit.unitKey), { ...cpData, ...lease });
    }
    evidence.append(
      purgeEvidence(env, cp, {
        action: "PURGE_DECIDED",
        decision: { reason: "AUTHORIZED_BY_POLICY", unitKind: unit.kind },
        counts: { delete: plan.counts.delete, mask: plan.counts.mask, retain: plan.counts.retain, batches, archived: archives.size, ...(plan.counts.objects > 0 ? { objects: plan.counts.objects } : {}) },
        detail: { planId: plan.planId, decidedGeneration: plan.fenceGeneration },
      }),
    );
  }, EVIDENCE_TX);
  await fire(env, { point: "beforePrune", unitKey: cp.unitKey, round: cp.round, step: null, batch: null, paths: [] });
  // A round that moved on meanwhile (it cannot while the lease is ours) leaves the rest to whoever has it.
  await pruneRecords(unit.unitKey, plan.planId, async (tx) => (await fenceStep(tx, cp, env, "any")) !== null);
  return cp;
}

/**
 * Blocks a unit before anything is deleted (the predicate refused paths of a request, or an archive did
 * not verify): the request becomes BLOCKED with the reason, the lease is released, and the evidence names
 * the refused paths. The next run plans the unit afresh.
 */
export async function blockUnit(unit: LeasedUnit, plan: UnitPlan, reason: string, paths: readonly string[], refused: number, env: StepEnv): Promise<void> {
  await db().runTransaction(async (tx) => {
    await fenceLease(tx, unit.leaseRef, env.holder);
    if (unit.kind === "request" && unit.requestId) await requestMoveInTx(tx, unit.requestId, "BLOCKED");
    const evidence = await openEvidence(tx, unit.unitKey);
    const at = toTimestamp(env.nowMs);
    const cp = { ...baseCheckpoint(unit, plan, env), layout: [], pathCount: 0, retainedChunks: 0, phase: "BLOCKED", nextStep: 0, blockedReason: reason, finishedAt: at };
    tx.set(checkpointRef(unit.unitKey), cp);
    if (unit.kind === "request" && unit.requestId) {
      releaseLeaseInTx(tx, unit.leaseRef, {
        state: "BLOCKED",
        blockedReason: reason,
        timeline: FieldValue.arrayUnion({ at, event: "PURGE_BLOCKED", detail: reason }),
      });
    }
    evidence.append(
      purgeEvidence(env, { ...cp }, {
        action: "PURGE_BLOCKED",
        decision: { reason },
        paths: paths.slice(0, 100),
        counts: { refused },
      }),
    );
  }, EVIDENCE_TX);
  log.warn("purge.unit.blocked", { unitKey: unit.unitKey, requestId: unit.requestId, reason, refused: paths.length });
}

/**
 * The owner a fanned-out round's lease is handed to: one per unit, round and hand-over generation. It is a
 * hand-over, not a runner: no transaction is fenced by it. Each delivery of a purgeChunk task takes the lease
 * from it under an owner of its own (`leaseChunk`) and hands it back when its chunk is done (`handBackChunk`).
 */
export const chainOwner = (unitKey: string, round: number, generation: number): string => `purgeChunk:${unitKey}:r${round}:g${generation}`;

/**
 * One delivery of a purgeChunk task takes its chain's lease, in one transaction, under its own owner
 * (`holder`, named `${chain}:…`): LEASED when the lease was handed to the chain, or held by a delivery of it
 * whose lease expired; BUSY when another delivery of the chain holds it live (a duplicate, or the previous
 * attempt of this task, still at work); STALE when the lease is no longer the chain's (the round ended, or
 * another runner took the unit over and handed it to a newer chain).
 */
export async function leaseChunk(leaseRef: DocumentReference, chain: string, holder: LeaseHolder): Promise<"LEASED" | "BUSY" | "STALE"> {
  return db().runTransaction(async (tx) => {
    const data = (await tx.get(leaseRef)).data();
    const owner = leaseOwner(data);
    if (owner !== chain && !owner?.startsWith(`${chain}:`)) return "STALE" as const;
    if (owner !== chain && leaseState(data, holder.owner, holder.clock()) === "taken") return "BUSY" as const;
    tx.update(leaseRef, { lease: leaseValue(holder) });
    return "LEASED" as const;
  }, LEASE_TX);
}

/** A delivery whose chunk is done hands the lease back to its chain, for the next chunk's delivery (LeaseLostError if it lost it). */
export async function handBackChunk(leaseRef: DocumentReference, chain: string, holder: LeaseHolder): Promise<void> {
  await db().runTransaction(async (tx) => {
    await fenceLease(tx, leaseRef, holder);
    tx.update(leaseRef, { lease: leaseValue(holder, chain) });
  }, LEASE_TX);
}

/**
 * Hands a RUNNING unit over to the task queue: the lease passes to the chain's owner (so this runner can
 * no longer commit steps), and the checkpoint records the generation, which makes any older chain stale.
 */
export async function handOver(cp: UnitCheckpoint, stepsPerChunk: number, env: StepEnv): Promise<{ generation: number }> {
  const leaseRef = cp.kind === "request" && cp.requestId ? requestRef(cp.requestId) : checkpointRef(cp.unitKey);
  return db().runTransaction(async (tx) => {
    await fenceLease(tx, leaseRef, env.holder);
    const cpSnap = await tx.get(checkpointRef(cp.unitKey));
    const now = checkpointFrom(cpSnap.data());
    if (!now || now.round !== cp.round || now.phase !== "RUNNING") throw new Error(`PURGE_HANDOVER_STALE: ${cp.unitKey} is not RUNNING round ${cp.round}`);
    const generation = (now.fanOut?.generation ?? 0) + 1;
    const lease = { lease: leaseValue(env.holder, chainOwner(cp.unitKey, cp.round, generation)) };
    const fanOut = { fanOut: { generation, stepsPerChunk } };
    if (leaseRef.path === cpSnap.ref.path) tx.update(leaseRef, { ...fanOut, ...lease });
    else {
      tx.update(cpSnap.ref, fanOut);
      tx.update(leaseRef, lease);
    }
    return { generation };
  }, EVIDENCE_TX);
}

/** Requests read per page while looking for the ones a run may take. */
export const CANDIDATE_PAGE = 500;

/** The request states a run may take (each subject to `purgeMayTake`). */
const TAKEABLE = ["PENDING", "PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD"];

/**
 * Deletion requests a run may take (requests/rules/requests.ts#purgeMayTake), oldest grace end first. The state filter is a
 * single-field query (no composite index); the rest is judged in memory over the few fields it selects.
 */
export async function candidateRequestIds(nowMs: number, limit: number, fenceGeneration: number): Promise<string[]> {
  const found: { id: string; graceMs: number }[] = [];
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = db()
      .collection(COLLECTIONS.deletionRequests)
      .where("state", "in", TAKEABLE)
      .select("state", "graceEndsAt", "heldAtGeneration", "awaitingRecord")
      .orderBy(FieldPath.documentId())
      .limit(CANDIDATE_PAGE);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    for (const d of snap.docs) {
      if (purgeMayTake(takeFactsOf(d.data()), nowMs, fenceGeneration)) found.push({ id: d.id, graceMs: toMs(d.get("graceEndsAt")) ?? Number.POSITIVE_INFINITY });
    }
    if (snap.size < CANDIDATE_PAGE) break;
    last = snap.docs[snap.docs.length - 1];
  }
  return found
    .sort((a, b) => a.graceMs - b.graceMs || (a.id < b.id ? -1 : 1))
    .slice(0, limit)
    .map((f) => f.id);
}

/**
 * The deletion requests a run may take, a page at a time, oldest grace end first, for a run that hands each to a
 * task and so must not hold them all (100,000 due requests are 100,000 ids). One query over the takeable states
 * whose grace ended by `nowMs`, in (graceEndsAt, id) order (the (state, graceEndsAt) index), then
 * `purgeMayTake` over the fields it selects. The range loses no takeable request: PENDING and BLOCKED need the
 * grace over, and PROCESSING and RETAINED_UNDER_HOLD are past it (only a taken request gets there); it skips the
 * requests still in their grace period, which would otherwise be read every night.
 */
export async function* dueRequestPages(nowMs: number, fenceGeneration: number, pageSize: number = CANDIDATE_PAGE): AsyncGenerator<string[]> {
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = db()
      .collection(COLLECTIONS.deletionRequests)
      .where("state", "in", TAKEABLE)
      .where("graceEndsAt", "<=", toTimestamp(nowMs))
      .select("state", "graceEndsAt", "heldAtGeneration", "awaitingRecord")
      .orderBy("graceEndsAt")
      .orderBy(FieldPath.documentId())
      .limit(pageSize);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    const page = snap.docs.filter((d) => purgeMayTake(takeFactsOf(d.data()), nowMs, fenceGeneration)).map((d) => d.id);
    if (page.length > 0) yield page;
    if (snap.size < pageSize) return;
    last = snap.docs[snap.docs.length - 1];
  }
}
