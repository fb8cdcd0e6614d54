// What a hold placement and a purge batch cost each other through the hold fence (docs/HOLD-FENCE.md, "What it
// costs"), on the Firestore emulator.
//
// Every purge batch transaction reads `retentionJobs/hold-fence`; every placement writes it. This bench erases
// large accounts (M messages, A activity records, in batches of BENCH_BATCH) as purgeRequest tasks, one after
// another, first with nothing else going on, then while a second OS process (this script, `place` mode, its own
// Firestore client) places BENCH_HOLDS holds on unrelated orders, one after another, BENCH_INTERVAL_MS apart, from
// the moment the erasure's round starts. It also places the same number of holds on an idle database. Measured from the wire side of
// each process, by wrapping the Admin SDK's runTransaction:
// - per batch transaction (a transaction that read the fence and a batch record): attempts (a retry follows an
//   abort or a contention error), wall time from the first attempt to the commit;
// - per placement (the transaction that writes the fence): attempts and wall time, idle and mid-purge;
// - per erasure: wall time, and how many of its PURGE_BATCH entries took the read path (the fence moved since the
//   plan: every document is read and judged again).
// One JSON line on stdout.
//
//   npm run bench:hold-fence
//   EMULATOR_PORT_OFFSET=<n> node scripts/emulators.mjs exec --only firestore,auth,storage -- node bench/hold-fence.mjs
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { functionsLib } from "./lib.mjs";

const require = createRequire(import.meta.url);
const { Firestore } = require("@google-cloud/firestore");

const host = process.env.FIRESTORE_EMULATOR_HOST;
if (!host) {
  console.error("hold-fence: FIRESTORE_EMULATOR_HOST is not set; run it inside scripts/emulators.mjs exec.");
  process.exit(2);
}
const project = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 3);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 200);
const ACTIVITY = Number(process.env.BENCH_ACTIVITY ?? 200);
const BATCH = Number(process.env.BENCH_BATCH ?? 20);
const HOLDS = Number(process.env.BENCH_HOLDS ?? 8);
const INTERVAL_MS = Number(process.env.BENCH_INTERVAL_MS ?? 400);
const DAY = 86_400_000;
const FENCE_PATH = "retentionJobs/hold-fence";

/** Transactions this process ran: attempts, wall time, and what they touched. */
const transactions = [];
const originalRunTransaction = Firestore.prototype.runTransaction;
Firestore.prototype.runTransaction = function (updateFunction, options) {
  const rec = { attempts: 0, readFence: false, readBatch: false, wroteFence: false, ms: 0, ok: false, startEpoch: Date.now(), endEpoch: 0 };
  const started = performance.now();
  const wrapped = (tx) => {
    rec.attempts++;
    if (!tx.__benchWrapped) {
      tx.__benchWrapped = true;
      const get = tx.get.bind(tx);
      tx.get = (ref, ...rest) => {
        const path = typeof ref?.path === "string" ? ref.path : "";
        if (path === FENCE_PATH) rec.readFence = true;
        if (path.includes("/batches/")) rec.readBatch = true;
        return get(ref, ...rest);
      };
      const set = tx.set.bind(tx);
      tx.set = (ref, ...rest) => {
        if (ref?.path === FENCE_PATH) rec.wroteFence = true;
        return set(ref, ...rest);
      };
    }
    return updateFunction(tx);
  };
  return originalRunTransaction.call(this, wrapped, options).then(
    (v) => {
      rec.ms = performance.now() - started;
      rec.endEpoch = Date.now();
      rec.ok = true;
      transactions.push(rec);
      return v;
    },
    (err) => {
      rec.ms = performance.now() - started;
      rec.endEpoch = Date.now();
      transactions.push(rec);
      throw err;
    },
  );
};

const { db } = functionsLib("platform/firestore.js");
const { policy } = functionsLib("platform/registry.js");
const { governedToFirestore } = functionsLib("platform/governed-doc.js");
const { freshGovernedFields } = functionsLib("kernel/governed-write.js");
const { placeHold } = functionsLib("holds/service.js");

const pol = policy();
const firestore = db();
const T0 = Date.now() - 30 * DAY;
const asOf = T0 + 8 * DAY;
const TENANT = "t-bench";

