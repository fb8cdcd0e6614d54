import { FieldPath, Timestamp, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import pLimit from "p-limit";
import { hashCanonical } from "../kernel/canonical";
import { COLLECTIONS, db } from "../platform/firestore";
import { log } from "../platform/logs";
import { enqueueOnce } from "../platform/tasks";

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
  await enqueueOnce("deliverProcessorNotice", task, id);
};

const PAGE = 100;
/**
 * How many notices of a page are being queued at once. Each costs a Cloud Tasks call and a write (about 50 ms
 * each, deployed); one at a time, a backlog of thousands (a processor's outage, a hold released) would take the
 * sweep's whole timeout. A small pool keeps the relay's calls well under Cloud Tasks' and Firestore's rates.
 */
export const QUEUEING_IN_FLIGHT = 8;

/** The delivery task's id for a notice queued at `until`: a sweep that is retried queues it under the same id, once. */
export const noticeTaskId = (noticeId: string, until: number): string => `pn-${hashCanonical({ noticeId, until }).slice(0, 40)}`;

/**
 * Queues every notice that is due (PENDING or HELD, `queuedUntil` passed), a page at a time, oldest first (index:
 * state, queuedUntil), up to QUEUEING_IN_FLIGHT at once. Each is queued, then its `queuedUntil` moved on: a crash
 * between the two queues it again on a later sweep under another task id, which a delivery that finds it already
 * sent ignores. A notice that fails to queue does not stop the others of its page; the sweep then throws (the
 * schedule retries it) once they are done. Returns how many were queued.
 */
export async function sweepProcessorNotices(opts: { nowMs: number; enqueue?: EnqueueNotice; max?: number }): Promise<{ queued: number }> {
  const enqueue = opts.enqueue ?? enqueueNoticeTask;
  const max = opts.max ?? 5_000;
  const limit = pLimit(QUEUEING_IN_FLIGHT);
  const due = db()
    .collection(COLLECTIONS.processorNotices)
    .where("state", "in", ["PENDING", "HELD"])
    .where("queuedUntil", "<=", Timestamp.fromMillis(opts.nowMs))
    .orderBy("queuedUntil")
    .orderBy(FieldPath.documentId());
  const queueOne = async (d: QueryDocumentSnapshot): Promise<void> => {
    await enqueue({ noticeId: d.id }, noticeTaskId(d.id, (d.get("queuedUntil") as Timestamp).toMillis()));
    const next = opts.nowMs + (d.get("state") === "HELD" ? HELD_RECHECK_MS : REQUEUE_AFTER_MS);
    await d.ref.update({ queuedUntil: Timestamp.fromMillis(next) });
  };
  let queued = 0;
  let last: QueryDocumentSnapshot | undefined;
  while (queued < max) {
    const page = await (last ? due.startAfter(last) : due).select("state", "queuedUntil").limit(Math.min(PAGE, max - queued)).get();
    const results = await Promise.allSettled(page.docs.map((d) => limit(() => queueOne(d))));
    queued += results.filter((r) => r.status === "fulfilled").length;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      log.warn("processor.sweep.failed", { queued, failed: results.filter((r) => r.status === "rejected").length });
      throw failed.reason;
    }
    if (page.size < PAGE) break;
    last = page.docs[page.docs.length - 1];
  }
  log.info("processor.sweep.done", { queued });
  return { queued };
}
