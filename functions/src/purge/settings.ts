import { setting } from "../platform/settings";

/**
 * The purge engine's tunables, derived from the settings table (config/params.ts) and read lazily: the
 * functions, the CLI and the tests use the same names and defaults.
 */
export const purgeSettings = {
  /**
   * Documents per batch: one batch record and one delete transaction each. A transaction's cost is mostly
   * per transaction, not per document, so larger batches are faster; a batch's transaction writes every
   * document plus a few control records, which must stay within a commit's 500 writes (the setting's bound, 490).
   */
  batchSize: (): number => setting("purgeBatchSize"),
  /** Batches per step: the checkpoint advances (and the lease renews) once per step. */
  stepBatches: (): number => setting("purgeStepBatches"),
  /** How many batches of a step run at a time (each its own transaction). */
  parallelBatches: (): number => setting("purgeParallelBatches"),
  /** A unit with more manifest paths than this is fanned out to the purgeChunk task queue. */
  fanOutThreshold: (): number => setting("purgeFanoutThreshold"),
  /** Steps (a group of batches each) per task invocation. */
  chunkSteps: (): number => setting("purgeChunkSteps"),
  /** How long a lease lasts without renewal; every step renews it. */
  leaseMs: (): number => setting("purgeLeaseSeconds") * 1000,
  /** Documents a policy sweep takes per collection and run; the rest waits for the next run. */
  sweepLimit: (): number => setting("purgeSweepLimit"),
  /** Deletion requests one run takes on when it runs them itself. */
  maxRequestsPerRun: (): number => setting("purgeMaxRequests"),
  /** The scheduled run hands each due deletion request to the purgeRequest queue (one task each). */
  requestTasks: (): boolean => setting("purgeRequestTasks"),
  /** purgeRequest tasks at once (the queue's maxConcurrentDispatches); also the number of brake budget shards, up to 64. */
  requestConcurrency: (): number => setting("purgeRequestConcurrency"),
  /** Deletion requests one scheduled run enqueues. */
  maxRequestTasks: (): number => setting("purgeMaxRequestTasks"),
  /** How long a retention-admin's approval of a tripped brake (approvePurgeRun) stays usable. */
  approvalTtlMs: (): number => setting("purgeBrakeApprovalHours") * 3_600_000,
  /**
   * The governed database's recovery copies as the deployment configured them (the service cannot read them): a
   * request's "fully gone by" date counts on them (requests/rules/gone-by.ts).
   */
  recoveryWindows: (): { pitrDays: number; backupRetentionDays: number; archiveKeyDestroyDays: number } => ({
    pitrDays: setting("pitrDays"),
    backupRetentionDays: setting("backupRetentionDays"),
    archiveKeyDestroyDays: setting("archiveKeyDestroyDays"),
  }),
  /**
   * The delete rate: it starts at the start rate and rises 1.5x every 5 minutes up to the ceiling. With the
   * defaults (500, 10,000) that is Firestore's 500/50/5 ramp-up guidance for traffic to live collections.
   * Setting both high (the bench's "fastest") removes the throttle.
   */
  startOpsPerSecond: (): number => setting("purgeStartOpsPerSecond"),
  maxOpsPerSecond: (): number => setting("purgeMaxOpsPerSecond"),
};
