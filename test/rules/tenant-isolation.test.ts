// Tenant isolation: the tenantId claim decides which tenant's data an app user can reach, and a uid alone
// never does. Each case pairs with a positive control, so a denial cannot come from missing data.
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { doc, getDoc } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import { clientAs, useRulesEnv, type Identity } from "../helpers/rules";

/** What u-1001 (t-acme) can read, and the matching documents of u-9001 (t-other). */
const ACME_OWNED = [
  "tenants/t-acme",
  "tenants/t-acme/users/u-1001",
  "tenants/t-acme/orders/o-1001",
  "tenants/t-acme/orders/o-1001/messages/m-001",
  "userDirectory/u-1001",
  "activity/a-001",
  "sessions/s-1001",
];
const OTHER_OWNED = [
  "tenants/t-other",
  "tenants/t-other/users/u-9001",
  "tenants/t-other/orders/o-9001",
  "tenants/t-other/orders/o-9001/messages/m-9001",
  "userDirectory/u-9001",
  "activity/a-9001",
  "sessions/s-9001",
];

const ACME_OWNER: Identity = { uid: "u-1001", claims: { tenantId: "t-acme" }, label: "u-1001@t-acme" };
const OTHER_USER: Identity = { uid: "u-9001", claims: { tenantId: "t-other" }, label: "u-9001@t-other" };

/** Callers who are not u-1001 of t-acme, though some share its uid or look like it. */
const IMPOSTORS: readonly Identity[] = [
  { uid: "u-1001", claims: { tenantId: "t-other" }, label: "uid u-1001 with tenantId t-other (uid collision)" },
  { uid: "u-1001", claims: {}, label: "uid u-1001 without a tenantId claim" },
  { uid: "u-1001", claims: { tenantId: ["t-acme"] }, label: "uid u-1001 with a non-string tenantId claim" },
  { uid: "u-1001", claims: { roles: ["compliance", "retention-admin"] }, label: "uid u-1001 as staff (roles, no tenant)" },
];

describe("tenant isolation", () => {
  const env = useRulesEnv();

  it.each(ACME_OWNED.map((p) => [p]))("u-1001@t-acme | %s | get | allow (positive control)", async (path) => {
    expect((await assertSucceeds(getDoc(doc(clientAs(env(), ACME_OWNER), path)))).exists()).toBe(true);
  });

  it.each(OTHER_OWNED.map((p) => [p]))("u-9001@t-other | %s | get | allow (positive control)", async (path) => {
    expect((await assertSucceeds(getDoc(doc(clientAs(env(), OTHER_USER), path)))).exists()).toBe(true);
  });

  it.each(OTHER_OWNED.map((p) => [p]))("u-1001@t-acme | %s | get | deny", async (path) => {
    await assertFails(getDoc(doc(clientAs(env(), ACME_OWNER), path)));
  });

  it.each(ACME_OWNED.map((p) => [p]))("u-9001@t-other | %s | get | deny", async (path) => {
    await assertFails(getDoc(doc(clientAs(env(), OTHER_USER), path)));
  });

  it.each(IMPOSTORS.flatMap((who) => ACME_OWNED.map((p) => [who.label, p, who] as const)))("%s | %s | get | deny", async (_label, path, who) => {
    await assertFails(getDoc(doc(clientAs(env(), who), path)));
  });
});
