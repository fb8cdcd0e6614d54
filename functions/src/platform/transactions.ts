import type { Transaction } from "firebase-admin/firestore";

/**
 * Work to run right after a transaction's commit succeeds, registered from inside the transaction, without the
 * caller that runs the transaction knowing of it: how each evidence append's new head reaches the anchor store
 * from every one of the ledger's many call sites.
 *
 * The Firestore SDK runs an attempt as "callback, then `commit()`", and on any failure (the callback's, or a
 * commit refused by contention) calls `rollback()` and retries the callback on the same Transaction object.
 * So the hook wraps the object's own `commit` and `rollback`: work registered during an attempt runs after that
 * attempt's commit resolved, and a rolled-back attempt's work is dropped. The work never throws into the
 * commit path (a throw there would make the SDK retry a committed callback): it gets its own error handler.
 *
 * This leans on the SDK's internal `commit`/`rollback` methods (@google-cloud/firestore 7). If a future SDK has
 * none, `afterCommit` returns false and the caller reports it; the test of the per-append head record
 * (test/integration/evidence/head-records.test.ts) fails on such an SDK.
 */
type Hooked = Transaction & { commit?: () => Promise<unknown>; rollback?: () => Promise<unknown> };

type Job = { work: () => Promise<void>; onError: (err: unknown) => void };
const pending = new WeakMap<Transaction, Map<string, Job>>();

export function afterCommit(tx: Transaction, key: string, work: () => Promise<void>, onError: (err: unknown) => void): boolean {
  let queue = pending.get(tx);
  if (!queue) {
    const t = tx as Hooked;
    const commit = t.commit;
    const rollback = t.rollback;
    if (typeof commit !== "function" || typeof rollback !== "function") return false;
    queue = new Map();
    pending.set(tx, queue);
    const q = queue;
    t.commit = async () => {
      const result = await commit.call(tx);
      const jobs = [...q.values()];
      q.clear();
      // Committed: run the work, never letting it fail (or be retried with) the committed transaction.
      await Promise.all(
        jobs.map(async (job) => {
          try {
            await job.work();
          } catch (err) {
            job.onError(err);
          }
        }),
      );
      return result;
    };
    t.rollback = () => {
      q.clear();
      return rollback.call(tx);
    };
  }
  // One job per key: a later append to the same chain in the same transaction supersedes the earlier one.
  queue.set(key, { work, onError });
  return true;
}

/**
 * Whether a transaction failed because the datastore had already closed it: the Firestore emulator answers
 * `INVALID_ARGUMENT: Transaction is invalid or closed` for a transaction it gave up on while other transactions
 * held the locks it wanted (firebase-tools #4473), where production answers ABORTED, which the SDK retries itself.
 * Nothing of a closed transaction committed, so running it again is safe.
 */
export const isClosedTransaction = (err: unknown): boolean => {
  const e = err as { code?: unknown; details?: unknown } | null;
  return e?.code === 3 && typeof e.details === "string" && e.details.includes("Transaction is invalid or closed");
};

/** Runs `attempt`, again (up to `tries` times in all) while it fails on a closed transaction. */
export async function retryClosedTransaction<T>(attempt: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i >= tries || !isClosedTransaction(err)) throw err;
    }
  }
}
