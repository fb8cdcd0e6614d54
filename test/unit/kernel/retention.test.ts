import { describe, expect, it } from "vitest";
import type { GovernedFields } from "../../../functions/src/kernel/governed";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { applyHold, computeExpireAt, computeRetainUntil, isExpired, releaseHold, settleHolds } from "../../../functions/src/kernel/retention";
import { policyV1 } from "../../helpers/policy";

const policy = policyV1();
const cls = (id: string) => {
  const c = policy.classById(id);
  if (!c) throw new Error(id);
  return c;
};
const T0 = Date.parse("2026-10-01T00:00:00Z");

function session(over: Partial<GovernedFields> = {}): GovernedFields {
  return {
    retentionClass: "event-90d",
    lifecycleState: "ACTIVE",
    tenantId: "t-acme",
    policyVersion: "v1",
    createdAtMs: T0,
    expireAtMs: T0 + 90 * DAY_MS,
    retainUntilMs: T0 + 90 * DAY_MS,
    legalHold: false,
    holdIds: [],
    preHold: null,
    ...over,
  };
}

describe("retention computation", () => {
  it("TTL classes get anchor + duration; workflow classes carry no TTL value", () => {
    expect(computeExpireAt(cls("session-30d"), T0)).toBe(T0 + 30 * DAY_MS);
    expect(computeExpireAt(cls("event-90d"), T0)).toBe(T0 + 90 * DAY_MS);
    expect(computeExpireAt(cls("user-delete"), T0)).toBeNull();
    expect(computeExpireAt(cls("audit-7y"), T0)).toBeNull();
    expect(computeRetainUntil(cls("audit-7y"), T0)).toBe(T0 + 2557 * DAY_MS);
    expect(computeRetainUntil(cls("user-delete"), T0)).toBeNull();
  });

  it("the nested-data rule copies the parent's expiry, and nothing when the parent has none", () => {
    const child = cls("session-child-inherit");
    expect(computeExpireAt(child, T0, { parentExpireAtMs: T0 + 5 })).toBe(T0 + 5);
    expect(computeExpireAt(child, T0, { parentExpireAtMs: null })).toBeNull();
  });

  it("a held document carries no TTL value, whatever its class", () => {
    expect(computeExpireAt(cls("session-30d"), T0, { legalHold: true })).toBeNull();
    expect(computeExpireAt(cls("session-child-inherit"), T0, { legalHold: true, parentExpireAtMs: T0 })).toBeNull();
  });

  it("isExpired looks at the TTL value and the business end", () => {
    expect(isExpired({ expireAtMs: T0, retainUntilMs: null }, T0)).toBe(true);
    expect(isExpired({ expireAtMs: T0 + 1, retainUntilMs: null }, T0)).toBe(false);
    expect(isExpired({ expireAtMs: null, retainUntilMs: T0 - 1 }, T0)).toBe(true);
    expect(isExpired({ expireAtMs: null, retainUntilMs: null }, T0)).toBe(false);
  });
});

describe("retention around holds", () => {
  it("placing a hold clears the TTL value, keeps it aside, and moves to LEGAL_HOLD", () => {
    const held = applyHold(session(), "h1");
    expect(held).toMatchObject({ legalHold: true, holdIds: ["h1"], expireAtMs: null, lifecycleState: "LEGAL_HOLD" });
    expect(held.preHold).toEqual({ lifecycleState: "ACTIVE", expireAtMs: T0 + 90 * DAY_MS });
  });

  it("a second hold adds its id and keeps the first pre-hold state", () => {
    const twice = applyHold(applyHold(session({ lifecycleState: "SOFT_DELETED" }), "h1"), "h2");
    expect(twice.holdIds).toEqual(["h1", "h2"]);
    expect(twice.preHold?.lifecycleState).toBe("SOFT_DELETED");
    expect(applyHold(twice, "h2").holdIds).toEqual(["h1", "h2"]);
  });

  it("a PURGE_ELIGIBLE document keeps its state (no such move) but is flagged and loses its TTL", () => {
    const held = applyHold(session({ lifecycleState: "PURGE_ELIGIBLE" }), "h1");
    expect(held.lifecycleState).toBe("PURGE_ELIGIBLE");
    expect(held.legalHold).toBe(true);
    expect(held.expireAtMs).toBeNull();
  });

  it("releasing one of two holds keeps the document held", () => {
    const released = releaseHold(applyHold(applyHold(session(), "h1"), "h2"), "h1", cls("event-90d"));
    expect(released).toMatchObject({ legalHold: true, holdIds: ["h2"], expireAtMs: null, lifecycleState: "LEGAL_HOLD" });
  });

  it("releasing the last hold restores the pre-hold state and recomputes TTL from policy and the original anchor", () => {
    const released = releaseHold(applyHold(session({ lifecycleState: "SOFT_DELETED" }), "h1"), "h1", cls("event-90d"));
    expect(released).toMatchObject({ legalHold: false, holdIds: [], preHold: null, lifecycleState: "SOFT_DELETED", expireAtMs: T0 + 90 * DAY_MS });
  });

  it("a hold neither extends nor shortens retention: released after expiry, the document is expired at once", () => {
    const released = releaseHold(applyHold(session(), "h1"), "h1", cls("event-90d"));
    expect(isExpired(released, T0 + 200 * DAY_MS)).toBe(true);
    expect(isExpired(released, T0 + 10 * DAY_MS)).toBe(false);
  });

  it("released children of a TTL parent take the parent's current expiry", () => {
    const token = session({ retentionClass: "session-child-inherit", expireAtMs: T0 + 1 });
    const released = releaseHold(applyHold(token, "h1"), "h1", cls("session-child-inherit"), { parentExpireAtMs: T0 + 99 });
    expect(released.expireAtMs).toBe(T0 + 99);
  });
});

describe("settling a document's holds against the holds that claim it", () => {
  it("any claim holds it by exactly those ids, with no TTL value, keeping the first pre-hold state", () => {
    const held = settleHolds(session(), ["h2", "h1", "h2"], cls("event-90d"));
    expect(held).toMatchObject({ legalHold: true, holdIds: ["h1", "h2"], expireAtMs: null, lifecycleState: "LEGAL_HOLD", preHold: { lifecycleState: "ACTIVE", expireAtMs: T0 + 90 * DAY_MS } });
    // An id no active hold answers to goes; another claim keeps it held and its pre-hold state as it was.
    const moved = settleHolds({ ...held, holdIds: ["h-gone"] }, ["h3"], cls("event-90d"));
    expect(moved).toMatchObject({ legalHold: true, holdIds: ["h3"], expireAtMs: null, preHold: held.preHold });
  });

  it("no claim on a held document: retention back from policy; no claim and no marks: unchanged", () => {
    const held = settleHolds(session(), ["h1"], cls("event-90d"));
    expect(settleHolds(held, [], cls("event-90d"))).toEqual(session());
    // A flag with no id at all (no release could name it) is settled too.
    expect(settleHolds({ ...held, holdIds: [] }, [], cls("event-90d"))).toEqual(session());
    const plain = session({ expireAtMs: T0 + 5 });
    expect(settleHolds(plain, [], cls("event-90d"))).toBe(plain);
  });
});
