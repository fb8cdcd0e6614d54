import { getFunctions } from "firebase-admin/functions";
import { hashCanonical } from "../../kernel/canonical";
import { adminApp } from "../../platform/firestore";
import { functionId } from "../../platform/function-ids";
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
    await getFunctions(adminApp()).taskQueue<PurgeChunkTask>(functionId("purgeChunk")).enqueue(task, { id: chunkTaskId(task) });
  } catch (err) {
    if ((err as { code?: string }).code === "functions/task-already-exists") return;
    throw err;
  }
  log.info("purge.chunk.enqueued", { unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start });
};

/**
 * The payload of one `purgeRequest` task: one due deletion request of one scheduled run (its brake budget is
 * the run's, `runKey`), and as of when.
 */
export interface PurgeRequestTask {
  requestId: string;
  runKey: string;
  nowMs: number;
  asOfMs: number | null;
  correlationId: string | null;
}

export type EnqueueRequest = (task: PurgeRequestTask) => Promise<void>;

/**
 * A task id per request and run: a run that is retried (the schedule's retry, or a page enqueued twice) queues
 * each request once, and the next run, another key, queues it again if it is still due.
 */
export function requestTaskId(task: Pick<PurgeRequestTask, "requestId" | "runKey">): string {
  return `pr-${hashCanonical({ requestId: task.requestId, runKey: task.runKey }).slice(0, 40)}`;
}

/** Enqueues a deletion request on the `purgeRequest` queue. A duplicate id means it is already queued. */
export const enqueueRequest: EnqueueRequest = async (task) => {
  try {
    await getFunctions(adminApp()).taskQueue<PurgeRequestTask>(functionId("purgeRequest")).enqueue(task, { id: requestTaskId(task) });
  } catch (err) {
    if ((err as { code?: string }).code === "functions/task-already-exists") return;
    throw err;
  }
};
