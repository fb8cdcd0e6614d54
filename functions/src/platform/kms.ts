import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import type { KeyManagementServiceClient, protos } from "@google-cloud/kms";
import { db } from "./firestore";
import { LOCAL_SECRET_FILE, readLocalSecret } from "./evidence-key";
import { settings } from "./settings";

/**
 * The key-encryption keys (KEKs) of the archive's data keys: one per shred period (decision 0038). Two adapters
 * behind one interface:
 * - Cloud KMS (`@google-cloud/kms`), in production: a crypto key per period in the key ring RETENTION_ARCHIVE_KEY_RING,
 *   created with the destroy delay RETENTION_ARCHIVE_KEY_DESTROY_DAYS; wrapping and unwrapping are KMS encrypt and
 *   decrypt calls, and destroying schedules the destruction of every version. The key material never leaves KMS, so
 *   no backup of any database holds it.
 * - On the emulators, a local stand-in: each period's key is random material sealed under the local root key
 *   (RETENTION_ARCHIVE_KEK in functions/.secret.local, as the evidence key), kept in the emulator-only database
 *   `local-kms`, and destroying deletes the material at once. It simulates KMS for the tests; it is no KMS.
 */
export interface KeyEncryptionKeys {
  /** Where the keys live: the KMS key ring's name, or `local/<database>`. Recorded with each wrapped key. */
  readonly ring: string;
  /** The period key exists afterwards (idempotent). */
  ensure(kekId: string): Promise<void>;
  wrap(kekId: string, dataKey: Buffer, aad: Buffer): Promise<Buffer>;
  /** Throws KekUnavailableError when the key is destroyed (or scheduled for it) or was never made. */
  unwrap(kekId: string, wrapped: Buffer, aad: Buffer): Promise<Buffer>;
  /** Schedules the destruction of the period key; returns when it is (or was) due. Idempotent. */
  destroy(kekId: string, nowMs: number): Promise<{ destroyAtMs: number }>;
}

/** A KEK that can no longer unwrap: destroyed, scheduled for destruction, or missing. Copies under it stay sealed. */
export class KekUnavailableError extends Error {
  readonly reason = "KEK_UNAVAILABLE";
  constructor(kekId: string, why: string) {
    super(`KEK_UNAVAILABLE: key-encryption key ${kekId} cannot unwrap (${why})`);
    this.name = "KekUnavailableError";
  }
}

/** No key ring configured outside the emulators: archiving refuses rather than store plaintext. */
export class ArchiveKeyRingMissingError extends Error {
  readonly reason = "ARCHIVE_KEY_RING_MISSING";
  constructor() {
    super("ARCHIVE_KEY_RING_MISSING: archive copies are sealed with data keys wrapped by Cloud KMS; set RETENTION_ARCHIVE_KEY_RING to a key ring (projects/<p>/locations/<l>/keyRings/<r>) the functions' service account may use.");
    this.name = "ArchiveKeyRingMissingError";
  }
}

/** The slice of the KMS client the adapter uses (so its unit test drives it with the library's own request and response types). */
export type KmsClient = Pick<KeyManagementServiceClient, "createCryptoKey" | "encrypt" | "decrypt" | "listCryptoKeyVersions" | "destroyCryptoKeyVersion">;

type KmsV1 = typeof protos.google.cloud.kms.v1;
type VersionState = protos.google.cloud.kms.v1.CryptoKeyVersion.CryptoKeyVersionState | keyof KmsV1["CryptoKeyVersion"]["CryptoKeyVersionState"] | null | undefined;

/** gRPC status codes the adapter tells apart. */
const ALREADY_EXISTS = 6;
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;

const grpcCode = (e: unknown): number | undefined => (typeof (e as { code?: unknown })?.code === "number" ? (e as { code: number }).code : undefined);
const toBuffer = (v: Uint8Array | string | null | undefined): Buffer => (typeof v === "string" ? Buffer.from(v, "base64") : Buffer.from(v ?? new Uint8Array()));
/** A version's state as the client hands it over: the enum's name (the library's default) or its number. */
const stateIs = (s: VersionState, name: "ENABLED" | "DISABLED" | "DESTROY_SCHEDULED" | "DESTROYED", num: number): boolean => String(s) === name || Number(s) === num;
const secondsOf = (t: protos.google.protobuf.ITimestamp | null | undefined): number | null =>
  t?.seconds === undefined || t.seconds === null ? null : Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);

export class CloudKmsKeys implements KeyEncryptionKeys {
  constructor(
    private readonly client: KmsClient,
    readonly ring: string,
    private readonly destroyDelayDays: number,
  ) {
    if (!/^projects\/[^/]+\/locations\/[^/]+\/keyRings\/[^/]+$/.test(ring)) throw new Error(`RETENTION_ARCHIVE_KEY_RING must be projects/<p>/locations/<l>/keyRings/<r>, got ${ring}`);
  }

