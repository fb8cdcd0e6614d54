import { onTaskDispatched } from "firebase-functions/v2/tasks";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { z } from "zod";
import { retryLater } from "../../purge/index";
import { runPurgeRequestTask } from "../../cells/index";

const PurgeRequestTask = z
  .object({
    requestId: z.string().min(1).max(128),
    runKey: z.string().min(1).max(64),
    nowMs: z.number().int(),
    asOfMs: z.number().int().nullable(),
    correlationId: z.string().nullable(),
    /** The governed database (logical name) of a cell request; absent: the primary. */
    database: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/).optional(),
  })
  .strict();

/**
 * One due deletion request of a scheduled purge (see purge/request-tasks.ts#runPurgeRequest). The queue runs
 * RETENTION_PURGE_REQUEST_CONCURRENCY of them at once (deploy-time); the dispatch rate is set above what that
 * concurrency lets through (an erasure takes a second or more), so concurrency is the limit. A request another
 * delivery holds, or one left unfinished at the time budget, throws so that Cloud Tasks delivers it again; so
 * does any failure, and the retry resumes from the checkpoint.
 */
export const purgeRequest = onTaskDispatched(
  {
    retryConfig: { maxAttempts: 10, minBackoffSeconds: 10, maxBackoffSeconds: 300, maxDoublings: 4 },
    rateLimits: { maxConcurrentDispatches: PARAMS.purgeRequestConcurrency, maxDispatchesPerSecond: 100 },
    timeoutSeconds: 540,
    // Planning streams (memory does not grow with the subject); a tenant's closure is planned here too.
    memory: "1GiB",
    secrets: FUNCTION_SECRETS,
  },
  async (req) => {
    // In the task's cell, with what spans cells after it (cells/purge.ts#runPurgeRequestTask).
    const report = await runPurgeRequestTask(PurgeRequestTask.parse(req.data));
    if (retryLater(report)) throw new Error(`PURGE_REQUEST_${report.outcome}: ${report.unitKey} is retried later`);
  },
);
