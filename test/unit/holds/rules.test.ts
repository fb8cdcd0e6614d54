import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveJobClock } from "../../../functions/src/kernel/job";
import { assertAdminMove, assertDestroyAuthorized } from "../../../functions/src/lifecycle/rules";
import { evaluateDestroy } from "../../../functions/src/kernel/destroy-predicate";
import { DomainError } from "../../../functions/src/kernel/errors";
import { assertHoldableClass, assertReleaseAllowed, claimingHoldIds, classifyHoldTarget, PathDigest, requireHoldReason } from "../../../functions/src/holds/rules";
import { heldBy, isHeld, letGoOfWalk, walkPhaseOf } from "../../../functions/src/kernel/held";
import { ancestorDocuments } from "../../../functions/src/kernel/paths";
import { canTransition, LIFECYCLE_STATES } from "../../../functions/src/kernel/lifecycle";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { sha256Hex } from "../../../functions/src/kernel/canonical";
import { policyCurrent, policyV1 } from "../../helpers/policy";

const policy = policyV1();
const T0 = Date.parse("2026-11-30T10:00:00Z");

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return `${e.kind}/${e.reason}`;
    throw e;
  }
  return "ok";
}

describe("hold targets and reasons", () => {
  it("classifies a tenant root as a subtree and anything else as one document", () => {
    expect(classifyHoldTarget(policyCurrent(), "tenants/t-acme")).toEqual({ targetType: "subtree", tenantId: "t-acme" });
    expect(classifyHoldTarget(policyCurrent(), "tenants/t-acme/orders/o-1")).toEqual({ targetType: "document", tenantId: null });
    expect(classifyHoldTarget(policyCurrent(), "events/e-1")).toEqual({ targetType: "document", tenantId: null });
    expect(reasonOf(() => classifyHoldTarget(policyCurrent(), "tenants"))).toBe("invalid-argument/INVALID_TARGET_PATH");
    expect(reasonOf(() => classifyHoldTarget(policyCurrent(), "tenants/t/orders"))).toBe("invalid-argument/INVALID_TARGET_PATH");
  });
  it("knows the registry's reason codes and refuses others", () => {
    expect(requireHoldReason(policy, "FINANCE_RETENTION").twoPersonRelease).toBe(true);
    expect(reasonOf(() => requireHoldReason(policy, "NOPE"))).toBe("invalid-argument/UNKNOWN_REASON_CODE");
  });
  it("refuses holds on deny classes (sessions)", () => {
    expect(reasonOf(() => assertHoldableClass(policy.classById("session-30d")!))).toBe("failed-precondition/HOLD_NOT_ALLOWED_FOR_CLASS");
    expect(reasonOf(() => assertHoldableClass(policy.classById("finance-7y")!))).toBe("ok");
  });
});

describe("assertReleaseAllowed", () => {
  const hold = { state: "ACTIVE" as const, placedBy: "c-1", releaseAfterMs: T0 + DAY_MS, reasonCode: "FINANCE_RETENTION" };
  it("applies the two-person rule, releaseAfter and early release per reason code", () => {
    const finance = policy.holdReason("FINANCE_RETENTION");
    const litigation = policy.holdReason("LITIGATION");
    const fraud = policy.holdReason("FRAUD_INVESTIGATION");
    expect(reasonOf(() => assertReleaseAllowed(hold, finance, "c-1", T0 + 2 * DAY_MS))).toBe("permission-denied/TWO_PERSON_RULE");
    expect(reasonOf(() => assertReleaseAllowed(hold, finance, "c-2", T0))).toBe("failed-precondition/RELEASE_BEFORE_RELEASE_AFTER");
    expect(reasonOf(() => assertReleaseAllowed(hold, finance, "c-2", T0 + DAY_MS))).toBe("ok");
    expect(reasonOf(() => assertReleaseAllowed({ ...hold, reasonCode: "LITIGATION" }, litigation, "c-2", T0))).toBe("ok");
    expect(reasonOf(() => assertReleaseAllowed({ ...hold, reasonCode: "FRAUD_INVESTIGATION" }, fraud, "c-1", T0))).toBe("ok");
    expect(reasonOf(() => assertReleaseAllowed({ ...hold, releaseAfterMs: null }, finance, "c-2", T0))).toBe("ok");
    expect(reasonOf(() => assertReleaseAllowed({ ...hold, state: "RELEASED" }, finance, "c-2", T0 + 2 * DAY_MS))).toBe("failed-precondition/HOLD_NOT_ACTIVE");
  });
  it("treats a reason code missing from the registry as strictly as possible", () => {
    expect(reasonOf(() => assertReleaseAllowed({ ...hold, releaseAfterMs: null }, undefined, "c-1", T0))).toBe("permission-denied/TWO_PERSON_RULE");
    expect(reasonOf(() => assertReleaseAllowed(hold, undefined, "c-2", T0))).toBe("failed-precondition/RELEASE_BEFORE_RELEASE_AFTER");
  });
});

