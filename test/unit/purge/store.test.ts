import { Timestamp } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import { GOVERNED_FIELDS } from "../../../functions/src/platform/governed-doc";
import { factsOfData } from "../../../functions/src/purge/store";

/** The purge's transactions read documents through the governed field mask; the mask must not change a decision. */
describe("purge facts under the field mask", () => {
  const full = {
    retentionClass: "user-delete",
    lifecycleState: "PURGE_ELIGIBLE",
    tenantId: "t-acme",
    policyVersion: "v1",
    createdAt: Timestamp.fromMillis(1_700_000_000_000),
    expireAt: Timestamp.fromMillis(1_800_000_000_000),
    retainUntil: Timestamp.fromMillis(1_900_000_000_000),
    legalHold: true,
    holdIds: ["h-1", "h-2"],
    purgeDecision: { unitKey: "req-1", round: 2, reason: "AUTHORIZED_BY_POLICY" },
    displayName: "Ada Lovelace",
    text: "business content the purge never needs",
  };
  const masked = Object.fromEntries(Object.entries(full).filter(([k]) => (GOVERNED_FIELDS as readonly string[]).includes(k)));

  it("gives the same facts from the masked read as from the whole document", () => {
    expect(factsOfData("tenants/t-acme/users/u-1", masked)).toEqual(factsOfData("tenants/t-acme/users/u-1", full));
    expect(masked).not.toHaveProperty("displayName");
  });

  it("still tells an existing document with none of the fields from a missing one", () => {
    expect(factsOfData("x/1", {}).exists).toBe(true);
    expect(factsOfData("x/1", undefined).exists).toBe(false);
  });
});
