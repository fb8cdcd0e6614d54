import type { Subject } from "../../plan/rules";

/**
 * A unit of purge work: one deletion request (unitKey = the request id) or one collection's policy sweep
 * (unitKey = `sweep-{collection}`). The one identity every record, step, decision and report of the purge
 * names; the other shapes are this unit plus the state they add (its checkpoint, its lease, its plan, its
 * report).
 */
export interface PurgeUnit {
  kind: "request" | "sweep";
  unitKey: string;
  requestId: string | null;
  collection: string | null;
  subject: Subject | null;
}

export type UnitKind = PurgeUnit["kind"];

/** The unit of a deletion request (a user's account erasure, or a tenant's closure). */
export const requestUnit = (requestId: string, subject: Subject): PurgeUnit => ({ kind: "request", unitKey: requestId, requestId, collection: null, subject });

/** The unit of one collection's policy sweep. */
export const sweepUnit = (collection: string): PurgeUnit => ({ kind: "sweep", unitKey: `sweep-${collection}`, requestId: null, collection, subject: null });

/** A unit in one of its rounds: each fresh plan of a unit is a new round, and claims of older rounds are stale. */
export type UnitRound = Pick<PurgeUnit, "unitKey"> & { round: number };

/**
 * The evidence chain a batch's PURGE_BATCH entry goes to is picked by this key, not by the unit's: the batches of
 * one step run in parallel, and on one chain they would wait on its head one after another. Each batch record
 * is decided once, so its key names one chain for the whole life of the record.
 */
export const batchEvidenceKey = (unitKey: string, batchId: string): string => `${unitKey}/batch/${batchId}`;
