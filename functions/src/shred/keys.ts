import { createHash } from "node:crypto";
import { FieldValue, Timestamp, type DocumentReference, type DocumentSnapshot } from "firebase-admin/firestore";
import { ledgerDb } from "../erasure/index";
import { keyedSubjectHash } from "../evidence/index";
import { COLLECTIONS, db, governedDatabaseId } from "../platform/firestore";
import { archiveKeks, archiveKeksIfConfigured, keksOfRing, KekUnavailableError, type KeyEncryptionKeys } from "../platform/kms";
import { dataKeyName, dataKeyRef, kekIdOf, laterPeriod, newDataKey, parseDataKeyRef, type KeySubject } from "./rules";

/**
 * The key store (decision 0038): in the erasure ledger's database, never the governed one.
 * - `archiveKeys/{dataKeyId}`: one per subject and governed database. While ACTIVE: the data key wrapped by its
 *   period's KEK (`wrapped`), the period, the KEK ring, the generation, and two query keys (`shredQueue`:
 *   ring|database|period, `periodKey`: ring|period; single fields, so the ledger needs no composite index). Once
 *   shredded: a tombstone (`state: SHREDDED`, `shreddedAt`, the period, the KEK's `destroyAt`), with no key material.
 * - `archiveKeks/{period}`: each period's KEK: ACTIVE (`liveKey`: ring|period) until the shred has destroyed it
 *   (`DESTROY_SCHEDULED`, `destroyAt`); `archiveKeks/{period}~{ringTag}` for a ring other than the one that took the
 *   period first (a changed key ring).
 * A backup of this database holds only wrapped keys; each is useless once its period's KEK is destroyed.
 */
export const ARCHIVE_KEYS = "archiveKeys";
export const ARCHIVE_KEKS = "archiveKeks";

export const keysCol = () => ledgerDb().collection(ARCHIVE_KEYS);
export const keksCol = () => ledgerDb().collection(ARCHIVE_KEKS);

/** A short, stable name of a KEK ring for the query keys. */
export const ringTag = (ring: string): string => createHash("sha256").update(ring, "utf8").digest("hex").slice(0, 16);
/** The query key of a database's keys by period: the keys due by `period` sort up to `shredQueue(ring, db, period)`. */
export const shredQueue = (ring: string, database: string, period: string): string => `${ringTag(ring)}|${database}|${period}`;
export const periodKey = (ring: string, period: string): string => `${ringTag(ring)}|${period}`;

/** The additional authenticated data a data key is wrapped with: its id, generation and ring. */
const wrapAad = (ring: string, dataKeyId: string, generation: number): Buffer => Buffer.from(`archive-data-key/v1|${ring}|${dataKeyRef(dataKeyId, generation)}`, "utf8");

/** A subject's data key in this governed database: its id (a keyed hash: no id names the subject). */
export const dataKeyIdFor = (subject: KeySubject, databaseId: string = governedDatabaseId()): string => `dk-${keyedSubjectHash(dataKeyName(databaseId, subject)).slice(0, 40)}`;

export interface DataKey {
  dataKeyId: string;
  generation: number;
  /** What a copy records: `<dataKeyId>#g<generation>`. */
  ref: string;
  key: Buffer;
}

interface KeyRecord {
  state: "ACTIVE" | "SHREDDED";
  ring: string;
  generation: number;
  period: string;
  wrapped: Buffer | null;
  createdAtMs: number;
}

export function keyRecordOf(snap: DocumentSnapshot): KeyRecord | null {
  if (!snap.exists) return null;
  const w = snap.get("wrapped") as unknown;
  const created = snap.get("createdAt") as unknown;
  return {
    state: snap.get("state") === "ACTIVE" ? "ACTIVE" : "SHREDDED",
    ring: String(snap.get("ring") ?? ""),
    generation: Number(snap.get("generation") ?? 0),
    period: String(snap.get("period") ?? ""),
    wrapped: w instanceof Uint8Array ? Buffer.from(w) : null,
    createdAtMs: created instanceof Timestamp ? created.toMillis() : 0,
  };
}

/**
 * Makes sure the period's KEK exists (in KMS, and its record here); refuses a period whose KEK was destroyed. The
 * record is written only after KMS made the key, so an ACTIVE record of this ring means the key is there: no KMS
 * call then (creating a crypto key is an admin call with its own quota).
 */
