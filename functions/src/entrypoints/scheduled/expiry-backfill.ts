import { onSchedule } from "firebase-functions/v2/scheduler";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { setting } from "../../platform/settings";
import { log } from "../../platform/logs";
import { runExpiryBackfill } from "../../backfill/index";
import { inEveryCellJob } from "../../cells/index";
import { registryPolicy } from "../../platform/registry";

/**
 * The nightly expiry backfill. Each run works through its budget and saves its cursor; the next run
 * resumes there, so a large backlog is worked off over several nights without a run ever timing out.
 * A failure throws (Cloud Scheduler retries); the committed pages stay committed.
 */
export const expiryBackfill = onSchedule(
  {
    // The SDK types `schedule` as a string, but it serialises params like any other option, and the CLI
    // resolves them at deploy: the cron stays a deploy-time setting.
    schedule: PARAMS.backfillSchedule as unknown as string,
    timeoutSeconds: 540,
    retryCount: 1,
    secrets: FUNCTION_SECRETS,
  },
  async (event) => {
    const nowMs = Date.now();
    // In every governed database, each with its own cursor (cells/jobs.ts).
    const summary = await inEveryCellJob(runExpiryBackfill)({
      nowMs,
      asOfMs: null,
      dryRun: false,
      actor: { type: "system", id: "expiryBackfill" },
      correlationId: `schedule:${event.scheduleTime}`,
      // Bounded below by 1 in the settings table: an unset or zero budget would make every run a silent no-op.
      maxDocs: setting("backfillMaxDocs"),
      // One run's time is shared by the governed databases, each in turn: the function's timeout bounds them all.
      maxSeconds: Math.max(1, Math.floor(setting("backfillMaxSeconds") / registryPolicy().cells().length)),
    });
    log.info("job.done", { job: "expiryBackfill", done: summary.done === true, scanned: Number(summary.scanned) });
  },
);