describe("PathDigest", () => {
  it("hashes the paths in order and counts them", () => {
    const d = new PathDigest();
    d.add("a/1");
    d.add("a/2");
    expect(d.count).toBe(2);
    expect(d.hex()).toBe(sha256Hex("a/1\na/2\n"));
    expect(d.hex()).toBe(d.hex());
  });
});

describe("assertAdminMove", () => {
  const base = { held: false, ownedByOpenRequest: false };
  it("reports the state machine's reason first, then LEGAL_HOLD and PURGED targets, then holds, then an open request", () => {
    // The contract: any move outside the machine fails with INVALID_LIFECYCLE_<FROM>_TO_<TO>, whatever else is true.
    expect(reasonOf(() => assertAdminMove({ ...base, from: "ACTIVE", to: "PURGED" }))).toBe("failed-precondition/INVALID_LIFECYCLE_ACTIVE_TO_PURGED");
    expect(reasonOf(() => assertAdminMove({ ...base, held: true, from: "ACTIVE", to: "PURGED" }))).toBe("failed-precondition/INVALID_LIFECYCLE_ACTIVE_TO_PURGED");
    expect(reasonOf(() => assertAdminMove({ ...base, from: "PURGE_ELIGIBLE", to: "LEGAL_HOLD" }))).toBe("failed-precondition/INVALID_LIFECYCLE_PURGE_ELIGIBLE_TO_LEGAL_HOLD");
    expect(reasonOf(() => assertAdminMove({ ...base, held: true, from: "LEGAL_HOLD", to: "PURGE_ELIGIBLE" }))).toBe(
      "failed-precondition/INVALID_LIFECYCLE_LEGAL_HOLD_TO_PURGE_ELIGIBLE",
    );
    // PURGE_ONLY_BY_ENGINE is for the one machine move into PURGED.
    expect(reasonOf(() => assertAdminMove({ ...base, from: "PURGE_ELIGIBLE", to: "PURGED" }))).toBe("failed-precondition/PURGE_ONLY_BY_ENGINE");
    expect(reasonOf(() => assertAdminMove({ ...base, held: true, from: "PURGE_ELIGIBLE", to: "PURGED" }))).toBe("failed-precondition/PURGE_ONLY_BY_ENGINE");
    expect(reasonOf(() => assertAdminMove({ ...base, from: "ACTIVE", to: "LEGAL_HOLD" }))).toBe("failed-precondition/HOLD_VIA_PLACE_RETENTION_HOLD");
    expect(reasonOf(() => assertAdminMove({ ...base, held: true, from: "LEGAL_HOLD", to: "ACTIVE" }))).toBe("failed-precondition/LEGAL_HOLD");
    expect(reasonOf(() => assertAdminMove({ ...base, from: "ACTIVE", to: "ARCHIVED" }))).toBe("failed-precondition/INVALID_LIFECYCLE_ACTIVE_TO_ARCHIVED");
    expect(reasonOf(() => assertAdminMove({ ...base, ownedByOpenRequest: true, from: "SOFT_DELETED", to: "ACTIVE" }))).toBe("failed-precondition/OPEN_DELETION_REQUEST");
    expect(reasonOf(() => assertAdminMove({ ...base, ownedByOpenRequest: true, from: "SOFT_DELETED", to: "PURGE_ELIGIBLE" }))).toBe("ok");
  });
  it("for every pair of states, held or not: the first refusal in the documented order", () => {
    for (const from of LIFECYCLE_STATES) {
      for (const to of LIFECYCLE_STATES) {
        for (const held of [false, true]) {
          const expected = !canTransition(from, to)
            ? `failed-precondition/INVALID_LIFECYCLE_${from}_TO_${to}`
            : to === "LEGAL_HOLD"
              ? "failed-precondition/HOLD_VIA_PLACE_RETENTION_HOLD"
              : to === "PURGED"
                ? "failed-precondition/PURGE_ONLY_BY_ENGINE"
                : held
                  ? "failed-precondition/LEGAL_HOLD"
                  : "ok";
          expect(reasonOf(() => assertAdminMove({ from, to, held, ownedByOpenRequest: false })), `${from} -> ${to}, held ${held}`).toBe(expected);
        }
      }
    }
  });
  it("for every pair of states: allows exactly the unheld machine moves other than into LEGAL_HOLD or PURGED", () => {
    fc.assert(
      fc.property(fc.constantFrom(...LIFECYCLE_STATES), fc.constantFrom(...LIFECYCLE_STATES), fc.boolean(), (from, to, held) => {
        const ok = reasonOf(() => assertAdminMove({ from, to, held, ownedByOpenRequest: false })) === "ok";
        expect(ok).toBe(!held && to !== "LEGAL_HOLD" && to !== "PURGED" && canTransition(from, to));
      }),
    );
  });
  it("lets PURGE_ELIGIBLE through only on AUTHORIZED_BY_POLICY, passing the predicate's reason on", () => {
    const input = (over: object) => ({
      path: "events/e-1",
      doc: { retentionClass: "event-90d", lifecycleState: "SOFT_DELETED" as const, legalHold: false, expireAtMs: T0 - 1, retainUntilMs: null },
      activeHolds: [],
      archiveVerified: false,
      workflowEligible: false,
      ...over,
    });
    expect(reasonOf(() => assertDestroyAuthorized(evaluateDestroy(input({}), policy, T0)))).toBe("ok");
    expect(reasonOf(() => assertDestroyAuthorized(evaluateDestroy(input({ activeHolds: [{ holdId: "h", targetPath: "events/e-10", reasonCode: "LITIGATION" }] }), policy, T0)))).toBe(
      "ok",
    );
    expect(reasonOf(() => assertDestroyAuthorized(evaluateDestroy(input({ activeHolds: [{ holdId: "h", targetPath: "events/e-1", reasonCode: "LITIGATION" }] }), policy, T0)))).toBe(
      "failed-precondition/LEGAL_HOLD",
    );
    expect(reasonOf(() => assertDestroyAuthorized(evaluateDestroy(input({}), policy, T0 - 2)))).toBe("failed-precondition/NOT_EXPIRED");
  });
});

