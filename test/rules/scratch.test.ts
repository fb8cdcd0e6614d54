import { readFileSync } from "node:fs";
import { initializeTestEnvironment, assertSucceeds, assertFails } from "@firebase/rules-unit-testing";
import { documentId, collection, query, where, getDocs, Timestamp } from "firebase/firestore";
import { it } from "vitest";
it("exp", async () => {
  const [host, port] = process.env.FIRESTORE_EMULATOR_HOST!.split(":");
  const env = await initializeTestEnvironment({ projectId: "demo-scratch-rules", firestore: { rules: readFileSync("/tmp/rx/exp.rules", "utf8"), host: host!, port: Number(port) } });
  const db = env.authenticatedContext("u1").firestore();
  for (const c of ["a", "b"]) {
    const tries: [string, () => Promise<unknown>][] = [
      ["uid+state", () => getDocs(query(collection(db, c), where("uid", "==", "u1"), where("lifecycleState", "==", "ACTIVE")))],
      ["uid+state+exp now", () => getDocs(query(collection(db, c), where("uid", "==", "u1"), where("lifecycleState", "==", "ACTIVE"), where("expireAt", ">", Timestamp.now())))],
      ["uid+state+exp +1m", () => getDocs(query(collection(db, c), where("uid", "==", "u1"), where("lifecycleState", "==", "ACTIVE"), where("expireAt", ">", Timestamp.fromMillis(Date.now() + 60000))))],
      ["uid+state+exp -1m", () => getDocs(query(collection(db, c), where("uid", "==", "u1"), where("lifecycleState", "==", "ACTIVE"), where("expireAt", ">", Timestamp.fromMillis(Date.now() - 60000))))],
      ["uid only", () => getDocs(query(collection(db, c), where("uid", "==", "u1")))],
    ];
    for (const [n, f] of tries) {
      try { await f(); console.log(c, n, "ALLOWED"); } catch (e) { console.log(c, n, "DENIED", (e as Error).message.slice(0, 80)); }
    }
  }
  void assertSucceeds; void assertFails;
  await env.cleanup();
});
