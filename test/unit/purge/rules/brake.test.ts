import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chainEntry, evidenceKey, keyRing } from "../../../../functions/src/evidence/rules";
import { admitUnits, brakeDecisionEvidence, brakeRunKey, evaluateBrake, unitBrakeKey, verifyDecisionBinding } from "../../../../functions/src/purge/rules/brake";

const limits = { brakeMaxDocuments: 100, brakeMaxShareOfClass: 0.5, brakeMinClassSize: 50 };

describe("evaluateBrake", () => {
  it("passes a run within both limits", () => {
    expect(evaluateBrake({ "event-90d": 20, "user-delete": 5 }, { "event-90d": 60, "user-delete": 1000 }, limits)).toEqual({ tripped: false, total: 25, violations: [] });
  });

  it("trips on the total count, whatever the shares", () => {
    const r = evaluateBrake({ "user-delete": 101 }, { "user-delete": 100_000 }, limits);
    expect(r.tripped).toBe(true);
    expect(r.violations).toEqual([{ kind: "TOTAL", retentionClass: null, count: 101, classSize: null, limit: 100 }]);
  });

  it("trips on the share of a class large enough to count, and only above the share", () => {
    expect(evaluateBrake({ "event-90d": 31 }, { "event-90d": 60 }, limits).violations).toEqual([
      { kind: "CLASS_SHARE", retentionClass: "event-90d", count: 31, classSize: 60, limit: 0.5 },
    ]);
    expect(evaluateBrake({ "event-90d": 30 }, { "event-90d": 60 }, limits).tripped).toBe(false);
  });

  it("exempts small classes from the share rule", () => {
    expect(evaluateBrake({ "session-30d": 49 }, { "session-30d": 49 }, limits).tripped).toBe(false);
    // An unknown size counts as at least what is deleted: 60 of "0" is 60 of 60.
    expect(evaluateBrake({ "session-30d": 60 }, {}, limits).tripped).toBe(true);
  });
});

describe("brakeRunKey", () => {
  it("names exactly one deletion set, independent of unit order", () => {
    const a = { unitKey: "req-1", manifestHash: "h1" };
    const b = { unitKey: "sweep-events", manifestHash: "h2" };
    expect(brakeRunKey([a, b])).toBe(brakeRunKey([b, a]));
    expect(brakeRunKey([a, b])).not.toBe(brakeRunKey([a, { ...b, manifestHash: "h3" }]));
    expect(brakeRunKey([a, b])).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("admitUnits: a tripped brake holds back only what tripped it", () => {
  const sizes = { "event-90d": 1000, "user-delete": 1000 };
  const unit = (unitKey: string, deleteByClass: Record<string, number>, dueMs: number) => ({ unitKey, manifestHash: `h-${unitKey}`, deleteByClass, dueMs });

  it("a unit that trips on its own waits under its own key; unrelated units run", () => {
    const big = unit("sweep-events", { "event-90d": 600 }, Number.MAX_SAFE_INTEGER);
    const erasure = unit("req-1", { "user-delete": 5 }, 10);
    const verdicts = admitUnits([big, erasure], sizes, limits);
    expect(verdicts).toEqual([
      { unitKey: "req-1", verdict: "ADMIT" },
      { unitKey: "sweep-events", verdict: "WAIT", runKey: unitBrakeKey(big), result: expect.objectContaining({ tripped: true }) as unknown },
    ]);
  });

  it("the key a waiting set binds to stays the same whatever else the run holds", () => {
    const big = unit("sweep-events", { "event-90d": 600 }, Number.MAX_SAFE_INTEGER);
    const keyAlone = admitUnits([big], sizes, limits).find((v) => v.verdict === "WAIT");
    const keyWithOthers = admitUnits([big, unit("req-1", { "user-delete": 5 }, 10), unit("req-2", { "user-delete": 7 }, 20)], sizes, limits).find((v) => v.verdict === "WAIT");
    expect(keyAlone && "runKey" in keyAlone ? keyAlone.runKey : null).toBe(keyWithOthers && "runKey" in keyWithOthers ? keyWithOthers.runKey : "");
    expect(unitBrakeKey(big)).toBe(brakeRunKey([big]));
    expect(unitBrakeKey({ ...big, manifestHash: "other" })).not.toBe(unitBrakeKey(big));
  });

  it("admits oldest due first until the run's limits would trip, then defers the rest, in a deterministic order", () => {
    // 40 + 40 + 30 > 100 total: the third in due order is the first that does not fit.
    const units = [unit("req-c", { "user-delete": 30 }, 300), unit("req-a", { "user-delete": 40 }, 100), unit("req-b", { "user-delete": 40 }, 200), unit("req-d", { "user-delete": 1 }, 400)];
    const verdicts = admitUnits(units, { "user-delete": 100_000 }, limits);
    expect(verdicts.map((v) => [v.unitKey, v.verdict])).toEqual([
      ["req-a", "ADMIT"],
      ["req-b", "ADMIT"],
      ["req-c", "DEFER"],
      // It would fit, but no younger unit overtakes an older one.
      ["req-d", "DEFER"],
    ]);
    expect(admitUnits([...units].reverse(), { "user-delete": 100_000 }, limits)).toEqual(verdicts);
    // Equal due dates: unit key decides.
    expect(admitUnits([unit("b", {}, 1), unit("a", {}, 1)], sizes, limits).map((v) => v.unitKey)).toEqual(["a", "b"]);
  });

  it("for any mix of units: admitted units stay within the limits together, and every waiting unit trips alone", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ unitKey: fc.string({ minLength: 1, maxLength: 6 }), n: fc.integer({ min: 0, max: 150 }), cls: fc.constantFrom("event-90d", "user-delete"), dueMs: fc.integer({ min: 0, max: 50 }) }), { maxLength: 12 }),
        (raw) => {
          const units = [...new Map(raw.map((r) => [r.unitKey, unit(r.unitKey, { [r.cls]: r.n }, r.dueMs)])).values()];
          const verdicts = admitUnits(units, { "event-90d": 120, "user-delete": 400 }, limits);
          expect(verdicts).toHaveLength(units.length);
          const counts: Record<string, number> = {};
          for (const v of verdicts) {
            const u = units.find((x) => x.unitKey === v.unitKey)!;
            if (v.verdict === "ADMIT") for (const [c, n] of Object.entries(u.deleteByClass)) counts[c] = (counts[c] ?? 0) + n;
            if (v.verdict === "WAIT") expect(evaluateBrake(u.deleteByClass, { "event-90d": 120, "user-delete": 400 }, limits).tripped).toBe(true);
            if (v.verdict !== "WAIT") expect(evaluateBrake(u.deleteByClass, { "event-90d": 120, "user-delete": 400 }, limits).tripped).toBe(false);
          }
          expect(evaluateBrake(counts, { "event-90d": 120, "user-delete": 400 }, limits).tripped).toBe(false);
        },
      ),
    );
  });
});

