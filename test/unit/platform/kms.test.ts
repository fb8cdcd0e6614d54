/**
 * The Cloud KMS adapter of the archive's key-encryption keys, against the client library's own request and response
 * types (no live KMS is reachable here): every request the adapter sends must pass the library's message check, and
 * every answer is built by the library from the fields KMS sends back. The fake keeps key versions and their states
 * as KMS does, and answers a destroyed version's decrypt with FAILED_PRECONDITION.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { protos } from "@google-cloud/kms";
import { describe, expect, it } from "vitest";
import { ArchiveKeyRingMissingError, archiveKeks, archiveKeksIfConfigured, CloudKmsKeys, KekUnavailableError, type KmsClient } from "../../../functions/src/platform/kms";

const v1 = protos.google.cloud.kms.v1;
const RING = "projects/demo-p/locations/europe-west1/keyRings/retention-archive";
const DAY_S = 86_400;

class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A fake KMS: one symmetric version per crypto key, AES-GCM inside, the library's messages outside. */
class FakeKms {
  readonly calls: { method: string; request: unknown }[] = [];
  readonly keys = new Map<string, { material: Buffer; state: keyof typeof v1.CryptoKeyVersion.CryptoKeyVersionState; destroyTime: number | null; delayS: number }>();
  constructor(private readonly nowS: number) {}

  /**
   * What the client does with a request before it goes on the wire: the library's message from the plain object
   * (enum names become numbers, bytes stay bytes), which must then verify, and every field the adapter set must be
   * one the message type has (the library would drop an unknown one silently).
   */
  private check(method: string, type: { prototype: object; fromObject(o: Record<string, unknown>): object; verify(m: object): string | null }, request: object): void {
    // The generated message classes declare each field on their prototype.
    const unknown = Object.keys(request).filter((k) => !(k in type.prototype));
    if (unknown.length > 0) throw new Error(`${method}: fields the message has not: ${unknown.join(", ")}`);
    const problem = type.verify(type.fromObject(request as Record<string, unknown>));
    if (problem) throw new Error(`${method}: the library refuses the request: ${problem}`);
    this.calls.push({ method, request });
  }

  createCryptoKey(request: protos.google.cloud.kms.v1.ICreateCryptoKeyRequest) {
    this.check("createCryptoKey", v1.CreateCryptoKeyRequest, request);
    const name = `${request.parent}/cryptoKeys/${request.cryptoKeyId}`;
    if (this.keys.has(name)) return Promise.reject(new GrpcError(6, "ALREADY_EXISTS"));
    expect(request.cryptoKey?.purpose).toBe("ENCRYPT_DECRYPT");
    this.keys.set(name, { material: randomBytes(32), state: "ENABLED", destroyTime: null, delayS: Number(request.cryptoKey?.destroyScheduledDuration?.seconds ?? 30 * DAY_S) });
    return Promise.resolve([v1.CryptoKey.fromObject({ name, purpose: "ENCRYPT_DECRYPT" })]);
  }

  encrypt(request: protos.google.cloud.kms.v1.IEncryptRequest) {
    this.check("encrypt", v1.EncryptRequest, request);
    const k = this.keys.get(request.name!);
    if (!k) return Promise.reject(new GrpcError(5, "NOT_FOUND"));
    if (k.state !== "ENABLED") return Promise.reject(new GrpcError(9, "FAILED_PRECONDITION"));
    const iv = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", k.material, iv);
    c.setAAD(Buffer.from(request.additionalAuthenticatedData as Uint8Array));
    const ct = Buffer.concat([iv, c.update(Buffer.from(request.plaintext as Uint8Array)), c.final(), c.getAuthTag()]);
    return Promise.resolve([v1.EncryptResponse.fromObject({ name: `${request.name}/cryptoKeyVersions/1`, ciphertext: ct.toString("base64"), verifiedPlaintextCrc32c: false })]);
  }

