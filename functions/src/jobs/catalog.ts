import type { JobName, JobRunner } from "../kernel/job";

/**
 * Schedule wiring: which job body each schedule, runRetentionJob and `retention run` start. Loaded lazily, so
 * importing the catalog loads no job. A job that is not listed is reported as not available
 * (reason JOB_NOT_AVAILABLE) rather than pretending to run.
 */
export const JOBS: Partial<Record<JobName, () => Promise<JobRunner>>> = {
  // Every job covers every governed database: the nightly purge with what spans them in between
  // (cells/purge.ts), the others run in each database in turn (cells/jobs.ts#inEveryCellJob).
  expiryBackfill: async () => (await import("../cells")).inEveryCellJob((await import("../backfill")).runExpiryBackfill),
  retentionAudit: async () => (await import("../cells")).inEveryCellJob((await import("../audit")).runRetentionAudit),
  nightlyPurge: async () => (await import("./nightly-purge")).runNightlyJob,
  evidenceAnchor: async () => (await import("../cells")).inEveryCellJob((await import("../evidence")).runEvidenceAnchor),
};
