import { hashCanonical } from "../../kernel/canonical";
import { PRIMARY_CELL } from "../../kernel/policy";
import { currentCell } from "../../platform/firestore";
import { log } from "../../platform/logs";
import { enqueueOnce } from "../../platform/tasks";

/** The payload of one `purgeChunk` task: which unit, round and chain, where to start, and as of when. */
export interface PurgeChunkTask {
  unitKey: string;
  round: number;
  generation: number;
  start: number;
  nowMs: number;
  asOfMs: number | null;
  correlationId: string | null;
  /** The governed database (logical name) the unit is in, when it is not the primary (`inCellOf`). */
  database?: string;
}

/**
 * A task's payload with the cell it was enqueued from (`database`, absent for the primary): every task runs in the
 * cell whose unit it carries on (the entry points bind it with `inCell`), and its id includes it, since two cells'
 * requests share their request id (docs/decisions/0036-several-databases.md).
 */
export function inCellOf<T extends object>(task: T): T & { database?: string } {
  const cell = currentCell();
  return cell === PRIMARY_CELL ? task : { ...task, database: cell };
}

/** The id fields of a task: its own, and its cell's name when it is not the primary's (ids of the primary's are as they were). */
const withCell = (ids: Record<string, unknown>, database: string | undefined): Record<string, unknown> => (database === undefined || database === PRIMARY_CELL ? ids : { ...ids, database });

export type Enqueue = (task: PurgeChunkTask) => Promise<void>;

/**
 * A task id per chunk, so an enqueue that is retried (the enqueuing step crashed after enqueuing) does
 * not start the chunk twice. Hashed, as Cloud Tasks asks, to spread ids evenly.
 */
export function chunkTaskId(task: Pick<PurgeChunkTask, "unitKey" | "round" | "generation" | "start" | "database">): string {
  return `pc-${hashCanonical(withCell({ unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start }, task.database)).slice(0, 40)}`;
}

/** Enqueues a chunk on the `purgeChunk` queue, in the cell it is enqueued from. A duplicate id means it is already queued: that is the goal. */
export const enqueueChunk: Enqueue = async (unstamped) => {
  const task = inCellOf(unstamped);
  if (!(await enqueueOnce("purgeChunk", task, chunkTaskId(task)))) return;
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
  /** The governed database (logical name) of the request, when it is not the primary: a cell request (`inCellOf`). */
  database?: string;
}

export type EnqueueRequest = (task: PurgeRequestTask) => Promise<void>;

/**
 * A task id per request and run: a run that is retried (the schedule's retry, or a page enqueued twice) queues
 * each request once, and the next run, another key, queues it again if it is still due.
 */
export function requestTaskId(task: Pick<PurgeRequestTask, "requestId" | "runKey" | "database">): string {
  return `pr-${hashCanonical(withCell({ requestId: task.requestId, runKey: task.runKey }, task.database)).slice(0, 40)}`;
}

/** Enqueues a deletion request on the `purgeRequest` queue, in the cell it is enqueued from. A duplicate id means it is already queued. */
export const enqueueRequest: EnqueueRequest = async (unstamped) => {
  const task = inCellOf(unstamped);
  await enqueueOnce("purgeRequest", task, requestTaskId(task));
};
