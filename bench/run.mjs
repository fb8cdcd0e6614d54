// npm run bench: our purge and audit against the raw baselines, on the Firestore emulator.
//
// Fairness (docs/BENCHMARKS.md, "How the bench is run"):
// - each tree size gets a fresh emulator (bench/size.mjs under scripts/emulators.mjs), with an untimed warm-up;
// - contenders run in rounds that alternate their order (ABBA), BENCH_PAIRS (5) of them, and each ratio is taken
//   within a round; the median of the paired ratios is the figure, their spread says how far it can be trusted;
// - the 1-minute load average is logged at each run's start, and a run that began above the machine's cores is
//   flagged LOADED;
// - CPU (this process's and the emulator JVM's) is reported beside wall time: it moves less with load;
// - every module a contender uses is loaded before its clock starts.
// Each contender runs in its own child process, so peak RSS is the RSS of the process doing the work.
//
// BENCH_QUICK=1: sizes 1000,3000 (unless BENCH_SIZES), 2 rounds (unless BENCH_PAIRS), no single runs and no extras,
// and BENCHMARKS.md is left alone: for iterating. BENCH_ONLY=evidence-ledger: the evidence ledger part alone;
// BENCH_ONLY=heap: the heap runs alone (BENCH_HEAP_SIZES, default 10000,200000).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ordersFor, treeSize } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const quick = process.env.BENCH_QUICK === "1";
const sizes = (process.env.BENCH_SIZES ?? (quick ? "1000,3000" : "1000,10000,50000")).split(",").map(Number);
const pairs = Number(process.env.BENCH_PAIRS ?? (quick ? 2 : 5));
const work = mkdtempSync(join(tmpdir(), "bench-"));

