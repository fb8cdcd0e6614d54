import { describe, expect, it } from "vitest";
import { DomainError } from "../../../functions/src/kernel/errors";
import { assertTransition, canTransition, LIFECYCLE_STATES, type LifecycleState } from "../../../functions/src/kernel/lifecycle";

// The machine from docs/OVERVIEW.md, written out independently of the implementation's table.
const EXPECTED: Record<LifecycleState, LifecycleState[]> = {
  ACTIVE: ["SOFT_DELETED", "LEGAL_HOLD"],
  SOFT_DELETED: ["ACTIVE", "ARCHIVED", "LEGAL_HOLD", "PURGE_ELIGIBLE"],
  ARCHIVED: ["LEGAL_HOLD", "PURGE_ELIGIBLE"],
  LEGAL_HOLD: ["ACTIVE", "SOFT_DELETED", "ARCHIVED"],
  PURGE_ELIGIBLE: ["PURGED"],
  PURGED: [],
};

const pairs = LIFECYCLE_STATES.flatMap((from) => LIFECYCLE_STATES.map((to) => ({ from, to, allowed: EXPECTED[from].includes(to) })));

describe("lifecycle state machine", () => {
  it("covers all 36 pairs", () => {
    expect(pairs).toHaveLength(36);
    expect(pairs.filter((p) => p.allowed)).toHaveLength(12);
  });

  it.each(pairs)("$from -> $to allowed=$allowed", ({ from, to, allowed }) => {
    expect(canTransition(from, to)).toBe(allowed);
    if (allowed) {
      expect(() => assertTransition(from, to)).not.toThrow();
    } else {
      let caught: unknown;
      try {
        assertTransition(from, to);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(DomainError);
      expect((caught as DomainError).reason).toBe(`INVALID_LIFECYCLE_${from}_TO_${to}`);
      expect((caught as DomainError).kind).toBe("failed-precondition");
    }
  });
});
