import { FieldValue, Timestamp, type DocumentSnapshot, type Query, type Transaction } from "firebase-admin/firestore";
import type { Actor } from "../kernel/actor";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { HoldView } from "../holds/index";
import { DAY_MS } from "../kernel/policy";
import { COLLECTIONS, db, governedDatabaseId } from "../platform/firestore";
import { archiveKeksIfConfigured, ArchiveKeyRingMissingError, keksOfRing } from "../platform/kms";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";
import { keksCol, keyRecordOf, keysCol, moveKey, periodKey, ringsWithRecords, ringTag, shredMarkerRef, shredQueue, tombstoneKey } from "./keys";
import { dataKeyRef, kekIdOf, lastEndedPeriod, shredVerdict, type KeyCopies, type ShredVerdict } from "./rules";

/**
 * The shred (decision 0038), run by the nightly purge after its units, once per governed database:
 * 1. every active data key of this database whose period has ended is judged in a transaction of the governed
 *    database that reads the hold fence (and the active holds when its generation moved since the last key: HoldView)
 *    and the key's copies: no copy held or covered by an
 *    active hold, and every copy's retention ended, and it is shredded: a marker
 *    (`retentionJobs/archive-shred-<key>-g<n>`) and ARCHIVE_SHREDDED evidence commit together, then the key record
 *    becomes a tombstone with no key material. Otherwise the key is wrapped again under a later period (its last
 *    copy's, or today's while a hold stands, so the next night looks again);
 * 2. every period that has ended and that no active key names any more has its KEK destroyed (a scheduled
 *    destruction in Cloud KMS, after RETENTION_ARCHIVE_KEY_DESTROY_DAYS). Only then is a restored backup's copy of
 *    a shredded key useless; "fully gone by" counts the destroy delay from here.
 * A hold placed after a key's shred committed finds its copies sealed for good, as one placed after a delete finds
 * the document gone. Idempotent: a marker already there skips the evidence, a tombstone already there stays.
 */

const PAGE = 200;

export interface ShredOptions {
  nowMs: number;
  actor: Actor;
  correlationId?: string | null;
  asOfMs?: number | null;
  /** Called after a key's decision committed and before its tombstone (tests stall a shred here). */
  afterDecision?: (dataKeyId: string, verdict: ShredVerdict) => Promise<void>;
}

export interface ShredSummary {
  /** Keys shredded by this run (a decision already recorded by an interrupted run counts too). */
  shredded: number;
  /** Keys wrapped again under a later period (held, or a copy's retention not ended). */
  moved: number;
  /** KEKs whose destruction this run scheduled. */
  kekDestroyed: number;
}


/** The copies sealed under one key generation, in the current governed database. */
const copiesOf = (ref: string): Query => db().collection(COLLECTIONS.archives).where("dataKey", "==", ref);

/**
 * Whether an active hold covers a copy of the key: a hold on the copy itself, or on its source or an ancestor of
 * it (holds/rules.ts#claimingHoldIds). One bounded query per active hold, in the transaction.
 */
async function coveredByHold(tx: Transaction, ref: string, targets: readonly string[]): Promise<boolean> {
  for (const t of targets) {
    const s = t.split("/");
    if (s.length === 2 && s[0] === COLLECTIONS.archives) {
      if ((await tx.get(db().doc(t))).get("dataKey") === ref) return true;
      continue;
    }
    if (!(await tx.get(copiesOf(ref).where("sourcePath", "==", t).select().limit(1))).empty) return true;
    const under = await tx.get(copiesOf(ref).where("sourcePath", ">", `${t}/`).where("sourcePath", "<", `${t}/\uf8ff`).select().limit(1));
    if (!under.empty) return true;
  }
  return false;
}

/** Judges one due key in the governed database, and records the shred with its evidence when it may go. */
async function decide(snap: DocumentSnapshot, opts: ShredOptions, destroyAtMs: number, holdView: HoldView): Promise<{ verdict: ShredVerdict; already: boolean }> {
  const rec = keyRecordOf(snap)!;
  const ref = dataKeyRef(snap.id, rec.generation);
  return db().runTransaction(async (tx) => {
    const marker = await tx.get(shredMarkerRef(snap.id, rec.generation));
    if (marker.exists) return { verdict: { shred: true as const, reason: "ARCHIVE_RETENTION_ENDED" as const }, already: true };
    // The active holds through the hold fence (docs/HOLD-FENCE.md): the fence is read here, the hold records only when
    // its generation moved since the last key. A placement or release writes the fence this transaction read, so it
    // is serialised against the decision as when the records themselves were read.
    const { holds } = await holdView.inTx(tx);
    const [held, latest, open, count] = await Promise.all([
      tx.get(copiesOf(ref).where("legalHold", "==", true).select().limit(1)),
      tx.get(copiesOf(ref).orderBy("retainUntil", "desc").select("retainUntil").limit(1)),
      tx.get(copiesOf(ref).where("retainUntil", "==", null).select().limit(1)),
      tx.get(copiesOf(ref).select().limit(PAGE)),
    ]);
    const end = latest.docs[0]?.get("retainUntil") as unknown;
    const facts: KeyCopies = {
      held: !held.empty || (await coveredByHold(tx, ref, holds.map((h) => h.targetPath))),
      latestRetainUntilMs: end instanceof Timestamp ? end.toMillis() : null,
      openEnded: !open.empty,
      copies: count.size,
    };
    const verdict = shredVerdict(facts, opts.nowMs);
    if (!verdict.shred) return { verdict, already: false };
    const evidence = await openEvidence(tx, snap.id);
    tx.create(shredMarkerRef(snap.id, rec.generation), {
      dataKey: ref,
      period: rec.period,
      kekId: kekIdOf(rec.period),
      ring: rec.ring,
      reason: verdict.reason,
      copies: count.size,
      shreddedAt: Timestamp.fromMillis(opts.nowMs),
      fullyGoneBy: Timestamp.fromMillis(destroyAtMs),
    });
    evidence.append({
      action: "ARCHIVE_SHREDDED",
      actor: opts.actor,
      decision: { reason: verdict.reason },
      policyVersion: policy().version,
      atMs: opts.nowMs,
      correlationId: opts.correlationId ?? null,
      asOfMs: opts.asOfMs ?? null,
      counts: { copies: count.size },
      detail: { dataKey: ref, period: rec.period, kekId: kekIdOf(rec.period), destroyDelayDays: settings.archiveKeyDestroyDays(), fullyGoneByMs: destroyAtMs },
    });
    return { verdict, already: false };
  }, EVIDENCE_TX);
}

