// Child process: runs one contender against the tree generate.mjs wrote, and reports its wall time, the
// documents it handled, its peak RSS and the Firestore operations it issued (one JSON line on stdout).
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { PerformanceObserver, constants as perfConstants } from "node:perf_hooks";
import { join } from "node:path";
import { BENCH_TENANT, MESSAGES_PER_ORDER, counts, countOperations, emulatorCpuMs, functionsLib, resetCounts, rpcsByMethod } from "./lib.mjs";

const require = createRequire(import.meta.url);
const [contender, expectedDocsRaw] = process.argv.slice(2);
const expectedDocs = Number(expectedDocsRaw);
countOperations();
const { db } = functionsLib("platform/firestore.js");
const firestore = db();
const tenantRef = firestore.doc(`tenants/${BENCH_TENANT}`);

async function countRemaining() {
  const snap = await firestore.collectionGroup("messages").where("tenantId", "==", BENCH_TENANT).count().get();
  const orders = await tenantRef.collection("orders").count().get();
  return snap.data().count + orders.data().count + ((await tenantRef.get()).exists ? 1 : 0);
}

/**
 * BENCH_PROFILE=1: where the purge's time and memory go, from its hook points. Each span between two
 * consecutive points is charged to "previous point -> point" (the first to "start -> ..."), with the peak
 * heap and RSS sampled while it ran; the table goes to stderr.
 */
function profileHook(startedAt) {
  const spans = new Map();
  let last = { point: "start", at: startedAt };
  let peak = { heap: 0, rss: 0 };
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peak = { heap: Math.max(peak.heap, m.heapUsed), rss: Math.max(peak.rss, m.rss) };
  }, 10);
  const charge = (key, ms) => {
    const s = spans.get(key) ?? { ms: 0, n: 0, heap: 0, rss: 0 };
    s.ms += ms;
    s.n++;
    s.heap = Math.max(s.heap, peak.heap);
    s.rss = Math.max(s.rss, peak.rss);
    spans.set(key, s);
    peak = { heap: 0, rss: 0 };
  };
  const hook = (ctx) => {
    const at = performance.now();
    charge(`${last.point} -> ${ctx.point}`, at - last.at);
    last = { point: ctx.point, at };
  };
  hook.report = (totalMs) => {
    clearInterval(sampler);
    charge(`${last.point} -> end`, startedAt + totalMs - last.at);
    const mb = (b) => `${(b / 1048576).toFixed(0).padStart(4)} MB`;
    const rows = [...spans.entries()].sort((a, b) => b[1].ms - a[1].ms);
    for (const [key, s] of rows) {
      process.stderr.write(`[profile] ${key.padEnd(34)} ${(s.ms / 1000).toFixed(2).padStart(7)} s ${String(s.n).padStart(5)}x ${((100 * s.ms) / totalMs).toFixed(1).padStart(5)}%  peak heap ${mb(s.heap)}  rss ${mb(s.rss)}\n`);
    }
  };
  return hook;
}

/**
 * BENCH_CPU_PROF=<dir>: a V8 CPU profile of a timed purge, audit or raw stream (the audit's baseline), of this
 * process only (the emulator is a JVM), written to
 * <dir>/<name>-<docs>-<time>.cpuprofile for Chrome's DevTools, with the phase times given to the stop function beside
 * it (.phases.json). Returns that function.
 */
async function cpuProfile(name = "purge") {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return async (_phases) => undefined;
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  return async (phases) => {
    const { profile } = await session.post("Profiler.stop");
    const file = join(dir, `${name}-${expectedDocs}-${Date.now()}`);
    writeFileSync(`${file}.cpuprofile`, JSON.stringify(profile));
    // The phases' wall times, to cut the profile by phase (its samples are timed from the same start).
    if (phases) writeFileSync(`${file}.phases.json`, JSON.stringify(phases));
    session.disconnect();
  };
}

/** The CLI's engine, loaded before the clock. */
let FirestoreDelete;
async function cliDelete() {
  const project = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
  await new FirestoreDelete(project, `tenants/${BENCH_TENANT}`, { recursive: true, databaseId: "(default)" }).execute();
}
let runRetentionAudit;
/** What each contender loads before its clock starts. */
const preload = {
  cli: () => ({ FirestoreDelete } = require("firebase-tools/lib/firestore/delete.js")),
  cliProbe: () => {
    ({ FirestoreDelete } = require("firebase-tools/lib/firestore/delete.js"));
    functionsLib("purge/runner/probe.js");
  },
  audit: () => {
    ({ runRetentionAudit } = functionsLib("audit/job.js"));
    prepareProcess();
  },
  purge: () => prepareProcess(),
};

