/**
 * Access exports, pure (functions/src/access/rules.ts): parts that reassemble every file byte for byte, never split a
 * line or a character needlessly, the manifest first; the subject's cooldown and staff without one; a failed build that
 * blocks no one; no new export while an erasure is open; who may fetch.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { assertMayFetch, BUILD_GIVE_UP_MS, buildGivesUp, exportDecision, failureCode, isLiveExport, partsOf, type AccessExport } from "../../../functions/src/access/rules";
import { DomainError } from "../../../functions/src/kernel/errors";

const HOUR = 3_600_000;
const ex = (over: Partial<AccessExport>): AccessExport => ({
  exportId: "x1",
  uid: "u-1",
  scopes: [""],
  state: "READY",
  source: "subject",
  requestedBy: "u-1",
  requestedAtMs: 0,
  readyAtMs: 1,
  expireAtMs: 100 * HOUR,
  parts: 1,
  downloads: 0,
  ...over,
});
const reasonOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return `${err.kind}/${err.reason}`;
    throw err;
  }
  return "none";
};

describe("access export parts", () => {
  it("reassemble every file exactly, the manifest first, text cut on line ends", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("a.jsonl", "b.jsonl", "objects/000001.png", "manifest.json"), fc.array(fc.string({ unit: "grapheme", maxLength: 30 }), { maxLength: 40 })), { maxLength: 4 }), fc.integer({ min: 8, max: 64 }), (raw, size) => {
        const files = [...new Map(raw.map(([file, lines]) => [file, new TextEncoder().encode(lines.map((l) => `${l.replace(/\n/g, " ")}\n`).join(""))])).entries()].map(([file, bytes]) => ({ file, bytes }));
        const parts = partsOf(files, size);
        if (files.some((f) => f.file === "manifest.json")) expect(parts[0]!.file).toBe("manifest.json");
        for (const f of files) {
          const mine = parts.filter((p) => p.file === f.file);
          expect(mine.map((p) => p.chunk)).toEqual(mine.map((_, i) => i));
          const joined = Buffer.concat(mine.map((p) => Buffer.from(f.bytes.subarray(p.start, p.end))));
          expect(joined.equals(Buffer.from(f.bytes))).toBe(true);
          for (const p of mine) {
            if (p.encoding === "utf8") expect(() => new TextDecoder("utf-8", { fatal: true }).decode(f.bytes.subarray(p.start, p.end))).not.toThrow();
          }
        }
      }),
      { numRuns: 200, seed: 20261202 },
    );
    const parts = partsOf([{ file: "a.jsonl", bytes: new TextEncoder().encode("12345\n67890\n") }], 8);
    expect(parts.map((p) => [p.start, p.end])).toEqual([
      [0, 6],
      [6, 12],
    ]);
    expect(partsOf([{ file: "empty.jsonl", bytes: new Uint8Array() }])).toEqual([{ file: "empty.jsonl", chunk: 0, encoding: "utf8", start: 0, end: 0 }]);
    expect(partsOf([{ file: "objects/000001.png", bytes: new Uint8Array(10) }], 4).map((p) => p.encoding)).toEqual(["base64", "base64", "base64"]);
  });
});

describe("asking for an export", () => {
  it("returns one being built or still downloadable; a subject waits out the cooldown, staff do not", () => {
    const now = 50 * HOUR;
    expect(exportDecision([ex({ state: "RUNNING", requestedAtMs: now - HOUR })], "subject", 24 * HOUR, now)).toMatchObject({ kind: "existing" });
    expect(exportDecision([ex({ state: "READY", expireAtMs: now + 1 })], "subject", 24 * HOUR, now)).toMatchObject({ kind: "existing" });
    expect(reasonOf(() => exportDecision([ex({ state: "READY", expireAtMs: now, requestedAtMs: now - HOUR })], "subject", 24 * HOUR, now))).toBe("resource-exhausted/EXPORT_COOLDOWN");
    expect(exportDecision([ex({ state: "READY", expireAtMs: now, requestedAtMs: now - HOUR })], "staff", 24 * HOUR, now)).toEqual({ kind: "create" });
    expect(exportDecision([ex({ state: "FAILED", requestedAtMs: now - 25 * HOUR })], "subject", 24 * HOUR, now)).toEqual({ kind: "create" });
    expect(exportDecision([ex({ state: "FAILED", requestedAtMs: now - HOUR, source: "staff" })], "subject", 24 * HOUR, now)).toEqual({ kind: "create" });
    expect(exportDecision([], "subject", 0, now)).toEqual({ kind: "create" });
  });

  it("a failed build blocks no one: FAILED is never live and costs no cooldown; a build lost for longer than the queue retries is not live either", () => {
    const now = 50 * HOUR;
    // Asked an hour ago by the subject, failed: a new ask is made at once, by the subject too.
    expect(exportDecision([ex({ state: "FAILED", requestedAtMs: now - HOUR, expireAtMs: now + 100 * HOUR })], "subject", 24 * HOUR, now)).toEqual({ kind: "create" });
    // A build that never ended (its task lost) counts as live only up to BUILD_GIVE_UP_MS after the ask.
    expect(isLiveExport(ex({ state: "PENDING", requestedAtMs: now - BUILD_GIVE_UP_MS + 1 }), now)).toBe(true);
    expect(isLiveExport(ex({ state: "PENDING", requestedAtMs: now - BUILD_GIVE_UP_MS }), now)).toBe(false);
    expect(isLiveExport(ex({ state: "FAILED", expireAtMs: now + HOUR }), now)).toBe(false);
    // ... after which only the subject's cooldown applies, counted from that ask.
    expect(reasonOf(() => exportDecision([ex({ state: "RUNNING", requestedAtMs: now - 7 * HOUR })], "subject", 24 * HOUR, now))).toBe("resource-exhausted/EXPORT_COOLDOWN");
    expect(exportDecision([ex({ state: "RUNNING", requestedAtMs: now - 7 * HOUR })], "subject", 6 * HOUR, now)).toEqual({ kind: "create" });
  });

  it("no new export while an erasure of the subject is open, for the subject or staff; one made before is still theirs", () => {
    const now = 50 * HOUR;
    expect(reasonOf(() => exportDecision([], "subject", 24 * HOUR, now, true))).toBe("failed-precondition/ERASURE_OPEN");
    expect(reasonOf(() => exportDecision([ex({ state: "FAILED", requestedAtMs: now - HOUR })], "staff", 24 * HOUR, now, true))).toBe("failed-precondition/ERASURE_OPEN");
    expect(exportDecision([ex({ state: "READY", expireAtMs: now + HOUR })], "subject", 24 * HOUR, now, true)).toMatchObject({ kind: "existing" });
  });

  it("a build gives up on the queue's last attempt, or at once when no retry can help; its evidence names a code, never a message", () => {
    const transient = Object.assign(new Error("ENOENT: no such file or directory, mkdtemp '/secret/path'"), { code: "ENOENT" });
    const refused = new DomainError("failed-precondition", "TOO_MANY_SCOPES", "too many");
    expect(buildGivesUp(transient, false)).toBe(false);
    expect(buildGivesUp(transient, true)).toBe(true);
    expect(buildGivesUp(refused, false)).toBe(true);
    expect(failureCode(transient)).toBe("ENOENT");
    expect(failureCode(refused)).toBe("TOO_MANY_SCOPES");
    expect(failureCode(new TypeError("u-1's name"))).toBe("TypeError");
    expect(failureCode("odd")).toBe("UNKNOWN");
  });

  it("only the subject fetches a ready export before it expires", () => {
    expect(reasonOf(() => assertMayFetch(null, "u-1", 0))).toBe("not-found/EXPORT_NOT_FOUND");
    expect(reasonOf(() => assertMayFetch(ex({}), "u-2", 0))).toBe("permission-denied/NOT_OWNER");
    expect(reasonOf(() => assertMayFetch(ex({ state: "RUNNING" }), "u-1", 0))).toBe("failed-precondition/EXPORT_NOT_READY");
    expect(reasonOf(() => assertMayFetch(ex({}), "u-1", 100 * HOUR))).toBe("failed-precondition/EXPORT_EXPIRED");
    expect(assertMayFetch(ex({}), "u-1", 99 * HOUR).exportId).toBe("x1");
  });
});