/** Shreds what may be shredded in the current governed database, then destroys the KEKs of periods left empty. */
export async function shredDueKeys(opts: ShredOptions): Promise<ShredSummary> {
  const kms = await archiveKeksIfConfigured();
  if (!kms) {
    // No key ring: nothing was ever sealed here unless the ring was removed since, which must not pass silently.
    if (!(await keysCol().select().limit(1).get()).empty) throw new ArchiveKeyRingMissingError();
    return { shredded: 0, moved: 0, kekDestroyed: 0 };
  }
  const due = lastEndedPeriod(opts.nowMs);
  const destroyAtMs = opts.nowMs + settings.archiveKeyDestroyDays() * DAY_MS;
  const summary: ShredSummary = { shredded: 0, moved: 0, kekDestroyed: 0 };
  const database = governedDatabaseId();
  const holdView = new HoldView();
  // Keys still wrapped in a ring the store was on before (RETENTION_ARCHIVE_KEY_RING changed) are due as much as the
  // current ring's: a key moves to the current ring only when it is next used, and many never are.
  for (const ring of await ringsWithRecords("keys", kms.ring)) await shredRing(ring, database, due, opts, destroyAtMs, holdView, summary);
  for (const ring of await ringsWithRecords("keks", kms.ring)) summary.kekDestroyed += await destroyEmptyPeriods(ring, due, opts.nowMs);
  log.info("shred.done", { database, ...summary });
  return summary;
}

/** One ring's due keys of this database, a page at a time: each shredded, or moved to the period it is due next. */
async function shredRing(ring: string, database: string, due: string, opts: ShredOptions, destroyAtMs: number, holdView: HoldView, summary: ShredSummary): Promise<void> {
  let after: DocumentSnapshot | null = null;
  for (;;) {
    let q = keysCol().where("shredQueue", ">=", shredQueue(ring, database, "")).where("shredQueue", "<=", shredQueue(ring, database, due)).orderBy("shredQueue").limit(PAGE);
    if (after !== null) q = q.startAfter(after);
    const page = await q.get();
    for (const snap of page.docs) {
      const rec = keyRecordOf(snap)!;
      const { verdict } = await decide(snap, opts, destroyAtMs, holdView);
      await opts.afterDecision?.(snap.id, verdict);
      if (verdict.shred) {
        await tombstoneKey(snap.id, rec.generation, opts.nowMs, destroyAtMs);
        summary.shredded++;
      } else if (await moveKey(snap, verdict.nextPeriod, opts.nowMs)) {
        summary.moved++;
      }
    }
    if (page.size < PAGE) return;
    after = page.docs[page.docs.length - 1]!;
  }
}

/** Destroys the KEK of every ended period that no active key of any database names. */
async function destroyEmptyPeriods(ring: string, due: string, nowMs: number): Promise<number> {
  const kms = await keksOfRing(ring);
  let n = 0;
  for (;;) {
    const live = await keksCol().where("liveKey", ">=", `${ringTag(ring)}|`).where("liveKey", "<=", periodKey(ring, due)).orderBy("liveKey").limit(PAGE).get();
    let destroyed = 0;
    for (const k of live.docs) {
      const period = String(k.get("period"));
      const left = await keysCol().where("periodKey", "==", periodKey(ring, period)).select().limit(1).get();
      if (!left.empty) continue;
      const { destroyAtMs } = await kms.destroy(kekIdOf(period), nowMs);
      await k.ref.update({ state: "DESTROY_SCHEDULED", liveKey: FieldValue.delete(), destroyScheduledAt: Timestamp.fromMillis(nowMs), destroyAt: Timestamp.fromMillis(destroyAtMs) });
      destroyed++;
      log.info("shred.kek.destroyed", { period, destroyAtMs });
    }
    n += destroyed;
    if (live.size < PAGE || destroyed === 0) return n;
  }
}
