// Child process: counts what one TTL delete costs, evidence included. Firestore's TTL removes a parent
// document (here: a plain delete, which is what TTL does); the trigger's effect (processTtlDelete: its
// children, the idempotency marker, the evidence entry and the chain head) is then run for that delete
// event and its Firestore traffic counted, for orders with 9 messages and for leaf messages.
import { BENCH_TENANT, counts, countOperations, functionsLib, resetCounts } from "./lib.mjs";

const samples = Number(process.argv[2] ?? 20);
countOperations();
const { db } = functionsLib("platform/firestore.js");
const { processTtlDelete } = functionsLib("ttl/delete.js");
const firestore = db();

async function cost(paths, childCollections) {
  const snaps = await Promise.all(paths.map((p) => firestore.doc(p).get()));
  await Promise.all(paths.map((p) => firestore.doc(p).delete()));
  resetCounts();
  let reported = 0;
  for (const [k, s] of snaps.entries()) {
    const r = await processTtlDelete({ eventId: `bench-ttl-${s.ref.path.replaceAll("/", "_")}`, eventTimeMs: Date.now(), path: s.ref.path, data: s.data(), trigger: "bench", childCollections });
    if (r.outcome !== "PROCESSED") throw new Error(`TTL delete ${k} ended ${r.outcome} (${r.classification})`);
    reported += r.writes;
  }
  const per = (n) => Number((n / paths.length).toFixed(2));
  return { samples: paths.length, reads: per(counts.reads), writes: per(counts.writes), deletes: per(counts.deletes), reportedWrites: per(reported), rpcs: per(counts.rpcs) };
}

const orders = (await firestore.collection(`tenants/${BENCH_TENANT}/orders`).limit(samples * 2).get()).docs.map((d) => d.ref.path);
const parents = orders.slice(0, samples);
const leaves = orders.slice(samples).map((o) => `${o}/messages/m-0`);
const withChildren = await cost(parents, ["messages"]);
const leaf = await cost(leaves, []);
process.stdout.write(`${JSON.stringify({ orderWith9Messages: withChildren, leafMessage: leaf })}\n`);
process.exit(0);