/**
 * What a function instance does once, before its first job, done here before the clock like module loading: the
 * registry bundle parsed, the metrics log's client set up (platform/metrics.ts#prepareMetrics), and the client
 * libraries the engine loads at first use rather than at import (platform/lazy-libraries.ts): the audit lists the
 * bucket's objects and the purge may delete some, so Cloud Storage's library would otherwise load inside the clock
 * (about 0.05 s of the audit's CPU at 10k).
 */
function prepareProcess() {
  functionsLib("platform/registry.js").policy();
  functionsLib("platform/metrics.js").prepareMetrics();
  const lazy = functionsLib("platform/lazy-libraries.js");
  lazy.cloudStorage();
  lazy.adminStorage();
}

/** Starts a CPU measurement; the returned function gives this process's and the emulator's CPU ms since. */
function cpuMark() {
  const client = process.cpuUsage();
  const emulator = emulatorCpuMs();
  return () => {
    const c = process.cpuUsage(client);
    const e = emulatorCpuMs();
    return { clientMs: Math.round((c.user + c.system) / 1000), emulatorMs: emulator === null || e === null ? null : Math.round(e - emulator) };
  };
}

/**
 * The purge's phases, from its hook points: plan (lease, streamed plan, brake), start (archives, the round's
 * start, pruning, up to the first batch), steps (the batches, up to the finalize), finalize (late sweep,
 * verification, end state).
 */
function phaseHook(startedAt) {
  const first = new Map();
  // CPU (client and emulator, ms) at each point's first call, counted from the same start as the wall clock.
  const cpu = cpuMark();
  const cpuAt = new Map();
  const hook = (ctx) => {
    if (first.has(ctx.point)) return;
    first.set(ctx.point, performance.now());
    cpuAt.set(ctx.point, cpu());
  };
  /** The phases' wall time (ms), and the CPU ms the client and the emulator spent in each. */
  hook.report = (totalMs) => {
    const end = startedAt + totalMs;
    const endCpu = cpu();
    const firstBatchPoint = ["afterMark", "beforeExecute", "inExecute", "inObjectWindow"].filter((p) => first.has(p)).sort((a, b) => first.get(a) - first.get(b))[0];
    const bounds = [
      [startedAt, { clientMs: 0, emulatorMs: 0 }],
      [first.get("afterPlan") ?? startedAt, cpuAt.get("afterPlan") ?? { clientMs: 0, emulatorMs: 0 }],
      [firstBatchPoint ? first.get(firstBatchPoint) : end, firstBatchPoint ? cpuAt.get(firstBatchPoint) : endCpu],
      [first.get("beforeFinalize") ?? end, cpuAt.get("beforeFinalize") ?? endCpu],
      [end, endCpu],
    ];
    const names = ["plan", "start", "steps", "finalize"];
    const r = (x) => Math.round(Math.max(0, x));
    const diff = (key, i) => (bounds[i + 1][1][key] === null || bounds[i][1][key] === null ? null : r(bounds[i + 1][1][key] - bounds[i][1][key]));
    const phases = { total: r(totalMs) };
    const clientCpu = {};
    const emulatorCpu = {};
    names.forEach((name, i) => {
      phases[name] = r(bounds[i + 1][0] - bounds[i][0]);
      clientCpu[name] = diff("clientMs", i);
      emulatorCpu[name] = diff("emulatorMs", i);
    });
    return { phases, cpu: { client: clientCpu, emulator: emulatorCpu } };
  };
  return hook;
}

