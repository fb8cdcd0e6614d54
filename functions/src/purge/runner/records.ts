import { Timestamp, type DocumentReference, type Transaction } from "firebase-admin/firestore";
import type { PlannedBatch, RetainedRecord } from "../rules/manifest";
import { db } from "../../platform/firestore";
import { batchRef, checkpointRef, emptyOutcome, retainedRef } from "../store";

/**
 * Where a streaming plan's records go: the real sink writes each batch and retained chunk as soon as the
 * plan cuts it, each with its own `create()` (a record is never overwritten: a second writer of the same id
 * fails instead of resetting a batch that already ran), and holds the stream back while too many writes are
 * in flight, so memory stays flat however large the subject. A dry run's sink writes nothing.
 */
export interface PlanSink {
  batch(batch: PlannedBatch): void;
  retained(index: number, items: RetainedRecord[]): void;
  /** Resolves once the writes in flight are few enough for the stream to go on. */
  ready(): Promise<void>;
  /** Waits for every write; throws the first failure. */
  close(): Promise<void>;
}

/** Writes in flight before the stream waits. A batch record is up to about 100 KB. */
const MAX_IN_FLIGHT = 16;

/** A batch record as the plan writes it: its decision, nothing run yet. */
function batchRecord(unitKey: string, planId: string, round: number, b: PlannedBatch): Record<string, unknown> {
  return {
    unitKey,
    planId,
    round,
    stage: b.stage,
    seq: b.seq,
    kind: b.kind,
    items: b.items,
    hash: b.hash,
    decision: b.decision,
    archives: {},
    marked: false,
    outcome: emptyOutcome(),
    complete: false,
  };
}

export function recordSink(unitKey: string, planId: string, round: number): PlanSink {
  const inFlight = new Set<Promise<unknown>>();
  let failure: Error | null = null;
  const track = (p: Promise<unknown>): void => {
    const t: Promise<unknown> = p.then(
      () => inFlight.delete(t),
      (err: unknown) => {
        failure ??= err instanceof Error ? err : new Error(String(err));
        inFlight.delete(t);
      },
    );
    inFlight.add(t);
  };
  return {
    batch(b) {
      track(batchRef(unitKey, planId, b.stage, b.seq).create(batchRecord(unitKey, planId, round, b)));
    },
    retained(index, items) {
      track(retainedRef(unitKey, planId, index).create({ unitKey, planId, round, items }));
    },
    async ready() {
      while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      if (failure) throw failure;
    },
    async close() {
      await Promise.all(inFlight);
      if (failure) throw failure;
    },
  };
}

/**
 * The unit's fence, read in the caller's transaction before it writes a control record: false when the
 * round is not this runner's any more (it moved on), LeaseLostError when the lease is not.
 */
export type RecordFence = (tx: Transaction) => Promise<boolean>;

/** Records per fenced transaction: a batch record is up to about 100 KB, a transaction up to 10 MiB. */
const RECORDS_PER_TX = 16;

/** A sink whose records are written under the unit's fence; `stale` once the fence said the round moved on. */
export interface FencedSink extends PlanSink {
  readonly stale: boolean;
}

/**
 * The sink of records written while a round runs (the late sweep's): each transaction reads the unit's fence
 * and creates up to RECORDS_PER_TX records, so a runner that lost its lease, or whose round moved on, writes
 * none. Records are created, never overwritten, as with the plan's sink.
 */
export function fencedRecordSink(unitKey: string, planId: string, round: number, fence: RecordFence): FencedSink {
  let pending: { ref: DocumentReference; data: Record<string, unknown> }[] = [];
  let stale = false;
  const flush = async (): Promise<void> => {
    const writes = pending;
    pending = [];
    if (writes.length === 0 || stale) return;
    const ok = await db().runTransaction(async (tx) => {
      if (!(await fence(tx))) return false;
      for (const w of writes) tx.create(w.ref, w.data);
      return true;
    });
    if (!ok) stale = true;
  };
  return {
    get stale() {
      return stale;
    },
    batch(b) {
      pending.push({ ref: batchRef(unitKey, planId, b.stage, b.seq), data: batchRecord(unitKey, planId, round, b) });
    },
    retained(index, items) {
      pending.push({ ref: retainedRef(unitKey, planId, index), data: { unitKey, planId, round, items } });
    },
    async ready() {
      if (pending.length >= RECORDS_PER_TX) await flush();
    },
    async close() {
      await flush();
    },
  };
}

/** The sink of a dry run: it keeps nothing. */
export const discardSink = (): PlanSink => ({
  batch: () => undefined,
  retained: () => undefined,
  ready: () => Promise.resolve(),
  close: () => Promise.resolve(),
});

/**
 * Removes a unit's records of every other plan (earlier rounds, or plans a brake held back); their story is
 * in the evidence. Paged by document id, deleting whatever does not belong to `keepPlanId`, each page in a
 * transaction that reads the unit's fence first: a runner that stalled past its lease, or whose round another
 * runner has ended since, deletes nothing (it would be deleting a later round's records). Returns false when
 * the fence said the round moved on.
 */
export async function pruneRecords(unitKey: string, keepPlanId: string, fence: RecordFence): Promise<boolean> {
  for (const sub of ["batches", "retained"]) {
    const col = checkpointRef(unitKey).collection(sub);
    let after: string | null = null;
    for (;;) {
      let q = col.orderBy("__name__").select().limit(400);
      if (after) q = q.startAfter(after);
      const page = await q.get();
      const stale = page.docs.filter((d) => !d.id.startsWith(`${keepPlanId}-`));
      if (stale.length > 0) {
        const ok = await db().runTransaction(async (tx) => {
          if (!(await fence(tx))) return false;
          for (const d of stale) tx.delete(d.ref);
          return true;
        });
        if (!ok) return false;
      }
      if (page.size < 400) break;
      after = page.docs[page.docs.length - 1]!.id;
    }
  }
  return true;
}

/** A document version as a batch record keeps it: its update time as `seconds.nanoseconds`. */
export function versionOf(updateTime: Timestamp | undefined): string | undefined {
  return updateTime ? `${updateTime.seconds}.${String(updateTime.nanoseconds).padStart(9, "0")}` : undefined;
}

/** The update time a delete's precondition names. */
export function timestampOfVersion(version: string): Timestamp {
  const [s, n] = version.split(".");
  return new Timestamp(Number(s), Number(n));
}
