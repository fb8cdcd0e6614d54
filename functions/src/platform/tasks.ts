import { getFunctions } from "firebase-admin/functions";
import { adminApp } from "./firestore";
import { functionId } from "./function-ids";

/**
 * The one way the service queues a Cloud Task: on a task-queue function by its exported name (its deployed id comes
 * from function-ids.ts, so a kit instance queues on its own functions), under a task id the caller derives from
 * what the task does. Cloud Tasks refuses a second task with an id it has seen, and that refusal is the point: an
 * enqueue that is retried (the step that queued crashed before recording it) queues the work once.
 */

/** The Admin SDK's code for a task id Cloud Tasks already holds (or held recently: ids stay taken for a while after). */
export const TASK_ALREADY_EXISTS = "functions/task-already-exists";

/**
 * Queues `task` on `queue` under `id`, once. Resolves true when this call queued it, false when a task with that id
 * was already queued (which is the goal, not an error); any other failure throws, so the caller's step retries.
 */
export async function enqueueOnce<T extends object>(queue: string, task: T, id: string): Promise<boolean> {
  try {
    await getFunctions(adminApp()).taskQueue<T>(functionId(queue)).enqueue(task, { id });
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === TASK_ALREADY_EXISTS) return false;
    throw err;
  }
}
