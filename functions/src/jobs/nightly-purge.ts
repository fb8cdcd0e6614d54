import type { JobSummary } from "../kernel/job";
import { runNightlyAcrossCells, severalCells } from "../cells/index";
import { recordErasureCompletions, runNightlyPurge, type CompletionSummary, type PurgeRunOptions } from "../purge/index";

/**
 * The nightly purge's job body, as the schedule, runRetentionJob and `retention run` start it: the purge run (in
 * this invocation, or, from the schedule, fanned out to purgeRequest tasks: `purgeRun`), then
 * the completion step (ERASURE_COMPLETE for every PURGED request whose "fully gone by" date has passed), whose
 * counts join the summary as `erasureComplete`. The completion step runs even when a purge unit failed, so one
 * broken unit never holds back every other request's final entry; the purge's failure is thrown after it (the
 * schedule retries, and both steps are idempotent).
 */
export async function runNightlyJob(opts: PurgeRunOptions, purgeRun: (opts: PurgeRunOptions) => Promise<JobSummary> = runNightlyPurge): Promise<JobSummary> {
  // Several governed databases: the same steps in every cell, with what spans them in between (cells/purge.ts).
  if (severalCells()) return runNightlyAcrossCells(opts, purgeRun);
  const purge = await purgeRun(opts).then(
    (summary) => ({ summary, failure: null }),
    (failure: unknown) => ({ summary: null, failure }),
  );
  let erasureComplete: CompletionSummary;
  try {
    erasureComplete = await recordErasureCompletions(opts);
  } catch (err) {
    throw purge.failure === null ? err : new AggregateError([purge.failure, err], "PURGE_RUN_FAILED: the purge and its completion step failed");
  }
  if (purge.summary === null) throw purge.failure;
  return { ...purge.summary, erasureComplete };
}