describe("resolveJobClock", () => {
  it("uses the wall clock without asOf, time-travels only on the emulators", () => {
    expect(resolveJobClock(undefined, false, T0)).toEqual({ nowMs: T0, asOfMs: null });
    expect(resolveJobClock("2027-01-01T00:00:00Z", true, T0)).toEqual({ nowMs: Date.parse("2027-01-01T00:00:00Z"), asOfMs: Date.parse("2027-01-01T00:00:00Z") });
    expect(reasonOf(() => resolveJobClock("2027-01-01T00:00:00Z", false, T0))).toBe("failed-precondition/AS_OF_NOT_ALLOWED");
  });
});

describe("held: one definition for every path that destroys or moves data", () => {
  const holds = [{ holdId: "h-t", targetPath: "tenants/t", reasonCode: "LITIGATION" }];
  const plain = { legalHold: false, lifecycleState: "ACTIVE", holdIds: [] as string[] };
  it("a record on the document or any ancestor holds it, before any flag is set", () => {
    expect(heldBy({ path: "tenants/t", ...plain }, holds)).toEqual({ holdId: "h-t", reasonCode: "LITIGATION" });
    expect(heldBy({ path: "tenants/t/orders/o/messages/m", ...plain }, holds)).toEqual({ holdId: "h-t", reasonCode: "LITIGATION" });
    expect(isHeld({ path: "tenants/t2/orders/o", ...plain }, holds)).toBe(false);
    expect(isHeld({ path: "tenants/tt", ...plain }, holds)).toBe(false);
  });
  it("a hold's marks hold it too: the flag, the LEGAL_HOLD state, or hold ids", () => {
    expect(heldBy({ path: "a/1", ...plain, legalHold: true, holdIds: ["h-1"] }, [])).toEqual({ holdId: "h-1", reasonCode: "LEGAL_HOLD" });
    expect(isHeld({ path: "a/1", ...plain, lifecycleState: "LEGAL_HOLD" }, [])).toBe(true);
    expect(isHeld({ path: "a/1", ...plain, holdIds: ["h-2"] }, [])).toBe(true);
    expect(isHeld({ path: "a/1", ...plain }, [])).toBe(false);
  });
  it("names the ancestors of a path once", () => {
    expect(ancestorDocuments("a/1/b/2/c/3")).toEqual(["a/1/b/2", "a/1"]);
    expect(ancestorDocuments("a/1")).toEqual([]);
  });
});

