import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { purgedGoneBy } from "../../../functions/src/requests/rules/gone-by";
import {
  dataKeyRef,
  isSealed,
  keySubjectOf,
  lastEndedPeriod,
  laterPeriod,
  newDataKey,
  OPEN_PERIOD,
  open,
  orphanedDataKey,
  parseDataKeyRef,
  periodEndMs,
  periodOf,
  plannedShredMs,
  seal,
  sealAad,
  shredVerdict,
} from "../../../functions/src/shred/rules";

const NOW = Date.parse("2033-06-10T02:00:00Z");

describe("sealing (AES-256-GCM from node:crypto)", () => {
  it("opens with its key and AAD only; the ciphertext carries none of the plaintext", () => {
    const key = newDataKey();
    const aad = sealAad("arc-1", "tenants/t/orders/o", "dk-x#g1");
    const s = seal(key, '{"customerName":"Ada Lovelace"}', aad);
    expect(isSealed(s)).toBe(true);
    expect(JSON.stringify(s)).not.toContain("Ada");
    expect(open(key, s, aad)).toBe('{"customerName":"Ada Lovelace"}');
    expect(() => open(newDataKey(), s, aad)).toThrow(/SEAL_INVALID/);
    expect(() => open(key, s, sealAad("arc-2", "tenants/t/orders/o", "dk-x#g1"))).toThrow(/SEAL_INVALID/);
    expect(() => open(key, { ...s, ct: Buffer.from("x").toString("base64") }, aad)).toThrow(/SEAL_INVALID/);
    // A fresh nonce each time: equal plaintexts do not give equal ciphertexts.
    expect(seal(key, "same", aad).ct).not.toBe(seal(key, "same", aad).ct);
    expect(() => seal(Buffer.alloc(16), "x", aad)).toThrow(/32 bytes/);
  });

  it("names keys by reference and generation, and picks the key's subject", () => {
    const id = `dk-${"a".repeat(40)}`;
    expect(parseDataKeyRef(dataKeyRef(id, 3))).toEqual({ dataKeyId: id, generation: 3 });
    expect(parseDataKeyRef("dk-short#g1")).toBeNull();
    expect(parseDataKeyRef(`${id}#g0`)).toBeNull();
    expect(keySubjectOf({ type: "user", uid: "u-1" }, "t-acme")).toEqual({ kind: "user", id: "u-1" });
    expect(keySubjectOf({ type: "tenant", tenantId: "t-acme" }, "t-other")).toEqual({ kind: "scope", id: "t-acme" });
    expect(keySubjectOf(null, "t-acme")).toEqual({ kind: "scope", id: "t-acme" });
  });
});