const pct = (xs, p) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1));
};
const summary = (recs) => ({
  count: recs.length,
  attempts: recs.reduce((n, r) => n + r.attempts, 0),
  retried: recs.filter((r) => r.attempts > 1).length,
  failed: recs.filter((r) => !r.ok).length,
  p50Ms: pct(recs.map((r) => r.ms), 0.5),
  p95Ms: pct(recs.map((r) => r.ms), 0.95),
  maxMs: pct(recs.map((r) => r.ms), 1),
});

/**
 * The placements, one after another, INTERVAL_MS apart (a placement never waits on another, so what it waits on is
 * the purge); their transactions' records.
 */
async function placeHolds(targets) {
  const out = [];
  for (const [i, targetPath] of targets.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, INTERVAL_MS));
    const before = transactions.length;
    const startEpoch = Date.now();
    const t = performance.now();
    await placeHold({ targetPath, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-bench" }, nowMs: T0 });
    const ms = performance.now() - t;
    // The placement's own transaction: the one that wrote the fence.
    const own = transactions.slice(before).filter((r) => r.wroteFence);
    out.push({ ms, attempts: own.reduce((n, r) => n + r.attempts, 0), startEpoch, endEpoch: Date.now() });
  }
  return out;
}

if (process.argv[2] === "place") {
  // The second process: waits for "go <targets json>" on stdin, places, prints its measurements, waits again.
  const rl = createInterface({ input: process.stdin });
  process.stdout.write("@@ready\n");
  for await (const line of rl) {
    if (line === "exit") break;
    const targets = JSON.parse(line.slice(3));
    const placed = await placeHolds(targets);
    process.stdout.write(`@@${JSON.stringify({ placed })}\n`);
  }
  await firestore.terminate();
  process.exit(0);
}

const { openDeletionRequest } = functionsLib("requests/service.js");
const { runPurgeRequest } = functionsLib("purge/request-tasks.js");
const { openRunBudget } = functionsLib("purge/runner/run-budget.js");

function governed(path) {
  const cls = pol.classForPath(path);
  const createdAtMs = T0 - 5 * DAY;
  return governedToFirestore(freshGovernedFields(cls, { tenantId: TENANT, policyVersion: pol.version, createdAtMs }), "set");
}

async function seedAccount(uid) {
  const w = firestore.bulkWriter({ throttling: false });
  const put = (path, data) => void w.set(firestore.doc(path), { ...data, ...governed(path) });
  put(`tenants/${TENANT}`, { name: "Bench tenant" });
  put(`tenants/${TENANT}/users/${uid}`, { uid, displayName: `Customer ${uid}` });
  put(`tenants/${TENANT}/orders/o-${uid}`, { customerId: uid, customerName: `Customer ${uid}`, shippingAddress: "1 Road", status: "PAID", totalMinor: 100 });
  for (let m = 0; m < MESSAGES; m++) put(`tenants/${TENANT}/orders/o-${uid}/messages/m-${uid}-${m}`, { authorId: uid, text: `message ${m}` });
  put(`userDirectory/${uid}`, { uid, tenantId: TENANT });
  for (let a = 0; a < ACTIVITY; a++) put(`activity/a-${uid}-${String(a).padStart(4, "0")}`, { subjectUid: uid, type: "SIGNED_IN" });
  await w.close();
  const { request } = await openDeletionRequest({ subject: { type: "user", uid, tenantId: TENANT }, source: "user", actor: { type: "user", id: uid }, nowMs: T0 });
  return request.requestId;
}

/** Activity of a customer nobody erases: the erased accounts stay a small share of their class, so the brake admits them. */
async function seedFiller(n) {
  const w = firestore.bulkWriter({ throttling: false });
  for (let i = 0; i < n; i++) {
    const path = `activity/a-filler-${String(i).padStart(5, "0")}`;
    void w.set(firestore.doc(path), { subjectUid: "u-filler", type: "SIGNED_IN", ...governed(path) });
  }
  await w.close();
}

/** Orders of customers nobody erases: what the placements hold (unrelated to the erasures, so only the fence links them). */
async function seedHoldTargets(n) {
  const w = firestore.bulkWriter({ throttling: false });
  const paths = [];
  for (let i = 0; i < n; i++) {
    const path = `tenants/${TENANT}/orders/o-kept-${String(i).padStart(4, "0")}`;
    paths.push(path);
    void w.set(firestore.doc(path), { customerId: `u-kept-${i}`, customerName: "Kept", shippingAddress: "2 Road", status: "PAID", totalMinor: 100, ...governed(path) });
  }
  await w.close();
  return paths;
}

