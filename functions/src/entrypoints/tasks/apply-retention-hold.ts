import { onTaskDispatched } from "firebase-functions/v2/tasks";
import { FUNCTION_SECRETS } from "../../config/params";
import { z } from "zod";
import { enqueueHoldTask, applyHoldFlags, holdFlaggingCursor } from "../../holds/index";
import { PRIMARY_CELL } from "../../kernel/policy";
import { inCell } from "../../platform/firestore";

const ApplyHoldTask = z
  .object({ holdId: z.string().min(1).max(128), after: z.string().max(1024).nullable(), database: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/).optional() })
  .strict();

/**
 * Sets a subtree hold's flags in the background (holds/service.ts#applyHoldFlags): the hold's record protected
 * the whole subtree from the moment it was placed; this only flags its documents and clears their TTL
 * values. A slice that runs out of time enqueues the next one from the saved cursor; a failure throws, so
 * Cloud Tasks retries, and the retry resumes from the cursor.
 */
export const applyRetentionHold = onTaskDispatched(
  {
    retryConfig: { maxAttempts: 10, minBackoffSeconds: 10, maxBackoffSeconds: 300, maxDoublings: 4 },
    rateLimits: { maxConcurrentDispatches: 2, maxDispatchesPerSecond: 1 },
    timeoutSeconds: 540,
    memory: "512MiB",
    secrets: FUNCTION_SECRETS,
  },
  async (req) => {
    const task = ApplyHoldTask.parse(req.data);
    // In the hold's own cell (the payload names it; absent: the primary): the next slice is enqueued from there too.
    await inCell(task.database ?? PRIMARY_CELL, async () => {
      if ((await applyHoldFlags(task.holdId, { budgetMs: 480_000 })) === "CONTINUE") {
        await enqueueHoldTask({ holdId: task.holdId, after: await holdFlaggingCursor(task.holdId) });
      }
    });
  },
);
