import { onTaskDispatched } from "firebase-functions/v2/tasks";
import { FUNCTION_SECRETS } from "../../config/params";
import { z } from "zod";
import { chunkRetryLater, runPurgeChunk } from "../../purge/index";
import { PRIMARY_CELL } from "../../kernel/policy";
import { inCell } from "../../platform/firestore";

const PurgeChunkTask = z
  .object({
    unitKey: z.string().min(1),
    round: z.number().int().positive(),
    generation: z.number().int().positive(),
    start: z.number().int().nonnegative(),
    nowMs: z.number().int(),
    asOfMs: z.number().int().nullable(),
    correlationId: z.string().nullable(),
    /** The governed database (logical name) of the unit; absent: the primary. */
    database: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/).optional(),
  })
  .strict();

/**
 * One chunk of a large purge (see purge/job.ts#runPurgeChunk). Chunks of a unit run one after
 * another, so the queue's rate limits bound how many units purge at once. A malformed payload or any
 * failure throws: Cloud Tasks retries with backoff, and the retry resumes from the checkpoint. So does a
 * delivery that finds another delivery of the chain holding the lease (BUSY), or that lost its own lease
 * mid-chunk (LEASE_LOST): it is tried again later.
 */
export const purgeChunk = onTaskDispatched(
  {
    retryConfig: { maxAttempts: 10, minBackoffSeconds: 10, maxBackoffSeconds: 300, maxDoublings: 4 },
    rateLimits: { maxConcurrentDispatches: 4, maxDispatchesPerSecond: 2 },
    timeoutSeconds: 540,
    memory: "512MiB",
    secrets: FUNCTION_SECRETS,
  },
  async (req) => {
    const task = PurgeChunkTask.parse(req.data);
    const outcome = await inCell(task.database ?? PRIMARY_CELL, () => runPurgeChunk(task));
    if (chunkRetryLater(outcome)) throw new Error(`PURGE_CHUNK_${outcome}: ${task.unitKey} is retried later`);
  },
);