/** Runs `node bench/<script> ...args` under a fresh emulator (EMULATOR_PORT_OFFSET is passed on). */
function underEmulator(script, args, env = {}) {
  return new Promise((resolve, reject) => {
    const cmd = ["scripts/emulators.mjs", "exec", "--only", "firestore,auth,storage", "--", "node", `bench/${script}`, ...args];
    const child = spawn(process.execPath, cmd, { cwd: root, env: { ...process.env, BENCH_PAIRS: String(pairs), ...env }, stdio: ["ignore", "ignore", "inherit"] });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${script} ${args.join(" ")} exited ${code}`))));
  });
}

const loadAtStart = loadavg()[0];
if (process.env.BENCH_ONLY === "evidence-ledger") {
  const file = join(work, "extras.json");
  await underEmulator("extras.mjs", [file, "1000"]);
  const { ledger } = JSON.parse(readFileSync(file, "utf8"));
  console.log(JSON.stringify({ evidence_ledger_vs_single_head: ledger.ratio, evidence_appends_per_second: ledgerRates(ledger) }));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "heap") {
  const file = join(work, "extras.json");
  await underEmulator("extras.mjs", [file, "1000"]);
  const { heapRuns } = JSON.parse(readFileSync(file, "utf8"));
  console.log(JSON.stringify({ ...heapKeys(heapRuns), load_avg: { at_start: r3(loadAtStart), at_end: r3(loadavg()[0]) } }));
  process.exit(0);
}

const runs = [];
for (const size of sizes) {
  const file = join(work, `size-${size}.json`);
  await underEmulator("size.mjs", [String(size), file]);
  runs.push(...JSON.parse(readFileSync(file, "utf8")));
}
let extras = null;
if (!quick) {
  const file = join(work, "extras.json");
  await underEmulator("extras.mjs", [file, sizes.join(",")]);
  extras = JSON.parse(readFileSync(file, "utf8"));
}
rmSync(work, { recursive: true, force: true });
const loadAtEnd = loadavg()[0];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
function r3(x) {
  return Number.isFinite(x) ? Number(x.toFixed(3)) : null;
}
const of = (size, name) => runs.filter((r) => r.size === size && r.contender === name);
/** The run of a contender whose time is the median of its runs (for RSS, RPCs, phases). */
const typical = (size, name) => {
  const xs = of(size, name).sort((a, b) => a.ms - b.ms);
  return xs[Math.floor((xs.length - 1) / 2)];
};
/** Paired ratios a/b of rates (b.ms / a.ms: the same documents), one per round. */
function paired(size, a, b) {
  const out = [];
  for (let round = 0; round < pairs; round++) {
    const x = of(size, a).find((r) => r.round === round);
    const y = of(size, b).find((r) => r.round === round);
    if (x && y) out.push({ ratio: y.ms / x.ms, cpu: x.cpu.emulatorMs === null || y.cpu.emulatorMs === null ? null : (y.cpu.clientMs + y.cpu.emulatorMs) / (x.cpu.clientMs + x.cpu.emulatorMs), loaded: x.loaded || y.loaded });
  }
  return out;
}
function ratioOf(size, a, b) {
  const ps = paired(size, a, b);
  if (ps.length === 0) return null;
  const xs = ps.map((p) => p.ratio);
  const cpu = ps.map((p) => p.cpu).filter((c) => c !== null);
  const m = median(xs);
  return { median: r3(m), min: r3(Math.min(...xs)), max: r3(Math.max(...xs)), spread: r3((Math.max(...xs) - Math.min(...xs)) / m), cpu: cpu.length ? r3(median(cpu)) : null, pairs: ps.length, loaded: ps.filter((p) => p.loaded).length };
}
/** A contender run once against the median of a paired one: not a paired ratio. */
const singleRatio = (size, a, b) => {
  const x = typical(size, a);
  const y = typical(size, b);
  return x && y ? r3(y.ms / x.ms) : null;
};

const mid = sizes.includes(10000) ? treeSize(ordersFor(10000)) : treeSize(ordersFor(sizes[Math.min(1, sizes.length - 1)]));
const small = treeSize(ordersFor(Math.min(...sizes)));
const large = treeSize(ordersFor(Math.max(...sizes)));
const keys = {
  purge_vs_cli: ratioOf(mid, "purge (fastest)", "CLI FirestoreDelete"),
  // The large-size keys only when a larger size ran (a run of one size leaves them null).
  purge_vs_cli_50k: large > mid ? ratioOf(large, "purge (fastest)", "CLI FirestoreDelete") : null,
  cli_probe_vs_cli: ratioOf(mid, "CLI plus probe", "CLI FirestoreDelete"),
  cli_probe_vs_cli_50k: large > mid ? ratioOf(large, "CLI plus probe", "CLI FirestoreDelete") : null,
  audit_vs_stream: ratioOf(mid, "audit", "raw stream()"),
  audit_vs_stream_50k: large > mid ? ratioOf(large, "audit", "raw stream()") : null,
};
/**
 * How far a purge could get against the CLI on this machine by overlapping its work alone: the CLI's median time over
 * the least CPU a purge can spend, a raw stream's (it must read every document's retention fields) plus the CLI's whole
 * run (it must delete them), spread over every core. An estimate, not a bound: the CLI's run includes its own
 * keys-only discovery, which a purge would not repeat. Null without CPU figures.
 */
function cpuCeiling(size) {
  const cpuOf = (name) => median(of(size, name).map((r) => (r.cpu.emulatorMs === null ? NaN : r.cpu.clientMs + r.cpu.emulatorMs)));
  const cliMs = median(of(size, "CLI FirestoreDelete").map((r) => r.ms));
  const floorMs = (cpuOf("raw stream()") + cpuOf("CLI FirestoreDelete")) / cpus().length;
  return Number.isFinite(floorMs) && floorMs > 0 ? r3(Math.min(1, cliMs / floorMs)) : null;
}
const purgeMid = typical(mid, "purge (fastest)");
const all = runs.map((r) => r.load.start);
const summary = {
  at_docs: mid,
  large_docs: large,
  purge_vs_cli: keys.purge_vs_cli?.median ?? null,
  purge_vs_cli_50k: keys.purge_vs_cli_50k?.median ?? null,
  cli_probe_vs_cli: keys.cli_probe_vs_cli?.median ?? null,
  audit_vs_stream: keys.audit_vs_stream?.median ?? null,
  purge_vs_recursive_delete: singleRatio(mid, "purge (fastest)", "recursiveDelete"),
  purge_default_vs_recursive_delete: singleRatio(mid, "purge (default rate)", "recursiveDelete"),
  cpu_ratios: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, v?.cpu ?? null])),
  purge_vs_cli_cpu_ceiling: cpuCeiling(mid),
  purge_vs_cli_50k_cpu_ceiling: large > mid ? cpuCeiling(large) : null,
  purge_ops_per_doc: purgeMid
    ? { reads: r3(purgeMid.ops.reads / purgeMid.size), writes: r3(purgeMid.ops.writes / purgeMid.size), deletes: r3(purgeMid.ops.deletes / purgeMid.size) }
    : null,
  purge_rpcs_by_method: purgeMid?.rpcs ?? null,
  purge_phases_ms: purgeMid?.phases ?? null,
  // CPU ms by phase (client, emulator) of the same run, and the steps' client CPU per document: the figure that bounds
  // a function's delete rate where Firestore's servers, not this machine, do the emulator's part (docs/SCALE.md).
  purge_phase_cpu_ms: purgeMid?.phaseCpu ?? null,
  purge_steps_client_cpu_us_per_doc: purgeMid?.phaseCpu?.client?.steps == null ? null : Math.round((1000 * purgeMid.phaseCpu.client.steps) / purgeMid.size),
  rss_50k_over_1k: r3(typical(large, "purge (fastest)").rssMb / typical(small, "purge (fastest)").rssMb),
  rss_50k_over_1k_heap_128: quick ? null : r3(typical(large, "purge (fastest, 128 MB heap)").rssMb / typical(small, "purge (fastest, 128 MB heap)").rssMb),
  purge_heap_128_vs_uncapped: singleRatio(mid, "purge (fastest, 128 MB heap)", "purge (fastest)"),
  audit_rss_50k_over_1k: r3(typical(large, "audit").rssMb / typical(small, "audit").rssMb),
  ...(extras ? heapKeys(extras.heapRuns) : { heap_200k_over_10k: null, live_heap_200k_over_10k: null, heap_runs: null }),
  ttl_ops_per_delete: extras?.ttl ?? null,
  evidence_ledger_vs_single_head: extras?.ledger.ratio ?? null,
  evidence_appends_per_second: extras ? ledgerRates(extras.ledger) : null,
  emulator_query_ms: extras?.queryCost ?? null,
  bench_pairs: pairs,
  ratio_spread: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, v ? { min: v.min, max: v.max, relative: v.spread } : null])),
  load_avg: { cores: cpus().length, at_start: r3(loadAtStart), at_end: r3(loadAtEnd), median_at_runs: r3(median(all)), max_at_runs: r3(Math.max(...all)), loaded_runs: runs.filter((r) => r.loaded).length, runs: runs.length },
};

/** The heap runs' keys: the largest run's peak (sampled) and live heap over the smallest's, and each run. */
function heapKeys(heapRuns) {
  const [first, last] = [heapRuns[0], heapRuns[heapRuns.length - 1]];
  return {
    heap_200k_over_10k: r3(last.peakHeapMb / first.peakHeapMb),
    live_heap_200k_over_10k: r3(last.liveHeapMb / first.liveHeapMb),
    heap_runs: heapRuns.map((h) => ({ docs: h.size, peakHeapMb: Number(h.peakHeapMb.toFixed(1)), liveHeapMb: Number(h.liveHeapMb.toFixed(1)), docsPerSecond: Math.round(h.rate) })),
  };
}

/** The two runs behind the ledger ratio: rates, writers, how long each ran and p50 latency. */
function ledgerRates(ev) {
  return {
    writers: ev.ledger.writers,
    single_head: { appends_per_second: ev.single.appendsPerSecond, seconds: ev.single.seconds, p50_ms: ev.single.latencyMs.p50 },
    ledger: { appends_per_second: ev.ledger.appendsPerSecond, seconds: ev.ledger.seconds, p50_ms: ev.ledger.latencyMs.p50, chains_used: ev.ledger.chainsUsed, shards: ev.ledger.shards },
  };
}

const names = [...new Set(runs.map((r) => r.contender))];
const lines = [
  "| docs | contender | runs | docs/s (median) | s (median) | CPU client / emulator (s) | peak RSS (MB) | reads/doc | writes/doc | deletes/doc | loaded runs |",
  "| ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
];
for (const size of [...new Set(runs.map((r) => r.size))]) {
  for (const name of names) {
    const xs = of(size, name);
    if (xs.length === 0) continue;
    const t = typical(size, name);
    const cpu = `${(median(xs.map((x) => x.cpu.clientMs)) / 1000).toFixed(1)} / ${xs.some((x) => x.cpu.emulatorMs === null) ? "?" : (median(xs.map((x) => x.cpu.emulatorMs)) / 1000).toFixed(1)}`;
    // The CLI engine talks REST, outside the Admin SDK, so its operations are not counted here.
    const per = (n) => (t.ops.rpcs === 0 ? "n/a" : (n / size).toFixed(2));
    lines.push(
      `| ${size} | ${name} | ${xs.length} | ${median(xs.map((x) => x.rate)).toFixed(0)} | ${(median(xs.map((x) => x.ms)) / 1000).toFixed(2)} | ${cpu} | ${t.rssMb.toFixed(0)} | ${per(t.ops.reads)} | ${per(t.ops.writes)} | ${per(t.ops.deletes)} | ${xs.filter((x) => x.loaded).length} |`,
    );
  }
}
const table = lines.join("\n");
const ratioTable = [
  "| ratio | docs | median | min | max | relative spread | CPU ratio (median) | pairs | loaded pairs |",
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ...Object.entries(keys)
    .filter(([, v]) => v)
    .map(([k, v]) => `| ${k} | ${k.endsWith("_50k") ? large : mid} | ${v.median} | ${v.min} | ${v.max} | ${v.spread} | ${v.cpu ?? "?"} | ${v.pairs} | ${v.loaded} |`),
].join("\n");
console.log(table);
console.log(ratioTable);
if (!quick) {
  const queryTable = [
    "| docs in the database | name-range probe, ~450 results (ms) | small collection query (ms) | getAll of 450 (ms) |",
    "| ---: | ---: | ---: | ---: |",
    ...extras.queryCost.map((q) => `| ${q.size} | ${q.rangeProbe450} | ${q.smallCollection} | ${q.getAll450} |`),
  ].join("\n");
  const md = `# Benchmarks

Produced by \`npm run bench\` (${new Date().toISOString().slice(0, 10)}, Firestore emulator, this project's 2-core machine; BENCH_SIZES=${sizes.join(",")},
BENCH_PAIRS=${pairs}; load average ${summary.load_avg.at_start} at the start, ${summary.load_avg.median_at_runs} median over the runs,
${summary.load_avg.loaded_runs} of ${summary.load_avg.runs} runs began above ${summary.load_avg.cores}, the cores, and are counted as loaded).
Each size had a fresh emulator and an untimed warm-up; each contender ran in its own process on a fresh tree (tenant,
user, orders, 9 messages per order), in rounds of alternating order; the ratios are the medians of the ratios paired
within a round. Operations are counted from the Admin SDK's RPC traffic in the working process (documents returned by
reads, writes and deletes in commits), not estimated. CPU is the working process's and the emulator JVM's, over the
timed span. \`purge_vs_cli_cpu_ceiling\` is the CLI's time over the CPU of a raw stream plus the CLI's run, spread over
the cores: about the best ratio a purge could reach on this machine by overlapping its work alone
(bench/run.mjs#cpuCeiling).

${ratioTable}

${table}

Cost of one query of a fixed result size, by how many documents the database holds (median of 7; the shapes the
purge issues per batch):

${queryTable}

Summary (ratios at ${mid} documents, \`_50k\` at ${large}):

\`\`\`json
${JSON.stringify(summary, null, 2)}
\`\`\`
`;
  // The hand-written reading of the numbers lives below the marker and survives a re-run.
  const MARKER = "<!-- interpretation: written by hand, kept by npm run bench -->";
  const mdPath = join(root, "docs", "BENCHMARKS.md");
  const kept = existsSync(mdPath) ? readFileSync(mdPath, "utf8").split(MARKER)[1] : undefined;
  writeFileSync(mdPath, `${md}\n${MARKER}${kept ?? "\n"}`);
}
console.log(JSON.stringify(summary));