async function ensurePeriod(kms: KeyEncryptionKeys, period: string, nowMs: number): Promise<void> {
  const snap = await kekRecordOf(kms.ring, period);
  const ref = snap.ref;
  const inRing = snap.exists && snap.get("ring") === kms.ring;
  if (inRing && snap.get("state") === "ACTIVE") return;
  if (inRing) throw new Error(`KEK_DESTROYED: the key-encryption key of period ${period} was destroyed; no data key may be wrapped under it`);
  await kms.ensure(kekIdOf(period));
  await ref.set({ period, ring: kms.ring, kekId: kekIdOf(period), state: "ACTIVE", liveKey: periodKey(kms.ring, period), createdAt: Timestamp.fromMillis(nowMs) });
}

/**
 * A ring's record of a period's KEK: `archiveKeks/{period}`, unless that record belongs to another ring (the key ring
 * was changed), then `archiveKeks/{period}~{ringTag}`. A ring change never overwrites the other ring's record, so the
 * shred still destroys that ring's KEK once no data key is wrapped under it.
 */
async function kekRecordOf(ring: string, period: string): Promise<DocumentSnapshot> {
  const first = await keksCol().doc(period).get();
  if (!first.exists || first.get("ring") === ring) return first;
  return keksCol().doc(`${period}~${ringTag(ring)}`).get();
}

/**
 * The key rings that have records in `col` under a `<ringTag>|…` query key `field` (the data keys' `shredQueue`, the
 * KEKs' `liveKey`): one read per ring, each skipping past the previous ring's whole range. The current ring is
 * always one of them; the others are rings the key store was on before `RETENTION_ARCHIVE_KEY_RING` changed.
 */
export async function ringsWithRecords(col: "keys" | "keks", current: string): Promise<string[]> {
  const field = col === "keys" ? "shredQueue" : "liveKey";
  const rings = new Set<string>([current]);
  // "}" sorts right after "|": past every `<tag>|…` value of the ring just found.
  for (let from = ""; ; ) {
    const page = await (col === "keys" ? keysCol() : keksCol()).where(field, ">=", from).orderBy(field).select("ring").limit(1).get();
    const ring = page.docs[0]?.get("ring") as unknown;
    if (typeof ring !== "string") return [...rings];
    rings.add(ring);
    from = `${ringTag(ring)}}`;
  }
}

/** Writes `data` to the key record only if it is as it was read (`snap`): a concurrent writer makes the caller retry. */
async function commitIf(snap: DocumentSnapshot, data: Record<string, unknown>): Promise<boolean> {
  return ledgerDb().runTransaction(async (tx) => {
    const now = await tx.get(snap.ref);
    const same = now.exists === snap.exists && (!now.exists || now.updateTime?.isEqual(snap.updateTime!) === true);
    if (!same) return false;
    tx.set(snap.ref, data, { merge: true });
    return true;
  });
}

const activeFields = (kms: KeyEncryptionKeys, database: string, period: string, wrapped: Buffer, nowMs: number) => ({
  state: "ACTIVE",
  ring: kms.ring,
  period,
  shredQueue: shredQueue(kms.ring, database, period),
  periodKey: periodKey(kms.ring, period),
  kekId: kekIdOf(period),
  wrapped,
  updatedAt: Timestamp.fromMillis(nowMs),
  shreddedAt: FieldValue.delete(),
  destroyAt: FieldValue.delete(),
});

/** The error a step fails with when a subject's active data key cannot be opened: nothing is replaced or written. */
export class DataKeyUnavailableError extends Error {
  constructor(dataKeyId: string, generation: number, why: string) {
    super(`DATA_KEY_UNAVAILABLE: the active data key ${dataKeyId}#g${generation} cannot be unwrapped (${why}); its copies stay as they are and none is written until it can`);
    this.name = "DataKeyUnavailableError";
  }
}

/**
 * The marker the shred commits with its decision to shred a key generation (`retentionJobs/archive-shred-<key>-g<n>`,
 * in the governed database): once it exists the generation is as good as shredded, whether or not its record is a
 * tombstone yet. A writer that seals copies reads the markers of its keys in its own transaction (decision 0038).
 */