const contenders = {
  /**
   * Not a contender: what one query of a fixed result size costs on this tree, to show how the emulator's
   * query cost grows with the database (production Firestore serves these from indexes). Median of 7 of:
   * the purge's per-batch probe shape (a kindless name-range query returning about 450 documents: 405 messages and the 44 orders between them), a query on a
   * small unrelated collection (the hold re-check's shape), and a by-name read of 450 documents.
   */
  async queryCost() {
    const { descendantsQuery } = functionsLib("platform/kindless.js");
    const { FieldPath } = require("firebase-admin/firestore");
    const median = async (fn) => {
      const ms = [];
      for (let i = 0; i < 7; i++) {
        const t = performance.now();
        await fn();
        ms.push(performance.now() - t);
      }
      return Number(ms.sort((a, b) => a - b)[3].toFixed(1));
    };
    const msg = (o, m) => firestore.doc(`tenants/${BENCH_TENANT}/orders/o-${String(o).padStart(6, "0")}/messages/m-${m}`);
    const probe = descendantsQuery(`tenants/${BENCH_TENANT}`)
      .select(FieldPath.documentId())
      .where(FieldPath.documentId(), ">=", msg(0, 0))
      .where(FieldPath.documentId(), "<", msg(45, 0));
    const refs = Array.from({ length: 450 }, (_, i) => msg(Math.floor(i / 9), i % 9));
    return {
      docs: expectedDocs,
      queries: {
        rangeProbe450: await median(() => probe.get()),
        smallCollection: await median(() => firestore.collection("retentionHolds").where("state", "==", "ACTIVE").get()),
        getAll450: await median(() => firestore.getAll(...refs)),
      },
      ms: 1,
    };
  },
  /** The Admin SDK's raw recursiveDelete with BulkWriter's default throttle (500 ops/s start). */
  async recursiveDelete() {
    await firestore.recursiveDelete(tenantRef);
    return { docs: expectedDocs };
  },
  /** The Firebase CLI's own delete engine (what `firebase firestore:delete -r` runs), driven directly. */
  async cli() {
    await cliDelete();
    return { docs: expectedDocs };
  },
  /**
   * The CLI's delete plus the purge's descendant probe (runner/probe.ts) as the purge issues it on its deepest
   * level, the messages (nine in ten of the tree's documents): 450 items a batch, 4 batches at a time, before the
   * delete. What the probe alone costs, beside the CLI's own run. (The levels above are left out: the purge probes
   * them once the messages are gone, which the CLI's one recursive delete cannot reproduce.) The paths come from
   * the generator's shape, not from reads.
   */
  async cliProbe() {
    const { descendantsRemainBatch } = functionsLib("purge/runner/probe.js");
    const orders = Math.round((expectedDocs - 2) / (1 + MESSAGES_PER_ORDER));
    const order = (o) => `tenants/${BENCH_TENANT}/orders/o-${String(o).padStart(6, "0")}`;
    const leaves = Array.from({ length: orders * MESSAGES_PER_ORDER }, (_, i) => `${order(Math.floor(i / MESSAGES_PER_ORDER))}/messages/m-${i % MESSAGES_PER_ORDER}`);
    const batches = [];
    for (let i = 0; i < leaves.length; i += 450) batches.push(leaves.slice(i, i + 450));
    for (let i = 0; i < batches.length; i += 4) await Promise.all(batches.slice(i, i + 4).map((b) => descendantsRemainBatch(b)));
    await cliDelete();
    return { docs: expectedDocs };
  },
  /** A raw stream() read of the same documents: the audit's baseline. */
  async stream() {
    const stopCpuProfile = await cpuProfile("stream");
    let docs = 0;
    for await (const _ of tenantRef.collection("orders").stream()) docs++;
    for await (const _ of firestore.collectionGroup("messages").where("tenantId", "==", BENCH_TENANT).stream()) docs++;
    docs += (await tenantRef.get()).exists ? 1 : 0;
    docs += (await tenantRef.collection("users").get()).size;
    await stopCpuProfile();
    return { docs };
  },
  /** Our retention audit over the whole database (the tree is all there is). */
  async audit() {
    const stopCpuProfile = await cpuProfile("audit");
    const summary = await runRetentionAudit({ nowMs: Date.now(), asOfMs: null, dryRun: true, actor: { type: "system", id: "bench" } });
    await stopCpuProfile();
    return { docs: Number(summary.documents), findings: summary.findings };
  },
  /**
   * Our purge of the tenant subject, end to end: plan, brake, decisions, holds per batch, evidence,
   * verification. A tenant purge of the whole bench tree trips the mass-deletion brake (it deletes more
   * than half of each class), so the bench approves it the way an operator would, before the clock starts:
   * a first run trips and records the waiting deletion set, and a retention-admin (an Auth user with that
   * role) approves its run key through approvePurgeRun's handler.
   * A unit over the fan-out threshold goes to the purgeChunk queue; here the queue is drained in-process,
   * one chunk after another (as Cloud Tasks would, without its dispatch latency).
   */
  async purge() {
    const { runNightlyPurge, runPurgeChunk } = functionsLib("purge/job.js");
    const { approvePurgeRunHandler } = functionsLib("entrypoints/callable/approve-purge-run.js");
    const { adminApp } = functionsLib("platform/firestore.js");
    const { getAuth } = require("firebase-admin/auth");
    const now = Date.now();
    const { openDeletionRequest, approveTenantClosure } = functionsLib("requests/index.js");
    const actor = { type: "system", id: "bench" };
    // The tenant's closure, opened through the request service and approved by a second officer 40 days ago
    // (its 30-day grace is over): the approval soft-deletes the tree, untimed, as it would have done then.
    const opened = await openDeletionRequest({ subject: { type: "tenant", tenantId: BENCH_TENANT }, source: "staff", actor: { type: "staff", id: "bench-officer" }, nowMs: now - 40 * 86_400_000 });
    await approveTenantClosure(opened.request.requestId, { type: "staff", id: "bench-approver" }, now - 40 * 86_400_000);
    // The dry run says whether the brake will trip; only then does a real run record the waiting set (and,
    // tripped, it archives, marks and deletes nothing), so the timed run below always does the whole purge.
    const dry = await runNightlyPurge({ nowMs: now, asOfMs: null, dryRun: true, sweep: false, actor });
    if (dry.brake.waiting.length > 0) {
      const tripped = await runNightlyPurge({ nowMs: now, asOfMs: null, dryRun: false, sweep: false, actor });
      const auth = getAuth(adminApp());
      const uid = "bench-retention-admin";
      await auth.deleteUser(uid).catch(() => undefined);
      await auth.createUser({ uid });
      await auth.setCustomUserClaims(uid, { roles: ["retention-admin"] });
      const caller = { uid, tenantId: null, roles: ["retention-admin"] };
      for (const w of tripped.brake.waiting) {
        await approvePurgeRunHandler({ runKey: w.runKey, decision: "APPROVE", note: "bench: the whole tree is meant to go" }, caller);
      }
    }
    const stopCpuProfile = await cpuProfile();
    resetCounts();
    const cpu = cpuMark();
    const started = performance.now();
    const phases = phaseHook(started);
    const profile = process.env.BENCH_PROFILE ? profileHook(started) : undefined;
    const hook = (ctx) => {
      phases(ctx);
      if (profile) profile(ctx);
    };
    // Without the profile, the hook names the points it needs: a hook that wants the points before a delete
    // batch's transaction makes the purge read each record ahead of it (runner/env.ts#PurgeHook).
    if (!profile) hook.points = ["afterPlan", "inExecute", "inObjectWindow", "beforeFinalize"];
    const queue = [];
    const enqueue = async (task) => {
      queue.push(task);
    };
    const summary = await runNightlyPurge({ nowMs: now, asOfMs: null, dryRun: false, sweep: false, actor, enqueue, hook });
    let chunks = 0;
    while (queue.length > 0) {
      await runPurgeChunk(queue.shift(), { enqueue, hook });
      chunks++;
    }
    const ms = performance.now() - started;
    const cpuUsed = cpu();
    const split = phases.report(ms);
    await stopCpuProfile(split.phases);
    if (profile) profile.report(ms);
    const ops = { ...counts };
    const rpcs = Object.fromEntries(rpcsByMethod);
    const unit = summary.units[0];
    if (!unit || (unit.outcome !== "DONE" && unit.outcome !== "FANNED_OUT")) throw new Error(`purge unit ended ${JSON.stringify(unit)}`);
    const remaining = await countRemaining();
    if (remaining !== 0) throw new Error(`purge left ${remaining} documents`);
    return { docs: expectedDocs, ms, ops, rpcs, cpu: cpuUsed, phases: split.phases, phaseCpu: split.cpu, brake: summary.brake?.status ?? "OK", chunks };
  },
};