async function clearDatabase() {
  const res = await fetch(`http://${host}/emulator/v1/projects/${project}/databases/(default)/documents`, { method: "DELETE" });
  if (!res.ok) throw new Error(`clear failed: ${res.status}`);
}

let runs = 0;
async function taskOf(requestId) {
  const runKey = `bench-hold-fence-${runs++}`;
  await openRunBudget({ runKey, shards: 4, nowMs: asOf, correlationId: null });
  return { requestId, runKey, nowMs: asOf, asOfMs: asOf, correlationId: "bench:hold-fence" };
}

/** The second process, and a way to ask it for one round of placements. */
function startPlacer() {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "place"], { env: process.env, stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  // The protocol's lines start with "@@"; the rest is the hold code's own logging.
  lines.on("line", (l) => (l.startsWith("@@") ? waiting.shift()?.(l.slice(2)) : process.stderr.write(`${l}\n`)));
  const next = () => new Promise((r) => waiting.push(r));
  const ready = next();
  return {
    ready,
    async place(targets) {
      const answer = next();
      child.stdin.write(`go ${JSON.stringify(targets)}\n`);
      return JSON.parse(await answer).placed;
    },
    stop() {
      child.stdin.write("exit\n");
      return new Promise((r) => child.on("exit", r));
    },
  };
}

async function readPathBatches(requestId) {
  const snap = await firestore.collection("deletionAudits").where("requestId", "==", requestId).where("action", "==", "PURGE_BATCH").get();
  return { batches: snap.size, readPath: snap.docs.filter((d) => d.get("detail.path") === "read").length };
}

/**
 * Erases ACCOUNTS accounts one after another; with `placer`, the other process starts placing holds as each
 * erasure's round starts (the `afterStart` hook), so they land among its batches.
 */
async function erase(label, placer, targets) {
  const erasures = [];
  const placements = [];
  const batchTx = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const id = await seedAccount(`u-${label}-${i}`);
    const task = await taskOf(id);
    const before = transactions.length;
    let placing = Promise.resolve([]);
    const hook = (ctx) => {
      if (placer && ctx.point === "afterStart") placing = placer.place(targets.splice(0, HOLDS));
    };
    const t = performance.now();
    const report = await runPurgeRequest(task, { batchSize: BATCH, hook });
    const ms = performance.now() - t;
    const placed = await placing;
    if (report.outcome !== "DONE") throw new Error(`${id}: ${report.outcome} ${report.reason ?? ""}`);
    batchTx.push(...transactions.slice(before).filter((r) => r.readFence && r.readBatch));
    placements.push(...placed);
    erasures.push({ ms, ...(await readPathBatches(id)) });
  }
  // The batch transactions that were under way while a placement was.
  const overlaps = (r) => placements.some((p) => r.startEpoch < p.endEpoch && r.endEpoch > p.startEpoch);
  return {
    erasureMs: { p50: pct(erasures.map((e) => e.ms), 0.5), values: erasures.map((e) => Math.round(e.ms)) },
    purgeBatches: erasures.reduce((n, e) => n + e.batches, 0),
    readPathBatches: erasures.reduce((n, e) => n + e.readPath, 0),
    batchTransactions: summary(batchTx),
    ...(placer
      ? {
          batchTransactionsDuringAPlacement: summary(batchTx.filter(overlaps)),
          batchTransactionsOtherwise: summary(batchTx.filter((r) => !overlaps(r))),
          placements: summary(placements.map((p) => ({ ms: p.ms, attempts: p.attempts, ok: true }))),
        }
      : {}),
  };
}

await clearDatabase();
await seedFiller(3000);
const targets = await seedHoldTargets(HOLDS * (ACCOUNTS + 1) + 1);
const placer = startPlacer();
await placer.ready;
// The first placement loads the hold code's paths in the other process: not counted.
await placer.place(targets.splice(0, 1));
const idlePlacements = await placer.place(targets.splice(0, HOLDS));
const quiet = await erase("quiet", null, targets);
const contended = await erase("held", placer, targets);
await placer.stop();
process.stdout.write(
  `${JSON.stringify({
    shape: { accounts: ACCOUNTS, messages: MESSAGES, activity: ACTIVITY, batchSize: BATCH, holdsPerErasure: HOLDS, intervalMs: INTERVAL_MS },
    idlePlacements: summary(idlePlacements.map((p) => ({ ms: p.ms, attempts: p.attempts, ok: true }))),
    quiet,
    placementsMidPurge: contended,
  })}\n`,
);
process.exit(0);
