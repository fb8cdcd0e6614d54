// Child of bench/run.mjs, under a fresh emulator of its own: the figures that are not contender races. The purge's
// peak heap at two sizes (flat memory), what one query of fixed result size costs as the database grows, what one
// TTL delete costs, and the evidence ledger against a single head. BENCH_ONLY=evidence-ledger: the last alone;
// BENCH_ONLY=heap: the first alone.
import { writeFileSync } from "node:fs";
import { clearDatabase, runChild } from "./children.mjs";
import { ordersFor, treeSize } from "./lib.mjs";

const host = process.env.FIRESTORE_EMULATOR_HOST;
if (!host) throw new Error("bench/extras.mjs runs under the emulator harness (bench/run.mjs starts it)");
const [outFile, sizesRaw] = process.argv.slice(2);
const sizes = sizesRaw.split(",").map(Number);
const FAST = { RETENTION_PURGE_START_OPS_PER_SECOND: "1000000", RETENTION_PURGE_MAX_OPS_PER_SECOND: "1000000" };

// Evidence appends per second with 64 concurrent TTL-shaped writers: the single head (every append in one chain, as
// the first release had it) against the sharded ledger (the default RETENTION_EVIDENCE_SHARDS), each on an empty
// database.
const ledgerSeconds = process.env.BENCH_LEDGER_SECONDS ?? "10";
const ledgerWriters = process.env.BENCH_LEDGER_WRITERS ?? "64";
async function evidenceLedgerBench() {
  const runs = [];
  for (const [label, env] of [
    ["single-head", { RETENTION_EVIDENCE_SHARDS: "1" }],
    ["ledger", { RETENTION_EVIDENCE_SHARDS: "" }],
  ]) {
    await clearDatabase();
    const r = await runChild("evidence-ledger.mjs", [label, ledgerSeconds, ledgerWriters], env);
    if (!r.ledgerVerifies) throw new Error(`evidence bench ${label}: the ledger it wrote does not verify (${r.findings} findings)`);
    runs.push(r);
    process.stderr.write(`[bench] evidence ${label.padEnd(12)} ${String(r.appendsPerSecond).padStart(7)} appends/s  p50 ${r.latencyMs.p50} ms  p95 ${r.latencyMs.p95} ms  ${r.chainsUsed} chains\n`);
  }
  await clearDatabase();
  const [single, ledger] = runs;
  return { single, ledger, ratio: Number((ledger.appendsPerSecond / single.appendsPerSecond).toFixed(2)) };
}

const out = {};
if (process.env.BENCH_ONLY !== "evidence-ledger") {
  // Flat memory: the purge's peak heap on a large subject over a 10k one, under a 256 MB heap cap (the large run
  // must complete under it).
  const heapSizes = (process.env.BENCH_HEAP_SIZES ?? "10000,200000").split(",").map(Number);
  out.heapRuns = [];
  for (const size of heapSizes) {
    const orders = ordersFor(size);
    await clearDatabase();
    await runChild("generate.mjs", [String(orders)]);
    const r = await runChild("worker.mjs", ["purge", String(treeSize(orders))], { ...FAST, NODE_OPTIONS: "--max-old-space-size=256" });
    out.heapRuns.push({ size: treeSize(orders), peakHeapMb: r.peakHeapMb, liveHeapMb: r.liveHeapMb, rssMb: r.maxRssKb / 1024, rate: r.docs / (r.ms / 1000) });
    process.stderr.write(`[bench] ${treeSize(orders)} docs  purge, 256 MB heap: peak heap ${r.peakHeapMb.toFixed(0)} MB (live after a major collection ${r.liveHeapMb.toFixed(0)} MB), ${(r.docs / (r.ms / 1000)).toFixed(0)} docs/s\n`);
  }
}
if (process.env.BENCH_ONLY !== "evidence-ledger" && process.env.BENCH_ONLY !== "heap") {
  // What a query of fixed result size costs at each tree size (the emulator scans; see queryCost in worker.mjs).
  out.queryCost = [];
  for (const size of sizes) {
    const orders = ordersFor(size);
    await clearDatabase();
    await runChild("generate.mjs", [String(orders)]);
    const r = await runChild("worker.mjs", ["queryCost", String(treeSize(orders))]);
    out.queryCost.push({ size: treeSize(orders), ...r.queries });
    process.stderr.write(`[bench] ${treeSize(orders)} docs  query cost ${JSON.stringify(r.queries)}\n`);
  }
  // What one TTL delete costs, counted the same way (orders with 9 messages, and leaf messages).
  await clearDatabase();
  await runChild("generate.mjs", ["60"]);
  out.ttl = await runChild("ttl-cost.mjs", ["20"]);
  await clearDatabase();
}
if (process.env.BENCH_ONLY !== "heap") out.ledger = await evidenceLedgerBench();
writeFileSync(outFile, JSON.stringify(out));
process.exit(0);
