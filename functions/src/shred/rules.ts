import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { canonicalJson } from "../kernel/canonical";
import { DAY_MS } from "../kernel/policy";

/**
 * Crypto-shredded archives, the pure part (docs/decisions/0038-crypto-shredded-archives.md):
 * - an archive copy's business data is sealed with AES-256-GCM under its subject's data key; the retention
 *   fields, the source path and the hashes stay readable;
 * - a data key is wrapped by the key-encryption key (KEK) of its shred period: the UTC day its subject's last
 *   copy reaches the end of its retention. One KEK per day, in Cloud KMS (platform/kms.ts);
 * - when a period has ended, each of its data keys is shredded (no copy held, every copy past its retention) or
 *   wrapped again under a later period, and the period's KEK is then destroyed. A backup of any database holds
 *   data keys only wrapped under some period's KEK, and each KEK is destroyed once the keys it wraps are shredded.
 */

export const SEAL_ALG = "AES-256-GCM";
export const SEAL_VERSION = 1;
const IV_BYTES = 12;
const KEY_BYTES = 32;

/** A sealed copy of a document's business data, as stored on the archive copy (`sealed`). */
export interface Sealed {
  v: number;
  alg: string;
  /** base64 of the 96-bit nonce, the 128-bit tag and the ciphertext. */
  iv: string;
  tag: string;
  ct: string;
}

/** A fresh 256-bit data key. */
export const newDataKey = (): Buffer => randomBytes(KEY_BYTES);

/**
 * The additional authenticated data of a copy: its id, its source and its data key. A sealed body moved to another
 * copy, or relabelled with another key, fails to open.
 */
export const sealAad = (archiveId: string, sourcePath: string, dataKeyRef: string): Buffer => Buffer.from(canonicalJson({ archiveId, sourcePath, dataKeyRef, v: SEAL_VERSION }), "utf8");

/** Seals `plaintext` (the canonical JSON of the copy's business data in plain form) under `key`. */
export function seal(key: Buffer, plaintext: string, aad: Buffer): Sealed {
  if (key.length !== KEY_BYTES) throw new Error(`a data key has ${KEY_BYTES} bytes, got ${key.length}`);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(aad);
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return { v: SEAL_VERSION, alg: SEAL_ALG, iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64"), ct: ct.toString("base64") };
}

/** Opens a sealed body; throws SEAL_INVALID when the key, the AAD or the body do not match. */
export function open(key: Buffer, sealed: Sealed, aad: Buffer): string {
  if (sealed.v !== SEAL_VERSION || sealed.alg !== SEAL_ALG) throw new Error(`SEAL_INVALID: unknown seal ${sealed.alg} v${sealed.v}`);
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64"));
    decipher.setAAD(aad);
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, "base64")), decipher.final()]).toString("utf8");
  } catch {
    throw new Error("SEAL_INVALID: the sealed copy does not open with its data key");
  }
}

/** Whether a stored value has the shape of a sealed body. */
export function isSealed(v: unknown): v is Sealed {
  if (!v || typeof v !== "object") return false;
  const s = v as Record<string, unknown>;
  return typeof s.v === "number" && typeof s.alg === "string" && typeof s.iv === "string" && typeof s.tag === "string" && typeof s.ct === "string";
}

/** Who a data key belongs to: a user, or a scope (a tenant's records, and a sweep's copies of a scope's documents). */
export interface KeySubject {
  kind: "user" | "scope";
  id: string;
}

/**
 * What a data key's id is derived from (then hashed under the evidence key, so no id names a subject): the
 * governed database the copies live in and the subject. One key per subject and database.
 */
export const dataKeyName = (databaseId: string, subject: KeySubject): string => canonicalJson({ d: databaseId, k: subject.kind, s: subject.id });

/**
 * Whose key seals a copy: a user's erasure, the user's; a scope's closure, the scope's; a sweep (no subject), the
 * scope of the document (its `tenantId`; an app without scopes has one, and so one key for its sweeps).
 */
export function keySubjectOf(subject: { type: "user"; uid: string } | { type: "tenant"; tenantId: string } | null, docTenantId: string): KeySubject {
  if (subject?.type === "user") return { kind: "user", id: subject.uid };
  if (subject?.type === "tenant") return { kind: "scope", id: subject.tenantId };
  return { kind: "scope", id: docTenantId };
}

/** A copy's reference to the key that sealed it: the key's id and its generation (a key shredded and made again is a new generation). */
export const dataKeyRef = (dataKeyId: string, generation: number): string => `${dataKeyId}#g${generation}`;

