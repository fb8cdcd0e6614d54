import { onSchedule, type ScheduledEvent } from "firebase-functions/v2/scheduler";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import type { JobSummary } from "../../kernel/job";
import { enqueueHoldApply } from "../../holds/index";
import { runNightlyJob } from "../../jobs/nightly-purge";

/**
 * The scheduled body, exported so tests (the emulator never fires schedules) call exactly what the
 * schedule runs: the purge, then ERASURE_COMPLETE for the requests whose "fully gone by" date has passed. A
 * failure throws, so Cloud Scheduler retries; the retry resumes from the checkpoints.
 */
export function purgeOnSchedule(event: Pick<ScheduledEvent, "scheduleTime">, nowMs: number = Date.now()): Promise<JobSummary> {
  return runNightlyJob({
    nowMs,
    asOfMs: null,
    dryRun: false,
    actor: { type: "system", id: "nightlyPurge" },
    correlationId: `schedule:${event.scheduleTime}`,
    applyHold: enqueueHoldApply,
  });
}

export const nightlyPurge = onSchedule(
  {
    // The CLI resolves param expressions in schedules at deploy; the SDK's type only names string.
    schedule: PARAMS.purgeSchedule as unknown as string,
    timeZone: PARAMS.purgeTimezone,
    timeoutSeconds: 540,
    // Planning holds a unit's manifest in memory, about 0.8 KB per document (docs/SCALE.md); at 2 GiB the
    // heap plans subjects of several hundred thousand documents. Execution (here and in purgeChunk) is flat.
    memory: "2GiB",
    retryCount: 1,
    secrets: FUNCTION_SECRETS,
  },
  async (event) => {
    await purgeOnSchedule(event);
  },
);
