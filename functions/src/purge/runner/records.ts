import { Timestamp } from "firebase-admin/firestore";
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
      track(
        batchRef(unitKey, planId, b.stage, b.seq).create({
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
        }),
      );
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

/** The sink of a dry run: it keeps nothing. */
export const discardSink = (): PlanSink => ({
  batch: () => undefined,
  retained: () => undefined,
  ready: () => Promise.resolve(),
  close: () => Promise.resolve(),
});

/**
 * Removes a unit's records of every other plan (earlier rounds, or plans a brake held back); their story is
 * in the evidence. Paged by document id, deleting whatever does not belong to `keepPlanId`.
 */
export async function pruneRecords(unitKey: string, keepPlanId: string): Promise<void> {
  for (const sub of ["batches", "retained"]) {
    const col = checkpointRef(unitKey).collection(sub);
    let after: string | null = null;
    for (;;) {
      let q = col.orderBy("__name__").select().limit(400);
      if (after) q = q.startAfter(after);
      const page = await q.get();
      const stale = page.docs.filter((d) => !d.id.startsWith(`${keepPlanId}-`));
      if (stale.length > 0) {
        const batch = db().batch();
        for (const d of stale) batch.delete(d.ref);
        await batch.commit();
      }
      if (page.size < 400) break;
      after = page.docs[page.docs.length - 1]!.id;
    }
  }
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
