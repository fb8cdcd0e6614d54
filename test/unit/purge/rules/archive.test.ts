import { Timestamp } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { archiveAfterRelease, archiveClassOf, archiveIdFor, archiveManifestHash, archiveRetention, businessData, checkArchive, contentHash, isArchivePath } from "../../../../functions/src/purge/rules/archive";
import { holdClassForPath } from "../../../../functions/src/holds/rules";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { policyV1 } from "../../../helpers/policy";

const policy = policyV1();
import { sourceHash, toPlain } from "../../../../functions/src/purge/runner/archive";

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

  const archiveClass = archiveClassOf(policy);
  it("gives the archive its own policy's retention (the archives collection's class), counted from the archiving time", () => {
    expect(archiveClass.id).toBe("audit-7y");
    const archivedAtMs = 1_800_000_000_000;
    // The source is being purged: its retention ran out long ago.
    const source = { retentionClass: "audit-7y", createdAtMs: 10, retainUntilMs: 500, expireAtMs: null };
    const r = archiveRetention({ archiveClass, archivedAtMs, tenantId: "t", source, holdIds: [] });
    expect(r).toEqual({
      retentionClass: "audit-7y",
      tenantId: "t",
      createdAtMs: archivedAtMs,
      retainUntilMs: archivedAtMs + 2557 * DAY_MS,
      expireAtMs: archivedAtMs + 2557 * DAY_MS,
      legalHold: false,
      holdIds: [],
      source,
    });
    expect(archiveRetention({ archiveClass, archivedAtMs, tenantId: "t", source, holdIds: ["h2", "h1", "h2"] })).toMatchObject({ expireAtMs: null, legalHold: true, holdIds: ["h1", "h2"] });
  });

  it("is never born expired, whatever the source's retention was", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: null }),
        fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: null }),
        (archivedAtMs, retainUntilMs, expireAtMs) => {
          const r = archiveRetention({ archiveClass, archivedAtMs, tenantId: "t", source: { retentionClass: "audit-7y", createdAtMs: 0, retainUntilMs, expireAtMs }, holdIds: [] });
          expect(r.expireAtMs).toBeGreaterThan(archivedAtMs);
        },
      ),
    );
  });

  it("gets its expiry back from its own policy when its last hold is released", () => {
    const archivedAtMs = 1_800_000_000_000;
    const held = { retentionClass: "audit-7y", lifecycleState: "LEGAL_HOLD" as const, tenantId: "t", policyVersion: "v1", createdAtMs: archivedAtMs, expireAtMs: null, retainUntilMs: null, legalHold: false, holdIds: [], preHold: null };
    expect(archiveAfterRelease(held, archiveClass)).toMatchObject({ expireAtMs: archivedAtMs + 2557 * DAY_MS, retainUntilMs: archivedAtMs + 2557 * DAY_MS });
    expect(archiveAfterRelease({ ...held, legalHold: true, holdIds: ["h2"] }, archiveClass).expireAtMs).toBeNull();
  });

  it("lets archive copies be held: their class comes from the registry's control-plane list", () => {
    expect(isArchivePath("archives/arc-1")).toBe(true);
    expect(isArchivePath("archives/arc-1/x/y")).toBe(false);
    expect(holdClassForPath(policy, "archives/arc-1")?.id).toBe("audit-7y");
    expect(holdClassForPath(policy, "auditRecords/ar-1")?.id).toBe("audit-7y");
    expect(holdClassForPath(policy, "deletionAudits/000000000001")).toBeUndefined();
    expect(holdClassForPath(policy, "retentionJobs/x")).toBeUndefined();
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
