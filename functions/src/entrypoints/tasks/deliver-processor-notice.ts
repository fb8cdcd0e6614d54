import { onTaskDispatched } from "firebase-functions/v2/tasks";
import { z } from "zod";
import { FUNCTION_SECRETS, processorSecrets } from "../../config/params";
import { deliverNotice } from "../../processors/index";
import { registryPolicy } from "../../platform/registry";

const DeliverNoticeTask = z.object({ noticeId: z.string().min(1).max(300) }).strict();

/**
 * The queue's retries are the delivery's: 8 attempts, 30 s doubling to an hour (about 65 minutes in all, which
 * processors/sweep.ts#REQUEUE_AFTER_MS outlasts). The last attempt's failure is recorded (FAILED) instead of thrown.
 */
export const DELIVERY_RETRY = { maxAttempts: 8, minBackoffSeconds: 30, maxBackoffSeconds: 3600, maxDoublings: 5 } as const;

/**
 * Delivers one processor notice (processors/deliver.ts#deliverNotice): signed with the processor's own key, which
 * this function binds with the evidence key. A failed attempt throws so that Cloud Tasks retries it with backoff.
 */
export const deliverProcessorNotice = onTaskDispatched(
  {
    retryConfig: DELIVERY_RETRY,
    rateLimits: { maxConcurrentDispatches: 10, maxDispatchesPerSecond: 5 },
    timeoutSeconds: 180,
    memory: "256MiB",
    secrets: [...FUNCTION_SECRETS, ...processorSecrets(registryPolicy().registry.processors.flatMap((p) => (p.secret ? [p.secret] : [])))],
  },
  async (req) => {
    const task = DeliverNoticeTask.parse(req.data);
    const { outcome, error } = await deliverNotice(task.noticeId, { finalAttempt: req.retryCount + 1 >= DELIVERY_RETRY.maxAttempts });
    if (outcome === "RETRY") throw new Error(`PROCESSOR_DELIVERY_${error ?? "FAILED"}: ${task.noticeId} is retried later`);
  },
);
