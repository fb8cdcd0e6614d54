import { positiveIntFromEnv } from "../platform/settings";

/**
 * The purge engine's tunables, read lazily from the environment (the params in `config/params.ts` reach
 * the runtime as env vars; the CLI and tests use the same names). Every value has a default.
 */
const positiveInt = positiveIntFromEnv;

/** Largest purge batch: its mark transaction writes every document plus up to ten control records. */
export const MAX_BATCH_SIZE = 490;

export const purgeSettings = {
  /**
   * Documents per batch: one mark transaction, one decision transaction, one BulkWriter flush and one
   * record transaction each. A transaction's cost is mostly per transaction, not per document, so larger
   * batches are faster; the mark transaction writes every document of the batch plus a few control
   * records, which must stay within a commit's 500 writes.
   */
  batchSize: (): number => {
    const n = positiveInt("RETENTION_PURGE_BATCH_SIZE", 450);
    if (n > MAX_BATCH_SIZE) throw new Error(`RETENTION_PURGE_BATCH_SIZE is ${n}; at most ${MAX_BATCH_SIZE} (a mark transaction writes each document plus control records, and a commit takes 500 writes)`);
    return n;
  },
  /** A unit with more manifest paths than this is fanned out to the purgeChunk task queue. */
  fanOutThreshold: (): number => positiveInt("RETENTION_PURGE_FANOUT_THRESHOLD", 5000),
  /** Steps (mark or execute one batch) per task invocation. */
  chunkSteps: (): number => positiveInt("RETENTION_PURGE_CHUNK_STEPS", 40),
  /** How long a lease lasts without renewal; every step renews it. */
  leaseMs: (): number => positiveInt("RETENTION_PURGE_LEASE_SECONDS", 600) * 1000,
  /** Documents a policy sweep takes per collection and run; the rest waits for the next run. */
  sweepLimit: (): number => positiveInt("RETENTION_PURGE_SWEEP_LIMIT", 2000),
  /** Deletion requests one run takes on. */
  maxRequestsPerRun: (): number => positiveInt("RETENTION_PURGE_MAX_REQUESTS", 200),
  /** How long a retention-admin's approval of a tripped brake (approvePurgeRun) stays usable. */
  approvalTtlMs: (): number => positiveInt("RETENTION_BRAKE_APPROVAL_HOURS", 24) * 3_600_000,
  /**
   * The delete rate. BulkWriter starts at the start rate and raises it 1.5x every 5 minutes up to the
   * ceiling: with the defaults (500, 10,000) that is Firestore's 500/50/5 ramp-up guidance for traffic to
   * live collections. Setting both high (the bench's "fastest") removes the throttle.
   */
  startOpsPerSecond: (): number => positiveInt("RETENTION_PURGE_START_OPS_PER_SECOND", 500),
  maxOpsPerSecond: (): number => positiveInt("RETENTION_PURGE_MAX_OPS_PER_SECOND", 10_000),
};