describe("verifyDecisionBinding: only a decision the evidence ledger proves", () => {
  const KEY = evidenceKey("k".repeat(40));
  const keys = keyRing([KEY.secret]);
  const runKey = "0123456789abcdef0123456789abcdef";
  const body = brakeDecisionEvidence({ runKey, decision: "APPROVE", approver: "r-3001", expiresAtMs: 5_000, noteHash: "n", units: 1, wouldDelete: 40, policyVersion: "v1", atMs: 1_000 });
  const first = chainEntry("s0003", null, { action: "X", actor: { type: "system", id: "t" }, decision: { reason: "X" }, policyVersion: "v1", atMs: 1 }, KEY);
  const entry = chainEntry("s0003", first, body, KEY);
  const claim = { runKey, decision: "APPROVE" as const, approver: "r-3001", expiresAtMs: 5_000, evidenceShard: "s0003", evidenceSeq: entry.seq, evidenceHash: entry.hash };
  const prev = { seq: first.seq, hash: first.hash };

  it("accepts the entry approvePurgeRun wrote", () => {
    expect(verifyDecisionBinding(claim, entry, prev, keys)).toBeNull();
  });

  it("refuses a hand-written record, an edited record and an edited or stray entry", () => {
    expect(verifyDecisionBinding(claim, null, prev, keys)).toBe("NO_EVIDENCE");
    expect(verifyDecisionBinding({ ...claim, evidenceSeq: 7 }, entry, prev, keys)).toBe("NO_EVIDENCE");
    expect(verifyDecisionBinding({ ...claim, evidenceShard: "s0004" }, entry, prev, keys)).toBe("NO_EVIDENCE");
    expect(verifyDecisionBinding({ ...claim, evidenceShard: null }, entry, prev, keys)).toBe("NO_EVIDENCE");
    expect(verifyDecisionBinding({ ...claim, evidenceHash: "f".repeat(64) }, entry, prev, keys)).toBe("EVIDENCE_EDITED");
    expect(verifyDecisionBinding(claim, { ...entry, detail: { ...entry.detail, expiresAtMs: 9_999 } }, prev, keys)).toBe("EVIDENCE_EDITED");
    expect(verifyDecisionBinding(claim, entry, { seq: 1, hash: "0".repeat(64) }, keys)).toBe("EVIDENCE_NOT_CHAINED");
    expect(verifyDecisionBinding(claim, entry, null, keys)).toBe("EVIDENCE_NOT_CHAINED");
    expect(verifyDecisionBinding({ ...claim, runKey: "f".repeat(32) }, entry, prev, keys)).toBe("WRONG_RUN_KEY");
    expect(verifyDecisionBinding({ ...claim, decision: "DENY" }, entry, prev, keys)).toBe("WRONG_DECISION");
    expect(verifyDecisionBinding({ ...claim, approver: "c-2001" }, entry, prev, keys)).toBe("WRONG_APPROVER");
    expect(verifyDecisionBinding({ ...claim, expiresAtMs: 99_999 }, entry, prev, keys)).toBe("WRONG_EXPIRY");
    // A well-chained entry that is not a decision (any other evidence) proves nothing.
    const other = chainEntry("s0003", first, { ...body, action: "PURGE_BRAKE_TRIPPED" }, KEY);
    expect(verifyDecisionBinding({ ...claim, evidenceHash: other.hash }, other, prev, keys)).toBe("NOT_A_DECISION");
    const bySystem = chainEntry("s0003", first, { ...body, actor: { type: "system", id: "r-3001" } }, KEY);
    expect(verifyDecisionBinding({ ...claim, evidenceHash: bySystem.hash }, bySystem, prev, keys)).toBe("NOT_A_DECISION");
  });

  it("refuses a decision written with database access alone: chained and hashed right, but not signed with the evidence key", () => {
    const forged = chainEntry("s0003", first, body, evidenceKey("x".repeat(40)));
    expect(verifyDecisionBinding({ ...claim, evidenceHash: forged.hash }, forged, prev, keys)).toBe("EVIDENCE_NOT_SIGNED");
    const { mac, keyId, ...unsigned } = entry;
    void mac;
    void keyId;
    expect(verifyDecisionBinding(claim, unsigned, prev, keys)).toBe("EVIDENCE_NOT_SIGNED");
    expect(verifyDecisionBinding(claim, entry, prev, null)).toBe("EVIDENCE_NOT_SIGNED");
  });
});