  private keyName = (kekId: string): string => `${this.ring}/cryptoKeys/${kekId}`;

  async ensure(kekId: string): Promise<void> {
    try {
      await this.client.createCryptoKey({
        parent: this.ring,
        cryptoKeyId: kekId,
        cryptoKey: {
          purpose: "ENCRYPT_DECRYPT",
          versionTemplate: { algorithm: "GOOGLE_SYMMETRIC_ENCRYPTION", protectionLevel: "SOFTWARE" },
          destroyScheduledDuration: { seconds: this.destroyDelayDays * 86_400 },
          labels: { purpose: "archive-kek" },
        },
      });
    } catch (e) {
      if (grpcCode(e) !== ALREADY_EXISTS) throw e;
    }
  }

  async wrap(kekId: string, dataKey: Buffer, aad: Buffer): Promise<Buffer> {
    const [res] = await this.client.encrypt({ name: this.keyName(kekId), plaintext: dataKey, additionalAuthenticatedData: aad });
    // KMS answers with the version it used: it must be this period's key, never another.
    if (!res.name?.startsWith(`${this.keyName(kekId)}/cryptoKeyVersions/`)) throw new Error(`KMS encrypt answered for ${res.name ?? "no key"}, not ${this.keyName(kekId)}`);
    return toBuffer(res.ciphertext);
  }

  async unwrap(kekId: string, wrapped: Buffer, aad: Buffer): Promise<Buffer> {
    try {
      const [res] = await this.client.decrypt({ name: this.keyName(kekId), ciphertext: wrapped, additionalAuthenticatedData: aad });
      return toBuffer(res.plaintext);
    } catch (e) {
      const code = grpcCode(e);
      if (code === FAILED_PRECONDITION || code === NOT_FOUND) throw new KekUnavailableError(kekId, code === NOT_FOUND ? "not found" : "destroyed or scheduled for destruction");
      throw e;
    }
  }

  async destroy(kekId: string, nowMs: number): Promise<{ destroyAtMs: number }> {
    const [versions] = await this.client.listCryptoKeyVersions({ parent: this.keyName(kekId) });
    let destroyAtMs = nowMs;
    for (const v of versions) {
      const state = v.state;
      if (stateIs(state, "ENABLED", 1) || stateIs(state, "DISABLED", 2)) {
        const [done] = await this.client.destroyCryptoKeyVersion({ name: v.name ?? "" });
        destroyAtMs = Math.max(destroyAtMs, secondsOf(done.destroyTime) ?? nowMs + this.destroyDelayDays * 86_400_000);
      } else if (stateIs(state, "DESTROY_SCHEDULED", 4)) {
        destroyAtMs = Math.max(destroyAtMs, secondsOf(v.destroyTime) ?? nowMs);
      } else if (stateIs(state, "DESTROYED", 3)) {
        destroyAtMs = Math.max(destroyAtMs, secondsOf(v.destroyEventTime) ?? nowMs);
      }
    }
    return { destroyAtMs };
  }
}

/** The emulators' stand-in database for KMS (never a governed or ledger database, never backed up). */
export const LOCAL_KMS_DATABASE = "local-kms";
export const ARCHIVE_KEK_SECRET = "RETENTION_ARCHIVE_KEK";

/**
 * The local root key: RETENTION_ARCHIVE_KEK from the environment, else the emulators' secret file: this codebase's
 * functions/.secret.local, or (a function kit's code runs from node_modules) the .secret.local of the codebase the
 * Functions emulator runs in, its working directory. Emulators only.
 */
export function localRootKey(env: Readonly<Record<string, string | undefined>> = process.env): Buffer | null {
  const raw = env[ARCHIVE_KEK_SECRET] || readLocalSecret(ARCHIVE_KEK_SECRET, [LOCAL_SECRET_FILE, join(process.cwd(), ".secret.local")]);
  if (!raw) return null;
  if (raw.length < 32) throw new Error(`${ARCHIVE_KEK_SECRET} must be at least 32 characters (e.g. \`openssl rand -hex 32\`)`);
  return createHash("sha256").update(raw, "utf8").digest();
}

function gcm(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, iv);
  c.setAAD(aad);
  const ct = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), ct]);
}

function ungcm(key: Buffer, box: Buffer, aad: Buffer): Buffer {
  const d = createDecipheriv("aes-256-gcm", key, box.subarray(0, 12));
  d.setAAD(aad);
  d.setAuthTag(box.subarray(12, 28));
  return Buffer.concat([d.update(box.subarray(28)), d.final()]);
}

