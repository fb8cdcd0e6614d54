import { getFunctions } from "firebase-admin/functions";
import { FieldPath, Timestamp, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { hashCanonical } from "../kernel/canonical";
import { COLLECTIONS, adminApp, db } from "../platform/firestore";
import { functionId } from "../platform/function-ids";
import { log } from "../platform/logs";

/**
 * The outbox's relay: the notices that wait for a delivery task get one. A notice is written `queuedUntil` its
 * creation, so the first sweep after an erasure queues it; queueing moves `queuedUntil` past the queue's whole
 * retry schedule (a task still retrying is never queued twice beside itself), and a notice a hold kept back is
 * looked at again an hour later. Runs on the processorNotices schedule; a test passes its own queue.
 */

/** Past the deliverProcessorNotice queue's retry schedule (8 attempts, 30 s doubling to an hour: about 65 minutes). */
export const REQUEUE_AFTER_MS = 2 * 3_600_000;
/** How soon a held notice's holds are looked at again. */
export const HELD_RECHECK_MS = 3_600_000;

export interface NoticeTask {
  noticeId: string;
}

export type EnqueueNotice = (task: NoticeTask, id: string) => Promise<void>;

/** Queues a notice on deliverProcessorNotice; a task id that exists already means it is queued. */
export const enqueueNoticeTask: EnqueueNotice = async (task, id) => {
  try {
    await getFunctions(adminApp()).taskQueue<NoticeTask>(functionId("deliverProcessorNotice")).enqueue(task, { id });
  } catch (err) {
    if ((err as { code?: string }).code === "functions/task-already-exists") return;
    throw err;
  }
};

const PAGE = 100;

/**
 * Queues every notice that is due (PENDING or HELD, `queuedUntil` passed), a page at a time, oldest first (index:
 * state, queuedUntil). Each is queued, then its `queuedUntil` moved on: a crash between the two queues it again on
 * a later sweep under another task id, which a delivery that finds it already sent ignores. Returns how many.
 */
export async function sweepProcessorNotices(opts: { nowMs: number; enqueue?: EnqueueNotice; max?: number }): Promise<{ queued: number }> {
  const enqueue = opts.enqueue ?? enqueueNoticeTask;
  const max = opts.max ?? 5_000;
  const due = db()
    .collection(COLLECTIONS.processorNotices)
    .where("state", "in", ["PENDING", "HELD"])
    .where("queuedUntil", "<=", Timestamp.fromMillis(opts.nowMs))
    .orderBy("queuedUntil")
    .orderBy(FieldPath.documentId());
  let queued = 0;
  let last: QueryDocumentSnapshot | undefined;
  while (queued < max) {
    const page = await (last ? due.startAfter(last) : due).select("state", "queuedUntil").limit(Math.min(PAGE, max - queued)).get();
    for (const d of page.docs) {
      const until = (d.get("queuedUntil") as Timestamp).toMillis();
      await enqueue({ noticeId: d.id }, `pn-${hashCanonical({ noticeId: d.id, until }).slice(0, 40)}`);
      const next = opts.nowMs + (d.get("state") === "HELD" ? HELD_RECHECK_MS : REQUEUE_AFTER_MS);
      await d.ref.update({ queuedUntil: Timestamp.fromMillis(next) });
      queued++;
    }
    if (page.size < PAGE) break;
    last = page.docs[page.docs.length - 1];
  }
  log.info("processor.sweep.done", { queued });
  return { queued };
}
