import { readFileSync } from "node:fs";
import { initializeTestEnvironment, type RulesTestEnvironment } from "@firebase/rules-unit-testing";
import { documentId, collection, collectionGroup, doc, getDoc, getDocs, query, setDoc, where, Timestamp } from "firebase/firestore";
import { afterAll, beforeAll, it } from "vitest";

let env: RulesTestEnvironment;
beforeAll(async () => {
  const [host, port] = process.env.FIRESTORE_EMULATOR_HOST!.split(":");
  env = await initializeTestEnvironment({ projectId: "demo-h100-scratch", firestore: { rules: readFileSync(process.env.RULES_FILE ?? "firestore.rules", "utf8"), host: host!, port: Number(port) } });
  await env.clearFirestore();
  await env.withSecurityRulesDisabled(async (ctx) => {
    const db = ctx.firestore();
    await setDoc(doc(db, "tenants/t-acme"), { tenantId: "t-acme", lifecycleState: "ACTIVE" });
    await setDoc(doc(db, "tenants/t-acme/orders/o-1"), { customerId: "u-1001", tenantId: "t-acme", lifecycleState: "ACTIVE" });
    await setDoc(doc(db, "tenants/t-acme/orders/o-1/messages/m-1"), { authorId: "x", tenantId: "t-acme", lifecycleState: "ACTIVE" });
    await setDoc(doc(db, "tenants/t-acme/orders/o-1/messages/m-2"), { authorId: "u-1001", tenantId: "t-acme", lifecycleState: "ACTIVE" });
    await setDoc(doc(db, "sessions/s-1"), { uid: "u-1001", tenantId: "t-acme", lifecycleState: "ACTIVE", expireAt: Timestamp.fromMillis(Date.now() + 86400000) });
    await setDoc(doc(db, "sessions/s-old"), { uid: "u-1001", tenantId: "t-acme", lifecycleState: "ACTIVE", expireAt: Timestamp.fromMillis(Date.now() - 86400000) });
    await setDoc(doc(db, "userDirectory/u-1001"), { uid: "u-1001", tenantId: "t-acme", lifecycleState: "ACTIVE" });
  });
});
afterAll(async () => { await env.cleanup(); });

async function tryIt(name: string, p: Promise<unknown>) {
  try { const r = await p as { docs?: { id: string }[] }; console.log("OK  ", name, r?.docs?.map((d) => d.id)); } catch (e) { console.log("FAIL", name, (e as Error).message.slice(0, 200).replace(/\n/g, " ")); }
}
it("scratch", async () => {
  const db = env.authenticatedContext("u-1001", { tenantId: "t-acme" }).firestore();
  await tryIt("orders q active", getDocs(query(collection(db, "tenants/t-acme/orders"), where("customerId", "==", "u-1001"), where("lifecycleState", "==", "ACTIVE"))));
  await tryIt("msgs cg", getDocs(query(collectionGroup(db, "messages"), where("tenantId", "==", "t-acme"), where("authorId", "==", "u-1001"), where("lifecycleState", "==", "ACTIVE"))));
  await tryIt("sessions q", getDocs(query(collection(db, "sessions"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), where("lifecycleState", "==", "ACTIVE"))));
  await tryIt("sessions q exp", getDocs(query(collection(db, "sessions"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), where("lifecycleState", "==", "ACTIVE"), where("expireAt", ">", Timestamp.now()))));
  await tryIt("sessions get", getDoc(doc(db, "sessions/s-1")));
  await tryIt("sessions get old", getDoc(doc(db, "sessions/s-old")));
  await tryIt("userDir get", getDoc(doc(db, "userDirectory/u-1001")));
  await tryIt("userDir q", getDocs(query(collection(db, "userDirectory"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), where("lifecycleState", "==", "ACTIVE"))));
  await tryIt("userDir q docid", getDocs(query(collection(db, "userDirectory"), where(documentId(), "==", "u-1001"), where("uid", "==", "u-1001"), where("tenantId", "==", "t-acme"), where("lifecycleState", "==", "ACTIVE"))));
  await tryIt("tenants get", getDoc(doc(db, "tenants/t-acme")));
  await tryIt("tenants q", getDocs(query(collection(db, "tenants"), where("tenantId", "==", "t-acme"), where("lifecycleState", "==", "ACTIVE"))));
  await tryIt("tenants q docid", getDocs(query(collection(db, "tenants"), where(documentId(), "==", "t-acme"), where("lifecycleState", "==", "ACTIVE"))));
});
