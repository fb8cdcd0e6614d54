// Clients read only business-visible data: ACTIVE and not past expireAt (isVisible in firestore.rules, which
// mirrors functions/src/kernel/visibility.ts). Each reader below can read its document while it is ACTIVE
// and unexpired, and cannot once it is soft-deleted, held, archived, purge-eligible or expired, even though
// the document still exists.
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { Timestamp, deleteField, doc, getDoc, type DocumentData } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import { isBusinessVisible } from "../../functions/src/kernel/visibility";
import { IDENTITIES, clientAs, readRaw, seed, useRulesEnv, type Role } from "../helpers/rules";

const MINUTE_MS = 60_000;
const at = (offsetMs: number) => Timestamp.fromMillis(Date.now() + offsetMs);

/** Every readable collection, with the one caller entitled to read the document. */
const READABLE: readonly { collection: string; path: string; reader: Role }[] = [
  { collection: "tenants", path: "tenants/t-acme", reader: "owner" },
  { collection: "tenants/{t}/users", path: "tenants/t-acme/users/u-1001", reader: "owner" },
  { collection: "tenants/{t}/orders", path: "tenants/t-acme/orders/o-1001", reader: "owner" },
  { collection: "tenants/{t}/orders/{o}/messages", path: "tenants/t-acme/orders/o-1001/messages/m-001", reader: "owner" },
  { collection: "userDirectory", path: "userDirectory/u-1001", reader: "owner" },
  { collection: "activity", path: "activity/a-001", reader: "owner" },
  { collection: "sessions", path: "sessions/s-1001", reader: "owner" },
  { collection: "auditRecords", path: "auditRecords/ar-001", reader: "compliance" },
];

/** Governed states and expiry, as the server would leave the retention fields. */
const HIDDEN: readonly { state: string; fields: () => DocumentData }[] = [
  {
    state: "SOFT_DELETED",
    fields: () => ({ lifecycleState: "SOFT_DELETED", softDeletedAt: at(-MINUTE_MS), preDeleteState: "ACTIVE", deletionRequestId: "dr-1001" }),
  },
  {
    state: "LEGAL_HOLD",
    fields: () => ({ lifecycleState: "LEGAL_HOLD", legalHold: true, holdIds: ["h-001"], expireAt: deleteField(), preHold: { lifecycleState: "ACTIVE", expireAt: null } }),
  },
  { state: "ARCHIVED", fields: () => ({ lifecycleState: "ARCHIVED", softDeletedAt: at(-MINUTE_MS), preDeleteState: "ACTIVE" }) },
  {
    state: "PURGE_ELIGIBLE",
    fields: () => ({ lifecycleState: "PURGE_ELIGIBLE", purgeDecision: { reason: "AUTHORIZED_BY_POLICY", policyVersion: "v1" } }),
  },
  { state: "ACTIVE but expired a day ago", fields: () => ({ lifecycleState: "ACTIVE", expireAt: at(-24 * 60 * MINUTE_MS) }) },
  { state: "ACTIVE but expired a second ago", fields: () => ({ lifecycleState: "ACTIVE", expireAt: at(-1000) }) },
  { state: "without lifecycleState", fields: () => ({ lifecycleState: deleteField() }) },
  { state: "with an unknown lifecycleState", fields: () => ({ lifecycleState: "active" }) },
];

describe("business visibility of governed documents", () => {
  const env = useRulesEnv();

  it.each(READABLE.map((r) => [`${IDENTITIES[r.reader].label} | ${r.collection} | get ACTIVE, unexpired | allow`, r] as const))(
    "%s",
    async (_name, r) => {
      const raw = await readRaw(env(), r.path);
      const expireAt = raw?.expireAt as Timestamp | undefined;
      expect(isBusinessVisible({ lifecycleState: raw?.lifecycleState as string, expireAtMs: expireAt?.toMillis() ?? null }, Date.now())).toBe(true);
      const snap = await assertSucceeds(getDoc(doc(clientAs(env(), r.reader), r.path)));
      expect(snap.exists()).toBe(true);
    },
  );

  it.each(READABLE.map((r) => [`${IDENTITIES[r.reader].label} | ${r.collection} | get ACTIVE, expiring in a minute | allow`, r] as const))(
    "%s",
    async (_name, r) => {
      await seed(env(), [{ path: r.path, data: { expireAt: at(MINUTE_MS) } }], { merge: true });
      await assertSucceeds(getDoc(doc(clientAs(env(), r.reader), r.path)));
    },
  );

  const hiddenCases = READABLE.flatMap((r) =>
    HIDDEN.map((h) => [`${IDENTITIES[r.reader].label} | ${r.collection} | get ${h.state} | deny`, r, h] as const),
  );
  it.each(hiddenCases)("%s", async (_name, r, h) => {
    await seed(env(), [{ path: r.path, data: h.fields() }], { merge: true });
    // The document is still there (the sweeper or the purge has not run): only the rules hide it.
    expect(await readRaw(env(), r.path)).toBeDefined();
    await assertFails(getDoc(doc(clientAs(env(), r.reader), r.path)));
  });

  it("owner | sessions/s-1001 | get a session whose expireAt is missing | deny (TTL classes must carry it)", async () => {
    await seed(env(), [{ path: "sessions/s-1001", data: { expireAt: deleteField() } }], { merge: true });
    await assertFails(getDoc(doc(clientAs(env(), "owner"), "sessions/s-1001")));
  });
});

describe("messages are read through their author or their order's customer", () => {
  const env = useRulesEnv();
  const ORDER = "tenants/t-acme/orders/o-1001";
  const SUPPORT_REPLY = `${ORDER}/messages/m-002`;

  it("owner (the customer) | m-002 written by support | get | allow", async () => {
    await assertSucceeds(getDoc(doc(clientAs(env(), "owner"), SUPPORT_REPLY)));
  });

  it("peer u-1002 | own message on someone else's order | get | allow", async () => {
    await seed(env(), [{ path: `${ORDER}/messages/m-003`, data: { ...(await readRaw(env(), SUPPORT_REPLY)), authorId: "u-1002" } }]);
    await assertSucceeds(getDoc(doc(clientAs(env(), "peer"), `${ORDER}/messages/m-003`)));
  });

  it("owner (the customer) | m-002 under a SOFT_DELETED order | get | deny", async () => {
    await seed(env(), [{ path: ORDER, data: { lifecycleState: "SOFT_DELETED" } }], { merge: true });
    await assertFails(getDoc(doc(clientAs(env(), "owner"), SUPPORT_REPLY)));
  });

  it("owner (the author) | m-001 under a SOFT_DELETED order, itself ACTIVE | get | allow", async () => {
    await seed(env(), [{ path: ORDER, data: { lifecycleState: "SOFT_DELETED" } }], { merge: true });
    await assertSucceeds(getDoc(doc(clientAs(env(), "owner"), `${ORDER}/messages/m-001`)));
  });

  it("owner (the customer) | m-002 after the customer was changed on the order | get | deny", async () => {
    await seed(env(), [{ path: ORDER, data: { customerId: "u-1002" } }], { merge: true });
    await assertFails(getDoc(doc(clientAs(env(), "owner"), SUPPORT_REPLY)));
  });
});
