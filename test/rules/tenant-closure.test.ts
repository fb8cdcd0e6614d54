// A closed tenant: from the moment a second staff member approves its closure (the `closure` field on
// tenants/{tenantId}), every client read and write of the tenant's data is refused, whatever each document's own
// state: a document a hold keeps ACTIVE, or one a hold's release brings back, stays hidden too. Every denial has
// a positive control on the same data with the tenant open, so it cannot come from missing data.
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { Timestamp, collection, collectionGroup, deleteDoc, deleteField, doc, getDoc, getDocs, query, updateDoc, where, type Query } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import { clientAs, readRaw, seed, useRulesEnv, type Role } from "../helpers/rules";

const ACTIVE = where("lifecycleState", "==", "ACTIVE");
const soon = () => Timestamp.fromMillis(Date.now() + 60_000);

/** Every t-acme document an app user of t-acme reads when the tenant is open, with the user who reads it. */
const READS: readonly (readonly [Role, string])[] = [
  ["owner", "tenants/t-acme"],
  ["owner", "tenants/t-acme/users/u-1001"],
  ["peer", "tenants/t-acme/users/u-1002"],
  ["owner", "tenants/t-acme/orders/o-1001"],
  ["owner", "tenants/t-acme/orders/o-1002"],
  ["owner", "tenants/t-acme/orders/o-1001/messages/m-001"],
  ["owner", "tenants/t-acme/orders/o-1001/messages/m-002"],
  ["owner", "userDirectory/u-1001"],
  ["peer", "userDirectory/u-1002"],
  ["owner", "activity/a-001"],
  ["peer", "activity/a-002"],
  ["owner", "sessions/s-1001"],
  ["peer", "sessions/s-1002"],
];

/** The list queries a t-acme app would send (each with the filters the rules ask for). */
const QUERIES: readonly (readonly [string, (db: ReturnType<typeof clientAs>) => Query])[] = [
  ["tenants", (db) => query(collection(db, "tenants"), where("tenantId", "==", "t-acme"), ACTIVE)],
  ["tenants/t-acme/users", (db) => query(collection(db, "tenants/t-acme/users"), ACTIVE)],
  ["tenants/t-acme/orders", (db) => query(collection(db, "tenants/t-acme/orders"), where("customerId", "==", "u-1001"), ACTIVE)],
  ["tenants/t-acme/orders/o-1001/messages", (db) => query(collection(db, "tenants/t-acme/orders/o-1001/messages"), ACTIVE)],
  ["messages (collection group)", (db) => query(collectionGroup(db, "messages"), where("tenantId", "==", "t-acme"), where("authorId", "==", "u-1001"), ACTIVE)],
  ["userDirectory", (db) => query(collection(db, "userDirectory"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE)],
  ["activity", (db) => query(collection(db, "activity"), where("subjectUid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE)],
  ["sessions", (db) => query(collection(db, "sessions"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), ACTIVE, where("expireAt", ">", soon()))],
];

const CLOSURE = { requestId: "dr-closure", reason: "TENANT_CLOSURE", closedAt: Timestamp.now() };
const closeAcme = (env: Parameters<typeof seed>[0]) => seed(env, [{ path: "tenants/t-acme", data: { closure: CLOSURE } }], { merge: true });

describe("a closed tenant's data", () => {
  const env = useRulesEnv();

  it.each(READS.map(([who, path]) => [who, path] as const))("%s | %s | get while the tenant is open | allow (positive control)", async (who, path) => {
    expect((await assertSucceeds(getDoc(doc(clientAs(env(), who), path)))).exists()).toBe(true);
  });

  it.each(READS.map(([who, path]) => [who, path] as const))("%s | %s | get once the closure is approved, documents still ACTIVE | deny", async (who, path) => {
    await closeAcme(env());
    // Nothing but the closure changed: each document is still ACTIVE (as one a hold keeps, or a release brings back).
    expect((await readRaw(env(), path))?.lifecycleState).toBe("ACTIVE");
    await assertFails(getDoc(doc(clientAs(env(), who), path)));
  });

  it.each(QUERIES.map(([name, q]) => [name, q] as const))("owner | %s | list while the tenant is open | allow (positive control)", async (_name, q) => {
    expect((await assertSucceeds(getDocs(q(clientAs(env(), "owner"))))).size).toBeGreaterThan(0);
  });

  it.each(QUERIES.map(([name, q]) => [name, q] as const))("owner | %s | list once the closure is approved | deny", async (_name, q) => {
    await closeAcme(env());
    await assertFails(getDocs(q(clientAs(env(), "owner"))));
  });

  it("owner | the one client write (renaming themself) | deny once the closure is approved", async () => {
    const profile = () => doc(clientAs(env(), "owner"), "tenants/t-acme/users/u-1001");
    await assertSucceeds(updateDoc(profile(), { displayName: "Ada King" }));
    await closeAcme(env());
    await assertFails(updateDoc(profile(), { displayName: "Ada Byron" }));
    expect((await readRaw(env(), "tenants/t-acme/users/u-1001"))?.displayName).toBe("Ada King");
  });

  it("a tenant whose document is gone (purged, or never written) shows nothing either", async () => {
    await env().withSecurityRulesDisabled(async (ctx) => {
      await deleteDoc(doc(ctx.firestore() as unknown as ReturnType<typeof clientAs>, "tenants/t-acme"));
    });
    for (const [who, path] of READS.filter(([, p]) => p !== "tenants/t-acme")) await assertFails(getDoc(doc(clientAs(env(), who), path)));
  });

  it("another tenant is untouched, and a cancelled closure (the field removed) shows the tenant again", async () => {
    await closeAcme(env());
    for (const path of ["tenants/t-other", "tenants/t-other/users/u-9001", "tenants/t-other/orders/o-9001", "userDirectory/u-9001", "sessions/s-9001"]) {
      await assertSucceeds(getDoc(doc(clientAs(env(), "otherTenant"), path)));
    }
    await env().withSecurityRulesDisabled(async (ctx) => {
      await updateDoc(doc(ctx.firestore() as unknown as ReturnType<typeof clientAs>, "tenants/t-acme"), { closure: deleteField() });
    });
    for (const [who, path] of READS) await assertSucceeds(getDoc(doc(clientAs(env(), who), path)));
  });

  it("compliance still reads the closed tenant's audit records, which policy keeps for 7 years", async () => {
    await closeAcme(env());
    await assertSucceeds(getDoc(doc(clientAs(env(), "compliance"), "auditRecords/ar-001")));
  });

  it("no client can write a closure, or lift one", async () => {
    for (const who of ["owner", "peer", "compliance", "retentionAdmin"] as const) {
      await assertFails(updateDoc(doc(clientAs(env(), who), "tenants/t-acme"), { closure: CLOSURE }));
    }
    await closeAcme(env());
    for (const who of ["owner", "compliance", "retentionAdmin"] as const) {
      await assertFails(updateDoc(doc(clientAs(env(), who), "tenants/t-acme"), { closure: deleteField() }));
    }
  });
});
