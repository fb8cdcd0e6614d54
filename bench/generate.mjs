// Child process: writes a fresh nested tree (tenant, user, orders, messages) with governed retention
// fields, old enough that every document's retention has run out (so a tenant purge may delete it all).
import { functionsLib, BENCH_TENANT, BENCH_USER, MESSAGES_PER_ORDER, treeSize } from "./lib.mjs";

const orders = Number(process.argv[2]);
if (!Number.isInteger(orders) || orders < 1) throw new Error("usage: generate.mjs <orders>");
const { db } = functionsLib("platform/firestore.js");
const { policy } = functionsLib("platform/registry.js");
const { governedToFirestore } = functionsLib("platform/governed-doc.js");
const { freshGovernedFields } = functionsLib("kernel/governed-write.js");

const pol = policy();
const createdAtMs = Date.now() - 9 * 365 * 86_400_000; // older than every retention period in v1
function governed(path) {
  return governedToFirestore(freshGovernedFields(pol.classForPath(path), { tenantId: BENCH_TENANT, policyVersion: pol.version, createdAtMs }), "set");
}

const firestore = db();
const writer = firestore.bulkWriter({ throttling: false });
const base = `tenants/${BENCH_TENANT}`;
void writer.set(firestore.doc(base), { name: "Bench tenant", ...governed(base) });
void writer.set(firestore.doc(`${base}/users/${BENCH_USER}`), { uid: BENCH_USER, displayName: "Bench", ...governed(`${base}/users/${BENCH_USER}`) });
for (let o = 0; o < orders; o++) {
  const orderPath = `${base}/orders/o-${String(o).padStart(6, "0")}`;
  void writer.set(firestore.doc(orderPath), { customerId: BENCH_USER, status: "DELIVERED", totalMinor: 1000 + o, ...governed(orderPath) });
  for (let m = 0; m < MESSAGES_PER_ORDER; m++) {
    const msgPath = `${orderPath}/messages/m-${m}`;
    void writer.set(firestore.doc(msgPath), { authorId: BENCH_USER, text: `message ${m}`, sentAt: new Date(createdAtMs), ...governed(msgPath) });
  }
}
await writer.close();
process.stdout.write(`${JSON.stringify({ generated: treeSize(orders) })}\n`);
process.exit(0);