describe("shred periods", () => {
  it("are UTC days; a period is due once it has ended; the open period never is", () => {
    expect(periodOf(Date.parse("2033-06-09T23:59:59Z"))).toBe("d-2033-06-09");
    expect(periodEndMs("d-2033-06-09")).toBe(Date.parse("2033-06-10T00:00:00Z"));
    expect(lastEndedPeriod(NOW)).toBe("d-2033-06-09");
    expect(periodOf(null)).toBe(OPEN_PERIOD);
    expect(periodEndMs(OPEN_PERIOD)).toBeNull();
    expect(laterPeriod("d-2033-06-09", "d-2034-01-01")).toBe("d-2034-01-01");
    expect(laterPeriod("d-2033-06-09", OPEN_PERIOD)).toBe(OPEN_PERIOD);
    // The open period sorts after every day, so a range query up to a day never reaches it.
    expect(OPEN_PERIOD > "d-9999-12-31").toBe(true);
    expect(plannedShredMs(Date.parse("2033-06-09T12:00:00Z"))).toBe(Date.parse("2033-06-11T00:00:00Z"));
    expect(() => periodEndMs("2033-06-09")).toThrow(/not a shred period/);
  });

  it("shreds only when no copy is held and every copy's retention has ended; otherwise moves the key on", () => {
    const ended = NOW - DAY_MS;
    expect(shredVerdict({ held: false, latestRetainUntilMs: ended, openEnded: false, copies: 3 }, NOW)).toEqual({ shred: true, reason: "ARCHIVE_RETENTION_ENDED" });
    expect(shredVerdict({ held: false, latestRetainUntilMs: null, openEnded: false, copies: 0 }, NOW)).toEqual({ shred: true, reason: "NO_COPIES_LEFT" });
    // Held: looked at again by the next night's run (today's period ends at midnight).
    expect(shredVerdict({ held: true, latestRetainUntilMs: ended, openEnded: false, copies: 3 }, NOW)).toEqual({ shred: false, reason: "ARCHIVE_UNDER_HOLD", nextPeriod: "d-2033-06-10" });
    // A copy archived later keeps the key to its own end.
    const later = Date.parse("2040-01-01T00:00:00Z");
    expect(shredVerdict({ held: false, latestRetainUntilMs: later, openEnded: false, copies: 3 }, NOW)).toEqual({ shred: false, reason: "ARCHIVE_RETENTION_NOT_ENDED", nextPeriod: "d-2040-01-01" });
    expect(shredVerdict({ held: true, latestRetainUntilMs: later, openEnded: false, copies: 3 }, NOW)).toMatchObject({ nextPeriod: "d-2040-01-01" });
    expect(shredVerdict({ held: false, latestRetainUntilMs: ended, openEnded: true, copies: 3 }, NOW)).toMatchObject({ shred: false, nextPeriod: OPEN_PERIOD });
  });

  it("reports a key with no copies left as orphaned only after a day (a key is made just before its first copy)", () => {
    expect(orphanedDataKey({ createdAtMs: NOW - 2 * DAY_MS, copies: 0 }, NOW)).toBe(true);
    expect(orphanedDataKey({ createdAtMs: NOW - 1000, copies: 0 }, NOW)).toBe(false);
    expect(orphanedDataKey({ createdAtMs: NOW - 2 * DAY_MS, copies: 1 }, NOW)).toBe(false);
  });
});

describe("fully gone by, with sealed archive copies", () => {
  const PURGED = Date.parse("2026-07-01T00:00:00Z");
  const END = PURGED + 2557 * DAY_MS;
  const windows = { pitrDays: 7, backupRetentionDays: 35, archiveKeyDestroyDays: 30 };

  it("moves from the copies' end plus backup retention to their shred plus the KMS destroy delay", () => {
    const clear = purgedGoneBy(PURGED, { any: true, latestRetainUntilMs: END, held: false, sealed: false }, windows);
    expect(clear.atMs).toBe(END + 35 * DAY_MS);
    const sealed = purgedGoneBy(PURGED, { any: true, latestRetainUntilMs: END, held: false, sealed: true }, windows);
    const shredAt = plannedShredMs(END)!;
    expect(sealed.atMs).toBe(shredAt + 30 * DAY_MS);
    expect(sealed).toMatchObject({ basis: { archivesShredAtMs: shredAt, archiveKeyDestroyDays: 30, archivesRetainUntilMs: END } });
    // A destroy delay longer than the backups' retention cannot make the date later than the copies in the clear would.
    expect(purgedGoneBy(PURGED, { any: true, latestRetainUntilMs: END, held: false, sealed: true }, { ...windows, archiveKeyDestroyDays: 90 }).atMs).toBe(END + 35 * DAY_MS);
    // The erased documents' own backups still count.
    expect(purgedGoneBy(PURGED, { any: true, latestRetainUntilMs: PURGED, held: false, sealed: true }, windows).atMs).toBe(PURGED + 35 * DAY_MS);
    // Held: no date, sealed or not.
    expect(purgedGoneBy(PURGED, { any: true, latestRetainUntilMs: END, held: true, sealed: true }, windows)).toMatchObject({ atMs: null, unknown: "ARCHIVE_UNDER_HOLD" });
    expect(() => purgedGoneBy(PURGED, { any: true, latestRetainUntilMs: END, held: false, sealed: true }, { ...windows, archiveKeyDestroyDays: 0 })).toThrow(/archiveKeyDestroyDays/);
  });
});
