// npm run bench:cold-start: the CPU a function instance spends loading the codebase's entry (functions/lib/index.js)
// before it can serve its first request, and what the libraries it loads only at first use (platform/lazy-libraries.ts,
// platform/processors.ts#publishNotice) would add. Each figure is the median of RUNS fresh processes, user + system
// CPU of the load alone (process.cpuUsage around the require), so the node start-up is not in it. Prints one JSON line.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const RUNS = Number(process.env.COLD_START_RUNS ?? 9);
const ROOT = join(import.meta.dirname, "..");

/** CPU ms of requiring `modules` in a fresh process, in order, each after the ones before it. */
function cpuMs(modules) {
  const script = `const out = []; for (const m of ${JSON.stringify(modules)}) { const c = process.cpuUsage(); require(m); const d = process.cpuUsage(c); out.push((d.user + d.system) / 1000); } process.stdout.write(JSON.stringify(out));`;
  return JSON.parse(execFileSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8" }));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const entry = join(ROOT, "functions", "lib", "index.js");
const later = ["@google-cloud/logging", "@google-cloud/pubsub", "@google-cloud/storage"];
const samples = Array.from({ length: RUNS }, () => cpuMs([entry, ...later]));
const at = (i) => Math.round(median(samples.map((s) => s[i])));
const result = {
  runs: RUNS,
  entry_cpu_ms: at(0),
  // Loaded after the entry, so what they share with it (google-gax, gRPC) is not counted twice.
  later_cpu_ms: Object.fromEntries(later.map((m, i) => [m, at(i + 1)])),
};
result.entry_if_loaded_at_start_cpu_ms = result.entry_cpu_ms + Object.values(result.later_cpu_ms).reduce((a, b) => a + b, 0);
console.log(JSON.stringify(result));
