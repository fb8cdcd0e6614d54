import { onSchedule } from "firebase-functions/v2/scheduler";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { sweepProcessorNotices } from "../../processors/index";

/**
 * The processors' outbox relay (processors/sweep.ts): every notice that waits for a delivery task gets one, and a
 * notice a hold kept back is looked at again. Notices are delivered within a sweep interval of the erasure.
 */
export const processorNotices = onSchedule(
  {
    // The CLI resolves param expressions in schedules at deploy; the SDK's type only names string.
    schedule: PARAMS.processorSweepSchedule as unknown as string,
    timeoutSeconds: 300,
    memory: "256MiB",
    retryCount: 1,
    secrets: FUNCTION_SECRETS,
  },
  async () => {
    await sweepProcessorNotices({ nowMs: Date.now() });
  },
);
