// npm run bench: our purge and audit against the raw baselines, on the Firestore emulator, in one run.
// Each contender gets a fresh tree of the same shape and runs in its own child process, so peak RSS is
// the RSS of the process doing the work. Ratios matter more than absolute rates: the machine is shared.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ordersFor, treeSize } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const project = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
const host = process.env.FIRESTORE_EMULATOR_HOST;
if (!host) {
  console.error("bench: FIRESTORE_EMULATOR_HOST is not set; run it with `npm run bench` (it starts the emulator).");
  process.exit(2);
}
const sizes = (process.env.BENCH_SIZES ?? "1000,10000,50000").split(",").map(Number);
const FAST = { RETENTION_PURGE_START_OPS_PER_SECOND: "1000000", RETENTION_PURGE_MAX_OPS_PER_SECOND: "1000000" };
// The default-rate purge differs from the fastest one only in its BulkWriter throttle; above this tree size it
// is skipped (unless BENCH_DEFAULT_RATE_MAX_DOCS says otherwise) to keep the run within the time box.
const defaultRateMaxDocs = Number(process.env.BENCH_DEFAULT_RATE_MAX_DOCS ?? 60000);
const contenders = [
  { name: "purge (default rate)", worker: "purge", env: {} },
  { name: "purge (fastest)", worker: "purge", env: FAST },
  // The same run with the heap V8 derives from a 512 MiB function's memory (a quarter of it): V8 otherwise sizes
  // the heap from this 24 GiB machine and collects lazily, so uncapped peak RSS measures GC slack, not what the
  // purge keeps. Same speed under the cap means the work fits a deployed function.
  { name: "purge (fastest, 128 MB heap)", worker: "purge", env: { ...FAST, NODE_OPTIONS: "--max-old-space-size=128" } },
  { name: "recursiveDelete", worker: "recursiveDelete", env: {} },
  { name: "CLI FirestoreDelete", worker: "cli", env: {} },
  { name: "audit", worker: "audit", env: {} },
  { name: "raw stream()", worker: "stream", env: {} },
];

function runChild(script, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, script), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`${script} ${args.join(" ")} exited ${code}`));
      const last = out.trim().split("\n").pop();
      resolve(JSON.parse(last));
    });
  });
}

async function clearDatabase() {
  const res = await fetch(`http://${host}/emulator/v1/projects/${project}/databases/(default)/documents`, { method: "DELETE" });
  if (!res.ok) throw new Error(`clear failed: ${res.status}`);
}

// Evidence appends per second with 64 concurrent TTL-shaped writers: the single head (every append in one
// chain, as the first release had it) against the sharded ledger (the default RETENTION_EVIDENCE_SHARDS), each on
// an empty database, in this run. BENCH_ONLY=evidence-ledger runs this part alone (and leaves BENCHMARKS.md as it is).
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

/** The two runs behind the ratio: rates, writers, how long each ran (in-flight appends finish after the deadline) and p50 latency. */
const ledgerRates = (ev) => ({
  writers: ev.ledger.writers,
  single_head: { appends_per_second: ev.single.appendsPerSecond, seconds: ev.single.seconds, p50_ms: ev.single.latencyMs.p50 },
  ledger: { appends_per_second: ev.ledger.appendsPerSecond, seconds: ev.ledger.seconds, p50_ms: ev.ledger.latencyMs.p50, chains_used: ev.ledger.chainsUsed, shards: ev.ledger.shards },
});

if (process.env.BENCH_ONLY === "evidence-ledger") {
  const ev = await evidenceLedgerBench();
  console.log(JSON.stringify({ evidence_ledger_vs_single_head: ev.ratio, evidence_appends_per_second: ledgerRates(ev) }));
  process.exit(0);
}

