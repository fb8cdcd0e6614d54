import { getFunctions } from "firebase-admin/functions";
import { hashCanonical } from "../../kernel/canonical";
import { adminApp } from "../../platform/firestore";
import { log } from "../../platform/logs";

/** The payload of one `purgeChunk` task: which unit, round and chain, where to start, and as of when. */
export interface PurgeChunkTask {
  unitKey: string;
  round: number;
  generation: number;
  start: number;
  nowMs: number;
  asOfMs: number | null;
  correlationId: string | null;
}

export type Enqueue = (task: PurgeChunkTask) => Promise<void>;

/**
 * A task id per chunk, so an enqueue that is retried (the enqueuing step crashed after enqueuing) does
 * not start the chunk twice. Hashed, as Cloud Tasks asks, to spread ids evenly.
 */
export function chunkTaskId(task: Pick<PurgeChunkTask, "unitKey" | "round" | "generation" | "start">): string {
  return `pc-${hashCanonical({ unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start }).slice(0, 40)}`;
}

/** Enqueues a chunk on the `purgeChunk` queue. A duplicate id means it is already queued: that is the goal. */
export const enqueueChunk: Enqueue = async (task) => {
  try {
    await getFunctions(adminApp()).taskQueue<PurgeChunkTask>("purgeChunk").enqueue(task, { id: chunkTaskId(task) });
  } catch (err) {
    if ((err as { code?: string }).code === "functions/task-already-exists") return;
    throw err;
  }
  log.info("purge.chunk.enqueued", { unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start });
};