export const shredMarkerRef = (dataKeyId: string, generation: number): DocumentReference => db().collection(COLLECTIONS.retentionJobs).doc(`archive-shred-${dataKeyId}-g${generation}`);

/**
 * The data key that seals a subject's copies ending in `period` (the latest period among the copies about to be
 * written). A new key (the next generation) is made only when the subject has none, or its key was shredded, or the
 * caller found the shred's marker on its active generation (`markedGeneration`: that generation is being shredded,
 * and no copy may be sealed under it). Otherwise the active key is kept: wrapped again under `period` when its own
 * period is earlier, and under the current ring when it was wrapped in another (a ring rotation keeps the
 * generation). An active key that cannot be unwrapped fails loudly (DATA_KEY_UNAVAILABLE): replacing it would turn
 * every copy it sealed into a shredded one.
 */
export async function keyForSubject(subject: KeySubject, period: string, nowMs: number, markedGeneration = 0): Promise<DataKey> {
  const kms = await archiveKeks();
  const dataKeyId = dataKeyIdFor(subject);
  const ref = keysCol().doc(dataKeyId);
  for (let attempt = 0; attempt < 8; attempt++) {
    const snap = await ref.get();
    const rec = keyRecordOf(snap);
    if (rec?.state === "ACTIVE" && rec.generation > markedGeneration) {
      const own = rec.ring === kms.ring ? kms : await keksOfRing(rec.ring);
      const key = rec.wrapped ? await unwrapOrNull(own, rec.period, rec.wrapped, wrapAad(rec.ring, dataKeyId, rec.generation)) : null;
      if (!key) throw new DataKeyUnavailableError(dataKeyId, rec.generation, rec.wrapped ? `the KEK of period ${rec.period} in ${rec.ring} is unavailable` : "its record holds no wrapped key");
      const target = laterPeriod(rec.period, period);
      const found = { dataKeyId, generation: rec.generation, ref: dataKeyRef(dataKeyId, rec.generation), key };
      if (target === rec.period && rec.ring === kms.ring) return found;
      await ensurePeriod(kms, target, nowMs);
      const wrapped = await kms.wrap(kekIdOf(target), key, wrapAad(kms.ring, dataKeyId, rec.generation));
      if (await commitIf(snap, activeFields(kms, String(snap.get("database")), target, wrapped, nowMs))) return found;
      continue;
    }
    // None yet, shredded, or its active generation is being shredded: the next generation.
    const generation = Math.max(rec?.generation ?? 0, markedGeneration) + 1;
    const key = newDataKey();
    await ensurePeriod(kms, period, nowMs);
    const wrapped = await kms.wrap(kekIdOf(period), key, wrapAad(kms.ring, dataKeyId, generation));
    const fields = { dataKeyId, database: governedDatabaseId(), subjectKind: subject.kind, generation, createdAt: Timestamp.fromMillis(nowMs), ...activeFields(kms, governedDatabaseId(), period, wrapped, nowMs) };
    if (await commitIf(snap, fields)) return { dataKeyId, generation, ref: dataKeyRef(dataKeyId, generation), key };
  }
  throw new Error(`DATA_KEY_CONTENTION: the data key ${dataKeyId} kept changing while it was being read`);
}

async function unwrapOrNull(kms: KeyEncryptionKeys, period: string, wrapped: Buffer, aad: Buffer): Promise<Buffer | null> {
  try {
    return await kms.unwrap(kekIdOf(period), wrapped, aad);
  } catch (e) {
    if (e instanceof KekUnavailableError) return null;
    throw e;
  }
}

/** A copy's key as found now: the key, or why there is none (its generation was shredded, or its KEK is gone). */
export type KeyLookup = { ok: true; key: Buffer } | { ok: false; reason: "SHREDDED" | "KEY_MISSING" | "KEK_UNAVAILABLE"; shreddedAtMs: number | null; destroyAtMs: number | null };

/** Opens data keys by a copy's `dataKey` reference, each at most once per instance (one per archive run, purge step or export). */
export class DataKeys {
  private readonly cache = new Map<string, Promise<KeyLookup>>();

  /** Whether `ref` was opened (or is being opened) already: a transaction opens only these, the rest first outside it. */
  has(ref: string): boolean {
    return this.cache.has(ref);
  }

  open(ref: string): Promise<KeyLookup> {
    let hit = this.cache.get(ref);
    if (!hit) {
      hit = this.lookup(ref);
      this.cache.set(ref, hit);
    }
    return hit;
  }