const results = [];
for (const size of sizes) {
  const orders = ordersFor(size);
  const docs = treeSize(orders);
  for (const c of contenders) {
    if (c.name === "purge (default rate)" && docs > defaultRateMaxDocs) {
      process.stderr.write(`[bench] ${docs} docs  ${c.name} skipped (BENCH_DEFAULT_RATE_MAX_DOCS=${defaultRateMaxDocs})\n`);
      continue;
    }
    await clearDatabase();
    await runChild("generate.mjs", [String(orders)]);
    const r = await runChild("worker.mjs", [c.worker, String(docs)], c.env);
    const rate = r.docs / (r.ms / 1000);
    results.push({ size: docs, contender: c.name, ms: r.ms, rate, rssMb: r.maxRssKb / 1024, ops: r.ops, docs: r.docs });
    process.stderr.write(`[bench] ${docs} docs  ${c.name.padEnd(22)} ${rate.toFixed(0).padStart(7)} docs/s  ${(r.maxRssKb / 1024).toFixed(0)} MB\n`);
  }
}
// Flat memory: the purge's peak heap on a large subject over a 10k one, under a 256 MB heap cap (the 200k run
// must complete under it).
const heapSizes = (process.env.BENCH_HEAP_SIZES ?? "10000,200000").split(",").map(Number);
const heapRuns = [];
for (const size of heapSizes) {
  const orders = ordersFor(size);
  await clearDatabase();
  await runChild("generate.mjs", [String(orders)]);
  const r = await runChild("worker.mjs", ["purge", String(treeSize(orders))], { ...FAST, NODE_OPTIONS: "--max-old-space-size=256" });
  heapRuns.push({ size: treeSize(orders), peakHeapMb: r.peakHeapMb, rssMb: r.maxRssKb / 1024, rate: r.docs / (r.ms / 1000) });
  process.stderr.write(`[bench] ${treeSize(orders)} docs  purge, 256 MB heap: peak heap ${r.peakHeapMb.toFixed(0)} MB, ${(r.docs / (r.ms / 1000)).toFixed(0)} docs/s\n`);
}
// What a query of fixed result size costs at each tree size (the emulator scans; see queryCost in worker.mjs).
const queryCost = [];
for (const size of sizes) {
  const orders = ordersFor(size);
  await clearDatabase();
  await runChild("generate.mjs", [String(orders)]);
  const r = await runChild("worker.mjs", ["queryCost", String(treeSize(orders))]);
  queryCost.push({ size: treeSize(orders), ...r.queries });
  process.stderr.write(`[bench] ${treeSize(orders)} docs  query cost ${JSON.stringify(r.queries)}\n`);
}
// What one TTL delete costs, counted the same way (orders with 9 messages, and leaf messages).
await clearDatabase();
await runChild("generate.mjs", ["60"]);
const ttl = await runChild("ttl-cost.mjs", ["20"]);
await clearDatabase();
const ledgerBench = await evidenceLedgerBench();

