import type { Actor } from "../domain/evidence";
import { JOB_NAMES } from "../contract/admin";

/** The jobs an operator can run on demand (runRetentionJob, `retention run`) as well as on a schedule: the contract's list. */
export { JOB_NAMES };
export type JobName = (typeof JOB_NAMES)[number];

export interface JobOptions {
  /** The time the job runs as: the wall clock, or `asOf` on the emulators. */
  nowMs: number;
  /** Set when the job runs as of a time other than the wall clock; recorded in evidence. */
  asOfMs: number | null;
  dryRun: boolean;
  actor: Actor;
  correlationId?: string;
}

/** A job's summary: counts and codes only, safe to return to an operator and to log. */
export interface JobSummary {
  job: JobName;
  dryRun: boolean;
  asOf: string | null;
  [key: string]: unknown;
}

export type JobRunner = (opts: JobOptions) => Promise<JobSummary>;

/**
 * The job bodies, filled in by the modules that implement them. A job that is not listed is reported
 * as not available (reason JOB_NOT_AVAILABLE) rather than pretending to run.
 */
export const JOBS: Partial<Record<JobName, () => Promise<JobRunner>>> = {
  expiryBackfill: async () => (await import("./expiry-backfill")).runExpiryBackfill,
  retentionAudit: async () => (await import("./retention-audit")).runRetentionAudit,
  nightlyPurge: async () => (await import("./nightly-purge")).runNightlyPurge,
};