const run = contenders[contender];
if (!run) throw new Error(`unknown contender ${contender}`);
// Every module a contender uses is loaded here, before any clock starts (the purge's own preparation is untimed
// too, and it reports its own span).
await preload[contender]?.();
// The set-up's asynchronous tail finishes before the clock too: the Cloud Logging client that prepareMetrics builds
// sets up gRPC credentials for an API client it never calls a few microtasks later (about 27 ms of CPU, root
// certificates loaded), which otherwise landed inside the audit's timed span.
await new Promise((resolve) => setTimeout(resolve, 200));
// Peak heap, sampled while the contender runs (V8's used heap: what the work keeps, unlike RSS, which also
// holds the collector's slack).
let peakHeap = process.memoryUsage().heapUsed;
const sampler = setInterval(() => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
}, 25);
// The quieter figure: the heap in use right after each major collection (what is alive then), its maximum. The
// sampled peak also holds garbage not yet collected, which a longer run leaves more chances to catch.
let liveHeap = 0;
const majorCollections = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) liveHeap = Math.max(liveHeap, process.memoryUsage().heapUsed);
});
majorCollections.observe({ entryTypes: ["gc"] });
const loadAtStart = loadavg()[0];
resetCounts();
const cpu = cpuMark();
const started = performance.now();
const result = await run();
const cpuUsed = cpu();
clearInterval(sampler);
majorCollections.disconnect();
peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
// A contender with untimed preparation (the purge's brake approval) reports its own timed span, CPU and RPCs.
const ms = result.ms ?? performance.now() - started;
process.stdout.write(
  `${JSON.stringify({ contender, maxRssKb: process.resourceUsage().maxRSS, peakHeapMb: peakHeap / 1048576, liveHeapMb: liveHeap / 1048576, ops: { ...counts }, rpcs: Object.fromEntries(rpcsByMethod), cpu: cpuUsed, phases: { total: Math.round(ms) }, ...result, ms, load: { start: loadAtStart, end: loadavg()[0] } })}\n`,
);
process.exit(0);