  decrypt(request: protos.google.cloud.kms.v1.IDecryptRequest) {
    this.check("decrypt", v1.DecryptRequest, request);
    const k = this.keys.get(request.name!);
    if (!k) return Promise.reject(new GrpcError(5, "NOT_FOUND"));
    if (k.state !== "ENABLED") return Promise.reject(new GrpcError(9, "FAILED_PRECONDITION: version is DESTROY_SCHEDULED"));
    const box = Buffer.from(request.ciphertext as Uint8Array);
    const d = createDecipheriv("aes-256-gcm", k.material, box.subarray(0, 12));
    d.setAAD(Buffer.from(request.additionalAuthenticatedData as Uint8Array));
    d.setAuthTag(box.subarray(box.length - 16));
    const pt = Buffer.concat([d.update(box.subarray(12, box.length - 16)), d.final()]);
    return Promise.resolve([v1.DecryptResponse.fromObject({ plaintext: pt.toString("base64"), usedPrimary: true })]);
  }

  listCryptoKeyVersions(request: protos.google.cloud.kms.v1.IListCryptoKeyVersionsRequest) {
    this.check("listCryptoKeyVersions", v1.ListCryptoKeyVersionsRequest, request);
    const k = this.keys.get(request.parent!);
    if (!k) return Promise.reject(new GrpcError(5, "NOT_FOUND"));
    // The library hands enums over by name (its default); the adapter also accepts their numbers.
    const version = v1.CryptoKeyVersion.toObject(
      v1.CryptoKeyVersion.fromObject({ name: `${request.parent}/cryptoKeyVersions/1`, state: k.state, ...(k.destroyTime !== null ? { destroyTime: { seconds: k.destroyTime } } : {}) }),
      { enums: String, longs: Number },
    );
    return Promise.resolve([[version], null, {}]);
  }

  destroyCryptoKeyVersion(request: protos.google.cloud.kms.v1.IDestroyCryptoKeyVersionRequest) {
    this.check("destroyCryptoKeyVersion", v1.DestroyCryptoKeyVersionRequest, request);
    const key = request.name!.replace(/\/cryptoKeyVersions\/1$/, "");
    const k = this.keys.get(key);
    if (!k) return Promise.reject(new GrpcError(5, "NOT_FOUND"));
    if (k.state !== "ENABLED" && k.state !== "DISABLED") return Promise.reject(new GrpcError(9, "FAILED_PRECONDITION"));
    k.state = "DESTROY_SCHEDULED";
    k.destroyTime = this.nowS + k.delayS;
    return Promise.resolve([v1.CryptoKeyVersion.fromObject({ name: request.name, state: "DESTROY_SCHEDULED", destroyTime: { seconds: k.destroyTime } })]);
  }
}

const NOW_S = 1_900_000_000;
const client = (kms: FakeKms) => kms as unknown as KmsClient;

