import { hashCanonical } from "../kernel/canonical";
import { PRIMARY_CELL } from "../kernel/policy";
import { currentCell } from "../platform/firestore";
import { log } from "../platform/logs";
import { enqueueOnce } from "../platform/tasks";
import type { ApplyHold } from "./service";

/** The payload of one `applyRetentionHold` task: which hold, and from which cursor (for the task id). */
export interface ApplyHoldTask {
  holdId: string;
  /** The flagging cursor when the task was enqueued (null: from the start). */
  after: string | null;
  /** The governed database (logical name) the hold lives in, when it is not the primary. */
  database?: string;
}

/**
 * Enqueues a subtree hold's flagging on the `applyRetentionHold` queue. The task id derives from the hold and
 * its cursor, so an enqueue that is retried does not start the same slice twice. A duplicate id means it is
 * already queued: that is the goal.
 */
export async function enqueueHoldTask(unstamped: ApplyHoldTask): Promise<void> {
  // A hold's flagging runs in its own cell: the payload names it (absent for the primary, whose ids are as they were).
  const cell = currentCell();
  const task = cell === PRIMARY_CELL ? unstamped : { ...unstamped, database: cell };
  if (!(await enqueueOnce("applyRetentionHold", task, `ah-${hashCanonical(task).slice(0, 40)}`))) return;
  log.info("hold.apply.enqueued", { holdId: task.holdId });
}

/** Hands a subtree hold's flagging to the task queue (the callable returns at once; the record already protects). */
export const enqueueHoldApply: ApplyHold = (holdId) => enqueueHoldTask({ holdId, after: null });