const get = (size, name) => results.find((r) => r.size === size && r.contender === name);
const baselineOf = { "purge (default rate)": "recursiveDelete", "purge (fastest)": "recursiveDelete", "purge (fastest, 128 MB heap)": "recursiveDelete", "CLI FirestoreDelete": "recursiveDelete", audit: "raw stream()" };
const lines = [
  "| docs | contender | docs/s | ratio to baseline | peak RSS (MB) | reads/doc | writes/doc | deletes/doc |",
  "| ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |",
];
for (const r of results) {
  const base = baselineOf[r.contender];
  const ratio = base ? `${(r.rate / get(r.size, base).rate).toFixed(2)}x ${base}` : "baseline";
  // The CLI engine talks REST, outside the Admin SDK, so its operations are not counted here.
  const per = (n) => (r.ops.rpcs === 0 ? "n/a" : (n / r.size).toFixed(2));
  lines.push(`| ${r.size} | ${r.contender} | ${r.rate.toFixed(0)} | ${ratio} | ${r.rssMb.toFixed(0)} | ${per(r.ops.reads)} | ${per(r.ops.writes)} | ${per(r.ops.deletes)} |`);
}
const table = lines.join("\n");
const queryTable = [
  "| docs in the database | name-range probe, ~450 results (ms) | small collection query (ms) | getAll of 450 (ms) |",
  "| ---: | ---: | ---: | ---: |",
  ...queryCost.map((q) => `| ${q.size} | ${q.rangeProbe450} | ${q.smallCollection} | ${q.getAll450} |`),
].join("\n");
const mid = sizes.includes(10000) ? treeSize(ordersFor(10000)) : results[0].size;
const small = treeSize(ordersFor(Math.min(...sizes)));
const large = treeSize(ordersFor(Math.max(...sizes)));
const ratio = (a, b, size = mid) => Number((get(size, a).rate / get(size, b).rate).toFixed(3));
const summary = {
  at_docs: mid,
  purge_vs_recursive_delete: ratio("purge (fastest)", "recursiveDelete"),
  purge_vs_cli: ratio("purge (fastest)", "CLI FirestoreDelete"),
  purge_vs_cli_50k: ratio("purge (fastest)", "CLI FirestoreDelete", large),
  purge_default_vs_recursive_delete: ratio("purge (default rate)", "recursiveDelete"),
  audit_vs_stream: ratio("audit", "raw stream()"),
  rss_50k_over_1k: Number((get(large, "purge (fastest)").rssMb / get(small, "purge (fastest)").rssMb).toFixed(3)),
  rss_50k_over_1k_heap_128: Number((get(large, "purge (fastest, 128 MB heap)").rssMb / get(small, "purge (fastest, 128 MB heap)").rssMb).toFixed(3)),
  purge_heap_128_vs_uncapped: ratio("purge (fastest, 128 MB heap)", "purge (fastest)"),
  purge_ops_per_doc: (() => {
    const r = get(mid, "purge (fastest)");
    return { reads: Number((r.ops.reads / r.size).toFixed(2)), writes: Number((r.ops.writes / r.size).toFixed(2)), deletes: Number((r.ops.deletes / r.size).toFixed(2)) };
  })(),
  ttl_ops_per_delete: ttl,
  evidence_ledger_vs_single_head: ledgerBench.ratio,
  evidence_appends_per_second: ledgerRates(ledgerBench),
  heap_200k_over_10k: Number((heapRuns[heapRuns.length - 1].peakHeapMb / heapRuns[0].peakHeapMb).toFixed(3)),
  heap_runs: heapRuns.map((h) => ({ docs: h.size, peakHeapMb: Number(h.peakHeapMb.toFixed(1)), docsPerSecond: Math.round(h.rate) })),
  audit_rss_50k_over_1k: Number((get(large, "audit").rssMb / get(small, "audit").rssMb).toFixed(3)),
  emulator_query_ms: queryCost,
};
console.log(table);
const md = `# Benchmarks

Produced by \`npm run bench\` (${new Date().toISOString().slice(0, 10)}, Firestore emulator, this project's 2-core machine; BENCH_SIZES=${sizes.join(",")}).
Each contender ran in its own process on a fresh tree (tenant, user, orders, 9 messages per order). Ratios are the
numbers to read: the machine is shared and absolute rates move between runs. Operations are counted from the Admin
SDK's RPC traffic in the working process (documents returned by reads, writes and deletes in commits), not estimated.

${table}

Cost of one query of a fixed result size, by how many documents the database holds (median of 7; the shapes the
purge issues per batch):

${queryTable}

Summary (ratios at ${mid} documents; RSS ratio of the purge process between the largest and smallest tree):

\`\`\`json
${JSON.stringify(summary, null, 2)}
\`\`\`
`;
// The hand-written reading of the numbers lives below the marker and survives a re-run.
const MARKER = "<!-- interpretation: written by hand, kept by npm run bench -->";
const mdPath = join(root, "docs", "BENCHMARKS.md");
const kept = existsSync(mdPath) ? readFileSync(mdPath, "utf8").split(MARKER)[1] : undefined;
writeFileSync(mdPath, `${md}\n${MARKER}${kept ?? "\n"}`);
console.log(JSON.stringify(summary));
