// Client list queries. The rules judge a query by its filters, not by the documents it would return, so a
// query passes only when its filters prove that every result is visible and the caller's: it must carry
// `lifecycleState == 'ACTIVE'`, its ownership and tenant filters, and for sessions `expireAt > now`.
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { Timestamp, collection, collectionGroup, documentId, getDocs, query, where, type Query } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import { IDENTITIES, clientAs, readRaw, seed, useRulesEnv, type Role } from "../helpers/rules";

/** Clocks differ a little between client and server; asking for a minute of validity keeps the proof sound. */
const soon = () => Timestamp.fromMillis(Date.now() + 60_000);
const ACTIVE = where("lifecycleState", "==", "ACTIVE");

interface QueryCase {
  collection: string;
  who: Role;
  /** The query a client app would send. */
  allowed: (db: ReturnType<typeof clientAs>) => Query;
  ids: string[];
  /** The same query with one needed filter left out, or a filter the caller is not entitled to. */
  denied: readonly { why: string; q: (db: ReturnType<typeof clientAs>) => Query }[];
}

const CASES: readonly QueryCase[] = [
  {
    collection: "tenants",
    who: "owner",
    allowed: (db) => query(collection(db, "tenants"), where("tenantId", "==", "t-acme"), ACTIVE),
    ids: ["t-acme"],
    denied: [
      { why: "without the lifecycle filter", q: (db) => query(collection(db, "tenants"), where("tenantId", "==", "t-acme")) },
      { why: "for another tenant", q: (db) => query(collection(db, "tenants"), where("tenantId", "==", "t-other"), ACTIVE) },
    ],
  },
  {
    collection: "tenants/{t}/users",
    who: "owner",
    allowed: (db) => query(collection(db, "tenants/t-acme/users"), ACTIVE),
    ids: ["u-1001", "u-1002"],
    denied: [
      { why: "without the lifecycle filter", q: (db) => query(collection(db, "tenants/t-acme/users")) },
      { why: "for SOFT_DELETED users", q: (db) => query(collection(db, "tenants/t-acme/users"), where("lifecycleState", "==", "SOFT_DELETED")) },
      { why: "in another tenant", q: (db) => query(collection(db, "tenants/t-other/users"), ACTIVE) },
    ],
  },
  {
    collection: "tenants/{t}/orders",
    who: "owner",
    allowed: (db) => query(collection(db, "tenants/t-acme/orders"), where("customerId", "==", "u-1001"), ACTIVE),
    ids: ["o-1001", "o-1002"],
    denied: [
      { why: "without the lifecycle filter", q: (db) => query(collection(db, "tenants/t-acme/orders"), where("customerId", "==", "u-1001")) },
      { why: "without the customer filter", q: (db) => query(collection(db, "tenants/t-acme/orders"), ACTIVE) },
      { why: "for another customer's orders", q: (db) => query(collection(db, "tenants/t-acme/orders"), where("customerId", "==", "u-1002"), ACTIVE) },
      {
        why: "for SOFT_DELETED orders",
        q: (db) => query(collection(db, "tenants/t-acme/orders"), where("customerId", "==", "u-1001"), where("lifecycleState", "==", "SOFT_DELETED")),
      },
    ],
  },
  {
    collection: "tenants/{t}/orders/{o}/messages",
    who: "owner",
    allowed: (db) => query(collection(db, "tenants/t-acme/orders/o-1001/messages"), ACTIVE),
    ids: ["m-001", "m-002"],
    denied: [{ why: "without the lifecycle filter", q: (db) => query(collection(db, "tenants/t-acme/orders/o-1001/messages")) }],
  },
  {
    collection: "messages (collection group)",
    who: "owner",
    allowed: (db) => query(collectionGroup(db, "messages"), where("tenantId", "==", "t-acme"), where("authorId", "==", "u-1001"), ACTIVE),
    ids: ["m-001"],
    denied: [
      { why: "without the lifecycle filter", q: (db) => query(collectionGroup(db, "messages"), where("tenantId", "==", "t-acme"), where("authorId", "==", "u-1001")) },
      { why: "without the tenant filter", q: (db) => query(collectionGroup(db, "messages"), where("authorId", "==", "u-1001"), ACTIVE) },
      { why: "without the author filter", q: (db) => query(collectionGroup(db, "messages"), where("tenantId", "==", "t-acme"), ACTIVE) },
      {
        why: "for another tenant",
        q: (db) => query(collectionGroup(db, "messages"), where("tenantId", "==", "t-other"), where("authorId", "==", "u-1001"), ACTIVE),
      },
    ],
  },
  {
    collection: "userDirectory",
    who: "owner",
    allowed: (db) => query(collection(db, "userDirectory"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE),
    ids: ["u-1001"],
    denied: [
      { why: "without the lifecycle filter", q: (db) => query(collection(db, "userDirectory"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme")) },
      { why: "for the whole tenant", q: (db) => query(collection(db, "userDirectory"), where("tenantId", "==", "t-acme"), ACTIVE) },
      { why: "for another user's document id", q: (db) => query(collection(db, "userDirectory"), where(documentId(), "==", "u-1002"), ACTIVE) },
    ],
  },
  {
    collection: "activity",
    who: "owner",
    allowed: (db) => query(collection(db, "activity"), where("subjectUid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE),
    ids: ["a-001"],
    denied: [
      { why: "without the lifecycle filter", q: (db) => query(collection(db, "activity"), where("subjectUid", "==", "u-1001"), where("tenantId", "==", "t-acme")) },
      { why: "without the tenant filter", q: (db) => query(collection(db, "activity"), where("subjectUid", "==", "u-1001"), ACTIVE) },
      { why: "for another subject", q: (db) => query(collection(db, "activity"), where("subjectUid", "==", "u-1002"), where("tenantId", "==", "t-acme"), ACTIVE) },
    ],
  },
  {
    collection: "sessions",
    who: "owner",
    allowed: (db) =>
      query(collection(db, "sessions"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE, where("expireAt", ">", soon())),
    ids: ["s-1001"],
    denied: [
      {
        why: "without the lifecycle filter",
        q: (db) => query(collection(db, "sessions"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), where("expireAt", ">", soon())),
      },
      {
        why: "without the expiry filter",
        q: (db) => query(collection(db, "sessions"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE),
      },
      {
        why: "with an expiry filter in the past",
        q: (db) =>
          query(
            collection(db, "sessions"),
            where("uid", "==", "u-1001"),
            where("tenantId", "==", "t-acme"),
            ACTIVE,
            where("expireAt", ">", Timestamp.fromMillis(Date.now() - 3_600_000)),
          ),
      },
    ],
  },
  {
    collection: "auditRecords",
    who: "compliance",
    allowed: (db) => query(collection(db, "auditRecords"), ACTIVE),
    ids: ["ar-001"],
    denied: [{ why: "without the lifecycle filter", q: (db) => query(collection(db, "auditRecords")) }],
  },
];

describe("client list queries", () => {
  const env = useRulesEnv();

  it.each(CASES.map((c) => [`${IDENTITIES[c.who].label} | ${c.collection} | list with the needed filters | allow`, c] as const))(
    "%s",
    async (_name, c) => {
      const snap = await assertSucceeds(getDocs(c.allowed(clientAs(env(), c.who))));
      expect(snap.docs.map((d) => d.id).sort()).toEqual(c.ids);
    },
  );

  it.each(CASES.flatMap((c) => c.denied.map((d) => [`${IDENTITIES[c.who].label} | ${c.collection} | list ${d.why} | deny`, c.who, d] as const)))(
    "%s",
    async (_name, who, d) => {
      await assertFails(getDocs(d.q(clientAs(env(), who))));
    },
  );

  it("owner | sessions | an expired session that still exists is not returned by the allowed query", async () => {
    const expired = Timestamp.fromMillis(Date.now() - 3_600_000);
    const live = await readRaw(env(), "sessions/s-1001");
    await seed(env(), [{ path: "sessions/s-1003", data: { ...live, expireAt: expired } }]);
    const q = CASES.find((c) => c.collection === "sessions")!.allowed(clientAs(env(), "owner"));
    expect((await assertSucceeds(getDocs(q))).docs.map((d) => d.id)).toEqual(["s-1001"]);
  });

  it("owner | orders | a SOFT_DELETED order is not returned by the allowed query", async () => {
    await seed(env(), [{ path: "tenants/t-acme/orders/o-1002", data: { lifecycleState: "SOFT_DELETED" } }], { merge: true });
    const q = CASES.find((c) => c.collection === "tenants/{t}/orders")!.allowed(clientAs(env(), "owner"));
    expect((await assertSucceeds(getDocs(q))).docs.map((d) => d.id)).toEqual(["o-1001"]);
  });

  it.each((["anonymous", "peer", "otherTenant", "compliance", "retentionAdmin"] as const).map((r) => [IDENTITIES[r].label, r] as const))(
    "%s | tenants/{t}/orders | the owner's order query | deny",
    async (_label, who) => {
      const q = CASES.find((c) => c.collection === "tenants/{t}/orders")!.allowed(clientAs(env(), who));
      await assertFails(getDocs(q));
    },
  );
});