describe("Cloud KMS adapter (platform/kms.ts)", () => {
  it("creates a period's key once, with the destroy delay, and wraps and unwraps a data key with its AAD", async () => {
    const kms = new FakeKms(NOW_S);
    const keys = new CloudKmsKeys(client(kms), RING, 7);
    await keys.ensure("archive-kek-d-2033-06-01");
    await keys.ensure("archive-kek-d-2033-06-01"); // ALREADY_EXISTS is success
    const created = kms.calls.filter((c) => c.method === "createCryptoKey").map((c) => c.request as protos.google.cloud.kms.v1.ICreateCryptoKeyRequest);
    expect(created).toHaveLength(2);
    expect(created[0]).toMatchObject({ parent: RING, cryptoKeyId: "archive-kek-d-2033-06-01", cryptoKey: { destroyScheduledDuration: { seconds: 7 * DAY_S } } });
    const dek = randomBytes(32);
    const aad = Buffer.from("archive-data-key/v1|ring|dk-1#g1");
    const wrapped = await keys.wrap("archive-kek-d-2033-06-01", dek, aad);
    expect(wrapped.equals(dek)).toBe(false);
    expect((await keys.unwrap("archive-kek-d-2033-06-01", wrapped, aad)).equals(dek)).toBe(true);
    await expect(keys.unwrap("archive-kek-d-2033-06-01", wrapped, Buffer.from("another key's aad"))).rejects.toThrow();
  });

  it("destroys every enabled version, reports KMS's destroy time, is idempotent, and a destroyed key unwraps nothing", async () => {
    const kms = new FakeKms(NOW_S);
    const keys = new CloudKmsKeys(client(kms), RING, 30);
    await keys.ensure("archive-kek-d-2033-06-01");
    const wrapped = await keys.wrap("archive-kek-d-2033-06-01", randomBytes(32), Buffer.from("a"));
    const first = await keys.destroy("archive-kek-d-2033-06-01", NOW_S * 1000);
    expect(first.destroyAtMs).toBe((NOW_S + 30 * DAY_S) * 1000);
    // Already scheduled: no second destroy call, the same date.
    expect(await keys.destroy("archive-kek-d-2033-06-01", NOW_S * 1000 + 5_000)).toEqual(first);
    expect(kms.calls.filter((c) => c.method === "destroyCryptoKeyVersion")).toHaveLength(1);
    await expect(keys.unwrap("archive-kek-d-2033-06-01", wrapped, Buffer.from("a"))).rejects.toBeInstanceOf(KekUnavailableError);
    await expect(keys.unwrap("archive-kek-d-2099-01-01", wrapped, Buffer.from("a"))).rejects.toBeInstanceOf(KekUnavailableError);
  });

  it("refuses an answer from another key, and a ring that is not a key ring's name", async () => {
    const kms = new FakeKms(NOW_S);
    await new CloudKmsKeys(client(kms), RING, 30).ensure("archive-kek-d-2033-06-02");
    const lying = Object.assign(Object.create(kms) as FakeKms, {
      encrypt: (r: protos.google.cloud.kms.v1.IEncryptRequest) => kms.encrypt({ ...r, name: `${RING}/cryptoKeys/archive-kek-d-2033-06-02` }),
    });
    await kms.createCryptoKey({ parent: RING, cryptoKeyId: "archive-kek-d-2033-06-01", cryptoKey: { purpose: "ENCRYPT_DECRYPT" } });
    await expect(new CloudKmsKeys(client(lying), RING, 30).wrap("archive-kek-d-2033-06-01", randomBytes(32), Buffer.from("a"))).rejects.toThrow(/not .*archive-kek-d-2033-06-01/);
    expect(() => new CloudKmsKeys(client(kms), "projects/p/keyRings/r", 30)).toThrow(/RETENTION_ARCHIVE_KEY_RING/);
  });
});

describe("which KEKs a process uses", () => {
  const saved = { ring: process.env.RETENTION_ARCHIVE_KEY_RING, host: process.env.FIRESTORE_EMULATOR_HOST };
  const restore = () => {
    for (const [k, v] of [["RETENTION_ARCHIVE_KEY_RING", saved.ring], ["FIRESTORE_EMULATOR_HOST", saved.host]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };

  it("outside the emulators: Cloud KMS with a key ring; without one archiving refuses, and a deployment that archives nothing needs none", async () => {
    try {
      delete process.env.FIRESTORE_EMULATOR_HOST;
      delete process.env.RETENTION_ARCHIVE_KEY_RING;
      await expect(archiveKeks()).rejects.toBeInstanceOf(ArchiveKeyRingMissingError);
      expect(await archiveKeksIfConfigured()).toBeNull();
      process.env.RETENTION_ARCHIVE_KEY_RING = RING;
      const keys = await archiveKeks();
      expect(keys).toBeInstanceOf(CloudKmsKeys);
      expect(keys.ring).toBe(RING);
      process.env.RETENTION_ARCHIVE_KEY_RING = "projects/p/keyRings/r";
      await expect(archiveKeks()).rejects.toThrow(/RETENTION_ARCHIVE_KEY_RING/);
    } finally {
      restore();
    }
  });
});

