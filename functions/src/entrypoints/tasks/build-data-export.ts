import { onTaskDispatched } from "firebase-functions/v2/tasks";
import { z } from "zod";
import { buildAccessExport } from "../../access/index";
import { FUNCTION_SECRETS } from "../../config/params";

const BuildExportTask = z.object({ exportId: z.string().min(1).max(128) }).strict();

/** The queue's retry settings; the build's last attempt ends the export FAILED instead of throwing again. */
export const BUILD_RETRY = { maxAttempts: 8, minBackoffSeconds: 30, maxBackoffSeconds: 600, maxDoublings: 4 } as const;

/**
 * Builds one access export (access/service.ts#buildAccessExport): idempotent, so a redelivery is harmless; a failure
 * throws and Cloud Tasks retries with backoff, until the queue's last attempt, which ends the export FAILED with
 * evidence (so it blocks no new ask, and TTL deletes it). A build leased by another attempt throws too, so it is tried
 * again after the lease. The export is written to a temporary directory first (in memory on Cloud Functions): the
 * memory to match.
 */
export const buildDataExport = onTaskDispatched(
  {
    retryConfig: BUILD_RETRY,
    rateLimits: { maxConcurrentDispatches: 4 },
    timeoutSeconds: 540,
    memory: "2GiB",
    secrets: FUNCTION_SECRETS,
  },
  async (req) => {
    const task = BuildExportTask.parse(req.data);
    const attempt = req.retryCount + 1;
    if ((await buildAccessExport(task.exportId, Date.now(), { finalAttempt: attempt >= BUILD_RETRY.maxAttempts, attempt })) === "LEASED") {
      throw new Error(`export ${task.exportId} is being built by another attempt; retrying after its lease`);
    }
  },
);
