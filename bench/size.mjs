// Child of bench/run.mjs, run under a fresh emulator (one per tree size): an untimed warm-up, then the paired rounds
// and the single runs at one size. Writes its runs as JSON to the file named by its second argument.
//
// A round runs every deleting contender once, each on a fresh tree, in the order of the round: forward in even
// rounds, reversed in odd ones (A B C, C B A: ABBA generalised), so no contender always pays for the deleted
// documents of the ones before it (the emulator scans every document it ever held). The readers (audit, raw
// stream) run on the first tree of each round, before its deleter, in the same alternation. Ratios are taken
// within a round, so both sides of a ratio saw the same emulator history and, as nearly as can be, the same load.
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { clearDatabase, runChild } from "./children.mjs";
import { ordersFor, treeSize } from "./lib.mjs";

const host = process.env.FIRESTORE_EMULATOR_HOST;
if (!host) throw new Error("bench/size.mjs runs under the emulator harness (bench/run.mjs starts it)");
const [sizeRaw, outFile] = process.argv.slice(2);
const orders = ordersFor(Number(sizeRaw));
const docs = treeSize(orders);
const pairs = Number(process.env.BENCH_PAIRS ?? 5);
const quick = process.env.BENCH_QUICK === "1";
const FAST = { RETENTION_PURGE_START_OPS_PER_SECOND: "1000000", RETENTION_PURGE_MAX_OPS_PER_SECOND: "1000000" };
const defaultRateMaxDocs = Number(process.env.BENCH_DEFAULT_RATE_MAX_DOCS ?? 60000);
/** A run whose 1-minute load average, at its start, is above the machine's cores ran on a busy machine. */
const LOADED = cpus().length;

export const deleters = [
  { name: "purge (fastest)", worker: "purge", env: FAST },
  { name: "CLI FirestoreDelete", worker: "cli", env: {} },
  { name: "CLI plus probe", worker: "cliProbe", env: {} },
];
const readers = [
  { name: "audit", worker: "audit", env: {} },
  { name: "raw stream()", worker: "stream", env: {} },
];
// Run once per size, after the rounds (their ratios are not the ones the targets are about).
const singles = quick
  ? []
  : [
      ...(docs <= defaultRateMaxDocs ? [{ name: "purge (default rate)", worker: "purge", env: {} }] : []),
      // The heap V8 derives from a 512 MiB function's memory (a quarter of it): uncapped, V8 sizes the heap from
      // this machine and collects lazily, so peak RSS would measure GC slack, not what the purge keeps.
      { name: "purge (fastest, 128 MB heap)", worker: "purge", env: { ...FAST, NODE_OPTIONS: "--max-old-space-size=128" } },
      { name: "recursiveDelete", worker: "recursiveDelete", env: {} },
    ];

async function freshTree(n = orders) {
  await clearDatabase();
  await runChild("generate.mjs", [String(n)]);
}

const runs = [];
async function timed(c, round, slot) {
  const r = await runChild("worker.mjs", [c.worker, String(docs)], c.env);
  const run = {
    size: docs,
    contender: c.name,
    round,
    slot,
    ms: r.ms,
    rate: r.docs / (r.ms / 1000),
    rssMb: r.maxRssKb / 1024,
    peakHeapMb: r.peakHeapMb,
    ops: r.ops,
    rpcs: r.rpcs,
    cpu: r.cpu,
    phases: r.phases,
    phaseCpu: r.phaseCpu ?? null,
    load: r.load,
    loaded: r.load.start > LOADED,
  };
  runs.push(run);
  const cpu = `cpu client ${(r.cpu.clientMs / 1000).toFixed(1)} s, emulator ${r.cpu.emulatorMs === null ? "?" : (r.cpu.emulatorMs / 1000).toFixed(1)} s`;
  process.stderr.write(
    `[bench] ${docs} docs  r${round} ${c.name.padEnd(28)} ${run.rate.toFixed(0).padStart(7)} docs/s  ${(r.ms / 1000).toFixed(2).padStart(6)} s  ${cpu}  load ${r.load.start.toFixed(1)}${run.loaded ? " LOADED" : ""}\n`,
  );
}

// Warm-up, untimed and discarded: a cold JVM makes the first commits many times slower. One small tree per
// deleter, and the readers on the first.
const warmOrders = Math.min(orders, 100);
for (const [k, c] of deleters.entries()) {
  await freshTree(warmOrders);
  if (k === 0) for (const rd of readers) await runChild("worker.mjs", [rd.worker, String(treeSize(warmOrders))], rd.env);
  await runChild("worker.mjs", [c.worker, String(treeSize(warmOrders))], c.env);
}
process.stderr.write(`[bench] ${docs} docs  warm-up done (load ${loadavg()[0].toFixed(1)})\n`);

for (let round = 0; round < pairs; round++) {
  const order = round % 2 === 0 ? deleters : [...deleters].reverse();
  const readOrder = round % 2 === 0 ? readers : [...readers].reverse();
  for (const [slot, c] of order.entries()) {
    await freshTree();
    if (slot === 0) for (const rd of readOrder) await timed(rd, round, -1);
    await timed(c, round, slot);
  }
}
for (const c of singles) {
  await freshTree();
  await timed(c, null, 0);
}
await clearDatabase();
writeFileSync(outFile, JSON.stringify(runs));
process.exit(0);
