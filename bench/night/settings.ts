import { SETTINGS } from "../../functions/src/config/params";
import registry from "../../policies/versions/v1.json";
import type { NightSettings } from "./model";

interface QueueEndpoint {
  __endpoint: { taskQueueTrigger: { rateLimits: { maxConcurrentDispatches: unknown; maxDispatchesPerSecond: unknown } } };
}

/** A queue's rate limits as deployed; a deploy-time param (an expression) counts at its setting's default. */
function rateLimits(fn: unknown, concurrencyDefault: number): { concurrency: number; perSecond: number } {
  const r = (fn as QueueEndpoint).__endpoint.taskQueueTrigger.rateLimits;
  const n = (v: unknown, fallback: number) => (typeof v === "number" ? v : fallback);
  return { concurrency: n(r.maxConcurrentDispatches, concurrencyDefault), perSecond: n(r.maxDispatchesPerSecond, 500) };
}

/**
 * The night's settings as a deployment has them by default: the settings table's defaults, the purgeRequest and
 * purgeChunk queues' rate limits from the deployed functions' own options, and policy v1's brake.
 */
export async function defaultNightSettings(): Promise<NightSettings> {
  const { purgeChunk } = await import("../../functions/src/entrypoints/tasks/purge-chunk");
  const { purgeRequest } = await import("../../functions/src/entrypoints/tasks/purge-request");
  const chunk = rateLimits(purgeChunk, 1);
  const request = rateLimits(purgeRequest, SETTINGS.purgeRequestConcurrency.default);
  return {
    batchSize: SETTINGS.purgeBatchSize.default,
    stepBatches: SETTINGS.purgeStepBatches.default,
    parallelBatches: SETTINGS.purgeParallelBatches.default,
    fanOutThreshold: SETTINGS.purgeFanoutThreshold.default,
    chunkSteps: SETTINGS.purgeChunkSteps.default,
    startOpsPerSecond: SETTINGS.purgeStartOpsPerSecond.default,
    maxOpsPerSecond: SETTINGS.purgeMaxOpsPerSecond.default,
    leaseSeconds: SETTINGS.purgeLeaseSeconds.default,
    requestConcurrency: request.concurrency,
    requestDispatchesPerSecond: request.perSecond,
    maxRequestTasks: SETTINGS.purgeMaxRequestTasks.default,
    chunkConcurrency: chunk.concurrency,
    chunkDispatchesPerSecond: chunk.perSecond,
    limits: registry.purge,
    schedulerBudgetMs: 480_000,
    crashRate: 0.005,
  };
}
