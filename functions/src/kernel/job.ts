import type { Actor } from "./actor";
import { preconditionFailed } from "./errors";

/** The jobs an operator can run on demand (runRetentionJob, `retention run`) as well as on a schedule. */
export const JOB_NAMES = ["nightlyPurge", "retentionAudit", "expiryBackfill", "evidenceAnchor"] as const;
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
 * The clock a job runs on. `asOf` (time travel, to get past a grace period in a demo or a test) is accepted
 * only on the emulators, so that production can never pretend it is later than it is.
 */
export function resolveJobClock(asOf: string | undefined, onEmulator: boolean, wallMs: number): { nowMs: number; asOfMs: number | null } {
  if (asOf === undefined) return { nowMs: wallMs, asOfMs: null };
  if (!onEmulator) throw preconditionFailed("AS_OF_NOT_ALLOWED", "asOf is accepted only on the emulators.");
  const asOfMs = Date.parse(asOf);
  return { nowMs: asOfMs, asOfMs };
}