export class LocalKeys implements KeyEncryptionKeys {
  readonly ring: string;
  /** The root key, or a function that finds it when first needed (a shred with no keys, the audit, never need it). */
  constructor(
    private readonly rootOf: () => Buffer,
    ringId: string,
    private readonly destroyDelayDays: number,
  ) {
    this.ring = `local/${ringId}`;
  }

  private get root(): Buffer {
    return this.rootOf();
  }

  private ref = (kekId: string) => db(LOCAL_KMS_DATABASE).collection("rings").doc(this.ring.slice("local/".length)).collection("keks").doc(kekId);

  async ensure(kekId: string): Promise<void> {
    try {
      await this.ref(kekId).create({ kekId, state: "ENABLED", material: gcm(this.root, randomBytes(32), Buffer.from(kekId)) });
    } catch (e) {
      if (grpcCode(e) !== ALREADY_EXISTS) throw e;
    }
  }

  private async material(kekId: string): Promise<Buffer> {
    const snap = await this.ref(kekId).get();
    const m = snap.get("material") as unknown;
    if (!snap.exists) throw new KekUnavailableError(kekId, "not found");
    if (snap.get("state") !== "ENABLED" || !(m instanceof Uint8Array)) throw new KekUnavailableError(kekId, "destroyed");
    return ungcm(this.root, Buffer.from(m), Buffer.from(kekId));
  }

  async wrap(kekId: string, dataKey: Buffer, aad: Buffer): Promise<Buffer> {
    return gcm(await this.material(kekId), dataKey, aad);
  }

  async unwrap(kekId: string, wrapped: Buffer, aad: Buffer): Promise<Buffer> {
    return ungcm(await this.material(kekId), wrapped, aad);
  }

  async destroy(kekId: string, nowMs: number): Promise<{ destroyAtMs: number }> {
    const ref = this.ref(kekId);
    return ref.firestore.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      const at = snap.get("destroyAtMs") as unknown;
      if (typeof at === "number") return { destroyAtMs: at };
      const destroyAtMs = nowMs + this.destroyDelayDays * 86_400_000;
      // The material goes at once: the stand-in cannot wait for the delay, and nothing may unwrap after a shred.
      tx.set(ref, { kekId, state: "DESTROYED", destroyAtMs }, { merge: false });
      return { destroyAtMs };
    });
  }
}

let cloud: { ring: string; keys: CloudKmsKeys } | null = null;

async function cloudKeys(ring: string, delay: number): Promise<CloudKmsKeys> {
  if (cloud?.ring !== ring) {
    const { KeyManagementServiceClient } = await import("@google-cloud/kms");
    cloud = { ring, keys: new CloudKmsKeys(new KeyManagementServiceClient(), ring, delay) };
  }
  return cloud.keys;
}

function localKeys(ringId: string, delay: number): LocalKeys {
  return new LocalKeys(
    () => {
      const root = localRootKey();
      if (!root) throw new Error(`${ARCHIVE_KEK_SECRET} is missing: run \`npm ci\` (or \`node scripts/local-evidence-key.mjs\`) to write it to functions/.secret.local (a kit: \`retention init\` writes it to the codebase's .secret.local)`);
      return root;
    },
    ringId,
    delay,
  );
}

/**
 * The KEKs of the ring a key was wrapped in (as its record names it): a key is always unwrapped where it was wrapped,
 * whichever database its record was read from (a restored copy of the ledger included).
 */
export async function keksOfRing(ring: string): Promise<KeyEncryptionKeys> {
  const delay = settings.archiveKeyDestroyDays();
  if (ring.startsWith("local/")) {
    if (!process.env.FIRESTORE_EMULATOR_HOST) throw new Error(`the local key ring ${ring} exists only on the emulators`);
    return localKeys(ring.slice("local/".length), delay);
  }
  return cloudKeys(ring, delay);
}

/**
 * The KEKs this process uses: Cloud KMS when a key ring is set; on the emulators without one, the local stand-in
 * (its ring named after the ledger database, so the keys of one test's ledger are its own). Elsewhere: refused.
 */
export async function archiveKeks(): Promise<KeyEncryptionKeys> {
  const ring = settings.archiveKeyRing();
  const delay = settings.archiveKeyDestroyDays();
  if (ring) return cloudKeys(ring, delay);
  if (!process.env.FIRESTORE_EMULATOR_HOST) throw new ArchiveKeyRingMissingError();
  return localKeys(settings.ledgerDatabaseId(), delay);
}

/**
 * The KEKs when this deployment has any: a key ring set, or the emulators. null: no key ring outside the emulators
 * (an app whose registry archives nothing needs none; archiving itself refuses with ARCHIVE_KEY_RING_MISSING).
 */
export async function archiveKeksIfConfigured(): Promise<KeyEncryptionKeys | null> {
  if (!settings.archiveKeyRing() && !process.env.FIRESTORE_EMULATOR_HOST) return null;
  return archiveKeks();
}
