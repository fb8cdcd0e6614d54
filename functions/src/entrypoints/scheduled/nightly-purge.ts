import { onSchedule, type ScheduledEvent } from "firebase-functions/v2/scheduler";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import type { JobSummary } from "../../kernel/job";
import { enqueueHoldApply } from "../../holds/index";
import { runNightlyJob } from "../../jobs/nightly-purge";
import { fanOutNightlyPurge, purgeSettings, runNightlyPurge, type EnqueueRequest } from "../../purge/index";

/**
 * The scheduled body, exported so tests (the emulator never fires schedules) call exactly what the
 * schedule runs. With RETENTION_PURGE_REQUEST_TASKS on (the default), each due deletion request becomes a
 * purgeRequest task and this invocation runs the rest (sweeps, resumptions); off, it runs the requests itself,
 * one after another. Then ERASURE_COMPLETE for the requests whose "fully gone by" date has passed
 * (jobs/nightly-purge.ts). A failure throws, so Cloud Scheduler retries; the retry resumes from the
 * checkpoints, and queues no request twice (task ids are per request and schedule time).
 */
export function purgeOnSchedule(event: Pick<ScheduledEvent, "scheduleTime">, nowMs: number = Date.now(), deps: { enqueueRequest?: EnqueueRequest } = {}): Promise<JobSummary> {
  const opts = {
    nowMs,
    asOfMs: null,
    dryRun: false,
    actor: { type: "system", id: "nightlyPurge" } as const,
    correlationId: `schedule:${event.scheduleTime}`,
    applyHold: enqueueHoldApply,
  };
  return runNightlyJob(opts, purgeSettings.requestTasks() ? (o) => fanOutNightlyPurge({ ...o, enqueueRequest: deps.enqueueRequest }) : runNightlyPurge);
}

export const nightlyPurge = onSchedule(
  {
    // The CLI resolves param expressions in schedules at deploy; the SDK's type only names string.
    schedule: PARAMS.purgeSchedule as unknown as string,
    timeZone: PARAMS.purgeTimezone,
    timeoutSeconds: 540,
    // Planning streams; 2 GiB leaves room for the units a run with RETENTION_PURGE_REQUEST_TASKS off plans itself.
    memory: "2GiB",
    retryCount: 1,
    secrets: FUNCTION_SECRETS,
  },
  async (event) => {
    await purgeOnSchedule(event);
  },
);
