import { onSchedule, type ScheduledEvent } from "firebase-functions/v2/scheduler";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { runRetentionAudit } from "../../audit/index";
import { inEveryCellJob } from "../../cells/index";
import type { JobSummary } from "../../kernel/job";

/**
 * The scheduled body, exported so tests (the emulator never fires schedules) call exactly what the
 * schedule runs. The schedule time keys the report, so a retried run rewrites its own report.
 */
export function auditOnSchedule(event: Pick<ScheduledEvent, "scheduleTime">, nowMs: number = Date.now()): Promise<JobSummary> {
  // In every governed database (cells/jobs.ts).
  return inEveryCellJob(runRetentionAudit)({
    nowMs,
    asOfMs: null,
    dryRun: false,
    actor: { type: "system", id: "retentionAudit" },
    correlationId: event.scheduleTime,
    reportKey: event.scheduleTime,
  });
}

export const retentionAudit = onSchedule(
  {
    // The CLI resolves param expressions in schedules at deploy; the SDK's type only names string.
    schedule: PARAMS.auditSchedule as unknown as string,
    timeoutSeconds: 540,
    memory: "512MiB",
    retryCount: 1,
    secrets: FUNCTION_SECRETS,
  },
  async (event) => {
    await auditOnSchedule(event);
  },
);
