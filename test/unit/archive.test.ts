import { Timestamp } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import { archiveIdFor, archiveManifestHash, archiveRetention, businessData, checkArchive, contentHash } from "../../functions/src/domain/archive";
import { sourceHash, toPlain } from "../../functions/src/infra/archive-plain";

describe("archive domain", () => {
  it("copies business data only, never the retention fields", () => {
    expect(businessData({ action: "REFUND", actorUid: "u-1", retentionClass: "audit-7y", legalHold: false, expireAt: 1, purgeDecision: {} })).toEqual({
      action: "REFUND",
      actorUid: "u-1",
    });
  });

  it("derives archive ids from path and anchor", () => {
    expect(archiveIdFor("auditRecords/a", 1)).toBe(archiveIdFor("auditRecords/a", 1));
    expect(archiveIdFor("auditRecords/a", 1)).not.toBe(archiveIdFor("auditRecords/a", 2));
    expect(archiveIdFor("auditRecords/a", 1)).toMatch(/^arc-[0-9a-f]{40}$/);
  });

  it("gives the archive its source's retention, and no expiry while held", () => {
    const src = { retentionClass: "audit-7y", tenantId: "t", createdAtMs: 10, expireAtMs: null, retainUntilMs: 500, holdIds: [] };
    expect(archiveRetention(src)).toEqual({ retentionClass: "audit-7y", tenantId: "t", createdAtMs: 10, retainUntilMs: 500, expireAtMs: 500, legalHold: false, holdIds: [] });
    expect(archiveRetention({ ...src, expireAtMs: 300 }).expireAtMs).toBe(300);
    expect(archiveRetention({ ...src, holdIds: ["h2", "h1", "h2"] })).toMatchObject({ expireAtMs: null, legalHold: true, holdIds: ["h1", "h2"] });
  });

  it("verifies by read-back: missing, wrong source, altered copy and changed source all fail", () => {
    const sha = contentHash({ a: 1 });
    const ok = { exists: true, sourcePath: "x/1", recordedSha256: sha, dataSha256: sha };
    expect(checkArchive({ sourcePath: "x/1", sha256: sha }, ok)).toBeNull();
    expect(checkArchive({ sourcePath: "x/1", sha256: sha }, { ...ok, exists: false })).toBe("MISSING");
    expect(checkArchive({ sourcePath: "x/1", sha256: sha }, { ...ok, sourcePath: "x/2" })).toBe("WRONG_SOURCE");
    expect(checkArchive({ sourcePath: "x/1", sha256: sha }, { ...ok, dataSha256: contentHash({ a: 2 }) })).toBe("HASH_MISMATCH");
    expect(checkArchive({ sourcePath: "x/1", sha256: contentHash({ a: 2 }) }, ok)).toBe("SOURCE_CHANGED");
  });

  it("hashes a manifest independently of entry order", () => {
    const a = { sourcePath: "x/1", archiveId: "arc-1", sha256: "1" };
    const b = { sourcePath: "x/2", archiveId: "arc-2", sha256: "2" };
    expect(archiveManifestHash([a, b])).toBe(archiveManifestHash([b, a]));
    expect(archiveManifestHash([a, b])).not.toBe(archiveManifestHash([a, { ...b, sha256: "3" }]));
  });
});

describe("plain form of Firestore values", () => {
  it("keeps Timestamps to the nanosecond and ignores retention fields in the source hash", () => {
    const t = new Timestamp(100, 5);
    expect(toPlain({ at: t, n: [1, Number.NaN] })).toEqual({ at: { $timestamp: "100.000000005" }, n: [1, { $number: "NaN" }] });
    expect(sourceHash({ action: "X", at: t, expireAt: t })).toBe(sourceHash({ action: "X", at: new Timestamp(100, 5) }));
    expect(sourceHash({ action: "X", at: t })).not.toBe(sourceHash({ action: "X", at: new Timestamp(100, 6) }));
  });
});
