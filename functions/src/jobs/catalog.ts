import type { JobName, JobRunner } from "../kernel/job";

/**
 * Schedule wiring: which job body each schedule, runRetentionJob and `retention run` start. Loaded lazily, so
 * importing the catalog loads no job. A job that is not listed is reported as not available
 * (reason JOB_NOT_AVAILABLE) rather than pretending to run.
 */
export const JOBS: Partial<Record<JobName, () => Promise<JobRunner>>> = {
  expiryBackfill: async () => (await import("../backfill")).runExpiryBackfill,
  retentionAudit: async () => (await import("../audit")).runRetentionAudit,
  nightlyPurge: async () => (await import("./nightly-purge")).runNightlyJob,
  evidenceAnchor: async () => (await import("../evidence")).runEvidenceAnchor,
};