  private async lookup(ref: string): Promise<KeyLookup> {
    const parsed = parseDataKeyRef(ref);
    if (!parsed) return { ok: false, reason: "KEY_MISSING", shreddedAtMs: null, destroyAtMs: null };
    const snap = await keysCol().doc(parsed.dataKeyId).get();
    const rec = keyRecordOf(snap);
    const ms = (f: string) => {
      const v = snap.get(f) as unknown;
      return v instanceof Timestamp ? v.toMillis() : null;
    };
    if (!rec) return { ok: false, reason: "KEY_MISSING", shreddedAtMs: null, destroyAtMs: null };
    if (rec.generation > parsed.generation || rec.state === "SHREDDED") return { ok: false, reason: "SHREDDED", shreddedAtMs: rec.generation === parsed.generation ? ms("shreddedAt") : null, destroyAtMs: rec.generation === parsed.generation ? ms("destroyAt") : null };
    if (rec.generation < parsed.generation || !rec.wrapped) return { ok: false, reason: "KEY_MISSING", shreddedAtMs: null, destroyAtMs: null };
    const kms = await keksOfRing(rec.ring);
    const key = await unwrapOrNull(kms, rec.period, rec.wrapped, wrapAad(rec.ring, parsed.dataKeyId, rec.generation));
    return key ? { ok: true, key } : { ok: false, reason: "KEK_UNAVAILABLE", shreddedAtMs: null, destroyAtMs: null };
  }
}

/** Wraps an active key again under a later period (the shred's move of a key it may not shred yet). false: it changed meanwhile. */
export async function moveKey(snap: DocumentSnapshot, period: string, nowMs: number): Promise<boolean> {
  const rec = keyRecordOf(snap);
  if (!rec || rec.state !== "ACTIVE" || !rec.wrapped) return false;
  const kms = await keksOfRing(rec.ring);
  const aad = wrapAad(rec.ring, snap.id, rec.generation);
  const key = await unwrapOrNull(kms, rec.period, rec.wrapped, aad);
  if (!key) return false;
  await ensurePeriod(kms, period, nowMs);
  return commitIf(snap, activeFields(kms, String(snap.get("database")), period, await kms.wrap(kekIdOf(period), key, aad), nowMs));
}

/** Turns an active key of `generation` into a tombstone (no key material). false: it is another generation now. */
export async function tombstoneKey(dataKeyId: string, generation: number, nowMs: number, destroyAtMs: number | null): Promise<boolean> {
  const ref = keysCol().doc(dataKeyId);
  return ledgerDb().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const rec = keyRecordOf(snap);
    if (!rec || rec.generation !== generation) return false;
    if (rec.state === "SHREDDED") return true;
    tx.update(ref, {
      state: "SHREDDED",
      wrapped: FieldValue.delete(),
      shredQueue: FieldValue.delete(),
      periodKey: FieldValue.delete(),
      shreddedAt: Timestamp.fromMillis(nowMs),
      ...(destroyAtMs !== null ? { destroyAt: Timestamp.fromMillis(destroyAtMs) } : {}),
      updatedAt: Timestamp.fromMillis(nowMs),
    });
    return true;
  });
}

/** The active data keys of the current governed database in this ring, a page at a time (the audit's ORPHANED_DATA_KEY). */
export async function* activeDataKeys(): AsyncGenerator<{ path: string; ref: string; createdAtMs: number }> {
  const kms = await archiveKeksIfConfigured();
  if (!kms) return;
  const database = governedDatabaseId();
  let after: DocumentSnapshot | null = null;
  for (;;) {
    let q = keysCol().where("shredQueue", ">=", shredQueue(kms.ring, database, "")).where("shredQueue", "<=", shredQueue(kms.ring, database, "\uf8ff")).orderBy("shredQueue").limit(500);
    if (after) q = q.startAfter(after);
    const page = await q.get();
    for (const d of page.docs) {
      const rec = keyRecordOf(d)!;
      yield { path: `${ARCHIVE_KEYS}/${d.id}`, ref: dataKeyRef(d.id, rec.generation), createdAtMs: rec.createdAtMs };
    }
    if (page.size < 500) return;
    after = page.docs[page.docs.length - 1]!;
  }
}