export function parseDataKeyRef(ref: unknown): { dataKeyId: string; generation: number } | null {
  if (typeof ref !== "string") return null;
  const m = /^(dk-[0-9a-f]{40})#g([1-9][0-9]*)$/.exec(ref);
  return m ? { dataKeyId: m[1]!, generation: Number(m[2]) } : null;
}

/** The period of copies kept without end (an archive class with no duration): never due, never destroyed by the shred. */
export const OPEN_PERIOD = "open";

/** The shred period of a copy that ends at `retainUntilMs`: its UTC day, `d-YYYY-MM-DD` (they sort by time). */
export function periodOf(retainUntilMs: number | null): string {
  if (retainUntilMs === null) return OPEN_PERIOD;
  return `d-${new Date(retainUntilMs).toISOString().slice(0, 10)}`;
}

/** When a period ends (the next UTC midnight); null for the open period. */
export function periodEndMs(period: string): number | null {
  if (period === OPEN_PERIOD) return null;
  const m = /^d-(\d{4}-\d{2}-\d{2})$/.exec(period);
  if (!m) throw new Error(`not a shred period: ${period}`);
  return Date.parse(`${m[1]}T00:00:00Z`) + DAY_MS;
}

/** The latest period that has ended at `nowMs`: every period up to it is due. */
export const lastEndedPeriod = (nowMs: number): string => periodOf(nowMs - DAY_MS);

/** The later of two periods (the open period is the latest). */
export function laterPeriod(a: string, b: string): string {
  if (a === OPEN_PERIOD || b === OPEN_PERIOD) return OPEN_PERIOD;
  return a > b ? a : b;
}

/**
 * When a copy ending at `retainUntilMs` is planned to be shredded: the first nightly purge after its period ends,
 * at the latest a day after that end. null: kept without end.
 */
export function plannedShredMs(retainUntilMs: number | null): number | null {
  const end = periodEndMs(periodOf(retainUntilMs));
  return end === null ? null : end + DAY_MS;
}

/** What the shred step found for one due data key's copies. */
export interface KeyCopies {
  /** A copy is held, or an active hold covers one. */
  held: boolean;
  /** The latest end of retention among the copies (null: none has one, or there are no copies). */
  latestRetainUntilMs: number | null;
  /** A copy is kept without end. */
  openEnded: boolean;
  /** How many copies name the key (at most the count read). */
  copies: number;
}

export type ShredVerdict =
  | { shred: true; reason: "ARCHIVE_RETENTION_ENDED" | "NO_COPIES_LEFT" }
  | { shred: false; reason: "ARCHIVE_UNDER_HOLD" | "ARCHIVE_RETENTION_NOT_ENDED"; nextPeriod: string };

/**
 * Whether a data key whose period has ended may be shredded: only when no copy is held and every copy's retention
 * has ended. Otherwise it moves to a later period: its last copy's, or today's while a hold stands (today's period
 * ends at the coming midnight, so a held key is looked at again by the next night's run, and the ended period's
 * KEK still goes tonight).
 */
export function shredVerdict(c: KeyCopies, nowMs: number): ShredVerdict {
  const today = periodOf(nowMs);
  if (c.held) return { shred: false, reason: "ARCHIVE_UNDER_HOLD", nextPeriod: laterPeriod(today, c.openEnded ? OPEN_PERIOD : periodOf(c.latestRetainUntilMs ?? nowMs)) };
  if (c.openEnded) return { shred: false, reason: "ARCHIVE_RETENTION_NOT_ENDED", nextPeriod: OPEN_PERIOD };
  if (c.latestRetainUntilMs !== null && c.latestRetainUntilMs > nowMs) {
    return { shred: false, reason: "ARCHIVE_RETENTION_NOT_ENDED", nextPeriod: laterPeriod(today, periodOf(c.latestRetainUntilMs)) };
  }
  return { shred: true, reason: c.copies === 0 ? "NO_COPIES_LEFT" : "ARCHIVE_RETENTION_ENDED" };
}

/** A KMS crypto key id for a period (KMS allows letters, digits, `_` and `-`, at most 63). */
export const kekIdOf = (period: string): string => `archive-kek-${period}`;

/**
 * The audit's view of a data key that is still active: ORPHANED_DATA_KEY when no copy names it any more and it
 * is older than a day (a key is made just before its first copy is written).
 */
export function orphanedDataKey(k: { createdAtMs: number; copies: number }, nowMs: number): boolean {
  return k.copies === 0 && nowMs - k.createdAtMs > DAY_MS;
}
