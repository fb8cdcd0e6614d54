// What one account erasure costs as a purgeRequest task, on the Firestore emulator: the input the night
// simulation's latency model takes per erasure (bench/night-simulation.ts, docs/SCALE.md).
//
// Seeds accounts of three sizes (a profile, an order that the erasure masks, M messages on it, the directory
// entry and A activity records, as the demo's customers are), opens their deletion requests through the request
// service, and runs each request's task (runPurgeRequest) one after another, counting the Admin SDK's RPCs by
// method (bench/lib.mjs), the batches and steps of its round, and its wall time. Then it runs a fresh set of the
// small accounts CONCURRENCY tasks at a time, for the emulator's throughput. One JSON line on stdout.
//
//   npm run build && EMULATOR_PORT_OFFSET=<n> node scripts/emulators.mjs exec --only firestore,auth,storage -- node bench/request-unit.mjs
import { counts, countOperations, functionsLib, resetCounts, rpcsByMethod } from "./lib.mjs";

const host = process.env.FIRESTORE_EMULATOR_HOST;
if (!host) {
  console.error("request-unit: FIRESTORE_EMULATOR_HOST is not set; run it inside scripts/emulators.mjs exec.");
  process.exit(2);
}
const project = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
const PER_SIZE = Number(process.env.BENCH_ACCOUNTS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
// The last two cut the large account into more batches, and then more steps, so the costs per batch and per step
// can be told apart from the cost per erasure.
const SIZES = [
  { name: "small", messages: 2, activity: 2 },
  { name: "medium", messages: 20, activity: 20 },
  { name: "large", messages: 200, activity: 200 },
  { name: "large-batch-20", messages: 200, activity: 200, opts: { batchSize: 20 } },
  { name: "large-batch-20-step-1", messages: 200, activity: 200, opts: { batchSize: 20, stepBatches: 1 } },
];
const DAY = 86_400_000;

countOperations();
const { db } = functionsLib("platform/firestore.js");
const { policy } = functionsLib("platform/registry.js");
const { governedToFirestore } = functionsLib("platform/governed-doc.js");
const { freshGovernedFields } = functionsLib("kernel/governed-write.js");
const { openDeletionRequest } = functionsLib("requests/service.js");
const { runPurgeRequest } = functionsLib("purge/request-tasks.js");
const { openRunBudget } = functionsLib("purge/runner/run-budget.js");

const pol = policy();
const firestore = db();
const T0 = Date.now() - 30 * DAY;
const asOf = T0 + 8 * DAY;

function governed(path, tenantId) {
  const cls = pol.classForPath(path);
  const createdAtMs = T0 - 5 * DAY;
  return governedToFirestore(freshGovernedFields(cls, { tenantId, policyVersion: pol.version, createdAtMs }), "set");
}

async function seedAccount(uid, size) {
  const tenantId = "t-bench";
  const w = firestore.bulkWriter({ throttling: false });
  const put = (path, data) => void w.set(firestore.doc(path), { ...data, ...governed(path, tenantId) });
  put(`tenants/${tenantId}`, { name: "Bench tenant" });
  put(`tenants/${tenantId}/users/${uid}`, { uid, displayName: `Customer ${uid}` });
  put(`tenants/${tenantId}/orders/o-${uid}`, { customerId: uid, customerName: `Customer ${uid}`, shippingAddress: "1 Road", status: "PAID", totalMinor: 100 });
  for (let m = 0; m < size.messages; m++) put(`tenants/${tenantId}/orders/o-${uid}/messages/m-${uid}-${m}`, { authorId: uid, text: `message ${m}` });
  put(`userDirectory/${uid}`, { uid, tenantId });
  for (let a = 0; a < size.activity; a++) put(`activity/a-${uid}-${String(a).padStart(4, "0")}`, { subjectUid: uid, type: "SIGNED_IN" });
  await w.close();
  const { request } = await openDeletionRequest({ subject: { type: "user", uid, tenantId }, source: "user", actor: { type: "user", id: uid }, nowMs: T0 });
  return request.requestId;
}

/**
 * Each task in a run of its own, opened before the clock starts (the scheduler opens a run, counting the class
 * sizes, once for all of its tasks): so no account's brake budget is another's, and only the real brake applies.
 */
let runs = 0;
async function taskOf(requestId) {
  const runKey = `bench-request-unit-${runs++}`;
  await openRunBudget({ runKey, shards: 4, nowMs: asOf, correlationId: null });
  return { requestId, runKey, nowMs: asOf, asOfMs: asOf, correlationId: "bench:request-unit" };
}

/** Activity of a customer nobody erases: the erased accounts stay a small share of their class, as in a real database. */
async function seedFiller(n) {
  const w = firestore.bulkWriter({ throttling: false });
  for (let i = 0; i < n; i++) {
    const path = `activity/a-filler-${String(i).padStart(5, "0")}`;
    void w.set(firestore.doc(path), { subjectUid: "u-filler", type: "SIGNED_IN", ...governed(path, "t-bench") });
  }
  await w.close();
}

async function clearDatabase() {
  const res = await fetch(`http://${host}/emulator/v1/projects/${project}/databases/(default)/documents`, { method: "DELETE" });
  if (!res.ok) throw new Error(`clear failed: ${res.status}`);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await clearDatabase();
await seedFiller(3000);
const sizes = [];
for (const size of SIZES) {
  const ids = [];
  for (let i = 0; i < PER_SIZE; i++) ids.push(await seedAccount(`u-${size.name}-${i}`, size));
  const runs = [];
  for (const id of ids) {
    const task = await taskOf(id);
    resetCounts();
    const t = performance.now();
    const report = await runPurgeRequest(task, size.opts ?? {});
    const ms = performance.now() - t;
    if (report.outcome !== "DONE") throw new Error(`${id}: ${report.outcome} ${report.reason ?? ""}`);
    const cp = (await firestore.doc(`retentionJobs/purge-${id}`).get()).data();
    const batches = cp.layout.reduce((n, s) => n + s.batches, 0) + cp.late.reduce((n, s) => n + s.batches, 0);
    runs.push({ ms, rpcs: counts.rpcs, reads: counts.reads, writes: counts.writes, deletes: counts.deletes, batches, steps: cp.nextStep, stages: cp.layout.length, byMethod: Object.fromEntries(rpcsByMethod) });
  }
  const byMethod = {};
  for (const m of new Set(runs.flatMap((r) => Object.keys(r.byMethod)))) byMethod[m] = median(runs.map((r) => r.byMethod[m] ?? 0));
  sizes.push({
    size: size.name,
    deletedPerAccount: 1 + size.messages + 1 + size.activity,
    accounts: runs.length,
    medianMs: Number(median(runs.map((r) => r.ms)).toFixed(1)),
    medianRpcs: median(runs.map((r) => r.rpcs)),
    batches: median(runs.map((r) => r.batches)),
    steps: median(runs.map((r) => r.steps)),
    stages: median(runs.map((r) => r.stages)),
    reads: median(runs.map((r) => r.reads)),
    writes: median(runs.map((r) => r.writes)),
    deletes: median(runs.map((r) => r.deletes)),
    byMethod,
  });
}

// Throughput: fresh small accounts, CONCURRENCY tasks at a time.
const tasks = [];
for (let i = 0; i < PER_SIZE * CONCURRENCY; i++) tasks.push(await taskOf(await seedAccount(`u-c-${i}`, SIZES[0])));
const t = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < tasks.length) {
      const task = tasks[next++];
      const id = task.requestId;
      const r = await runPurgeRequest(task);
      if (r.outcome !== "DONE") throw new Error(`${id}: ${r.outcome}`);
    }
  }),
);
const wall = performance.now() - t;
process.stdout.write(
  `${JSON.stringify({ sizes, concurrent: { concurrency: CONCURRENCY, accounts: tasks.length, wallMs: Math.round(wall), msPerAccount: Number((wall / tasks.length).toFixed(1)) } })}\n`,
);
process.exit(0);
