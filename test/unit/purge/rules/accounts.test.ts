import { describe, expect, it } from "vitest";
import { accountsToDelete, uidKeyedPatterns, uidOfPath } from "../../../../functions/src/purge/rules/accounts";
import { policyCurrent } from "../../../helpers/policy";

const policy = policyCurrent();

describe("the accounts a tenant's closure deletes", () => {
  it("knows a tenant's users by its uid-keyed documents (the data map's, and the path lookups' memberships)", () => {
    expect(uidKeyedPatterns(policy)).toEqual(["tenants/{tenantId}/users/{uid}", "userDirectory/{uid}"]);
    const patterns = uidKeyedPatterns(policy);
    expect(uidOfPath("tenants/t-acme/users/u-1", patterns, "t-acme", "tenantId")).toBe("u-1");
    expect(uidOfPath("userDirectory/u-2", patterns, "t-acme", "tenantId")).toBe("u-2");
    // Another tenant's profile, an order, a message: not this tenant's user.
    expect(uidOfPath("tenants/t-other/users/u-3", patterns, "t-acme", "tenantId")).toBeNull();
    expect(uidOfPath("tenants/t-acme/orders/o-1", patterns, "t-acme", "tenantId")).toBeNull();
  });

  it("deletes every account but those of users a lookup places in another tenant (a claim names no document)", () => {
    const r = accountsToDelete(
      ["u-2", "u-1", "u-3", "u-1", "u-4"],
      [
        { uid: "u-1", tenantId: "t-acme", path: "tenants/t-acme/users/u-1" },
        { uid: "u-2", tenantId: "t-globex", path: "tenants/t-globex/users/u-2" },
        { uid: "u-2", tenantId: "t-initech", path: "tenants/t-initech/users/u-2" },
        { uid: "u-4", tenantId: "t-globex", path: null },
        { uid: "u-4", tenantId: "t-acme", path: null },
      ],
      "t-acme",
    );
    expect(r).toEqual({
      delete: ["u-1", "u-3"],
      keep: [
        { uid: "u-2", paths: ["tenants/t-globex/users/u-2", "tenants/t-initech/users/u-2"] },
        { uid: "u-4", paths: [] },
      ],
    });
  });
});
