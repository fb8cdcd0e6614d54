import { onSchedule, type ScheduledEvent } from "firebase-functions/v2/scheduler";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { runEvidenceAnchor } from "../../evidence/index";
import { inEveryCellJob } from "../../cells/index";
import type { JobSummary } from "../../kernel/job";

/**
 * The scheduled body, exported so tests (the emulator never fires schedules) call exactly what the schedule
 * runs: seal the legacy segment once, then write every chain head outside the database. The interval is the
 * window the anchors leave: evidence appended since the last anchor could be cut off unnoticed by someone with
 * database write (docs/decisions/0006-evidence-chain.md).
 */
export function anchorOnSchedule(event: Pick<ScheduledEvent, "scheduleTime">): Promise<JobSummary> {
  // In every governed database (cells/jobs.ts).
  return inEveryCellJob(runEvidenceAnchor)({ nowMs: Date.now(), asOfMs: null, dryRun: false, actor: { type: "system", id: "evidenceAnchor" }, correlationId: `schedule:${event.scheduleTime}` });
}

export const evidenceAnchor = onSchedule(
  {
    // The CLI resolves param expressions in schedules at deploy; the SDK's type only names string.
    schedule: PARAMS.evidenceAnchorSchedule as unknown as string,
    timeoutSeconds: 120,
    memory: "256MiB",
    retryCount: 1,
    secrets: FUNCTION_SECRETS,
  },
  async (event) => {
    await anchorOnSchedule(event);
  },
);