describe("the holds that claim a document", () => {
  const order = "tenants/t-acme/orders/o-1";
  const message = `${order}/messages/m-1`;
  const h = (holdId: string, targetPath: string, letGo: { phase: "documents" | "archives"; cursor: string | null } | null = null) => ({ holdId, targetPath, reasonCode: "LITIGATION", letGo });

  it("every active hold covering it, on it or an ancestor; never one on a sibling or a name that merely shares the prefix", () => {
    const holds = [h("b", order), h("a", "tenants/t-acme"), h("c", "tenants/t-acme/orders/o-10"), h("d", message)];
    expect(claimingHoldIds(message, holds)).toEqual(["a", "b", "d"]);
    expect(claimingHoldIds(order, holds)).toEqual(["a", "b"]);
    expect(claimingHoldIds("activity/x", holds)).toEqual([]);
  });

  it("a hold being released claims only the documents its walk has not reached, in Firestore's name order", () => {
    // The walk is past the order itself but not past its messages (name order keeps a subtree together).
    expect(claimingHoldIds(message, [h("r", "tenants/t-acme", { phase: "documents", cursor: order })])).toEqual(["r"]);
    expect(claimingHoldIds(order, [h("r", "tenants/t-acme", { phase: "documents", cursor: order })])).toEqual([]);
    expect(claimingHoldIds(`${order}-x`, [h("r", "tenants/t-acme", { phase: "documents", cursor: message })])).toEqual(["r"]);
    expect(claimingHoldIds(message, [h("r", "tenants/t-acme", { phase: "documents", cursor: null })])).toEqual(["r"]);
    expect(claimingHoldIds(message, [h("r", "tenants/t-acme", { phase: "archives", cursor: null })])).toEqual([]);
  });

  it("a release's walk past the documents (archive copies, objects, done) claims no document again", () => {
    // The objects phase starts its own cursor from null: read as a documents cursor, it claimed every document
    // under the target again, and another hold's release gave them this hold's id after its walk had passed them.
    for (const phase of ["archives", "objects", "done"]) {
      const letGo = letGoOfWalk(true, { phase, cursor: null });
      expect(letGo, phase).toEqual({ phase: "archives", cursor: null });
      expect(claimingHoldIds(message, [h("r", "tenants/t-acme", letGo)]), phase).toEqual([]);
    }
    expect(letGoOfWalk(true, { phase: "documents", cursor: order })).toEqual({ phase: "documents", cursor: order });
    expect(letGoOfWalk(true, undefined)).toEqual({ phase: "documents", cursor: null });
    expect(letGoOfWalk(undefined, { phase: "objects", cursor: null })).toBeNull();
    // One reader of the stored phase, for the walk itself and for what a release has let go.
    expect(["documents", "archives", "objects", "done", "bogus", undefined].map(walkPhaseOf)).toEqual(["documents", "archives", "objects", "done", "documents", "documents"]);
  });

  it("an archive copy is claimed by a hold on it or on what it copies, never by one being released", () => {
    const copy = "archives/arc-1";
    expect(claimingHoldIds(copy, [h("s", order), h("x", "tenants/t-other"), h("c", copy)], message)).toEqual(["c", "s"]);
    expect(claimingHoldIds(copy, [h("s", order, { phase: "documents", cursor: null })], message)).toEqual([]);
    expect(claimingHoldIds(copy, [h("s", order)], null)).toEqual([]);
  });
});
